package pricing

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// candidate is a discount that passed its own checks (window, minimum,
// limits) and now competes under the combination rule.
type candidate struct {
	d       *Discount
	codeIdx int    // index in discounts.codes; -1 for automatic discounts
	code    string // as the agent sent it
	// standalone is what it would take applied alone to the undiscounted
	// checkout; it breaks priority ties between non-combinable discounts.
	standalone int64
}

// applyDiscounts validates the submitted codes, adds the eligible
// automatic discounts, resolves combinations and applies the merchandise
// discounts to the lines. It returns the applied discounts in application
// order and the indexes of the free shipping ones, whose amounts are known
// only once fulfillment is priced.
func (q *quote) applyDiscounts() ([]bcp.AppliedDiscount, []int, error) {
	cands, warnings := q.discountCandidates()

	// Rank: lower priority number first, then the larger standalone
	// amount, then automatic before codes, then submission order, then id.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(a.d.Priority, b.d.Priority),
			cmp.Compare(b.standalone, a.standalone),
			cmp.Compare(a.codeIdx, b.codeIdx),
			strings.Compare(a.d.ID, b.d.ID),
		)
	})
	// Combination: walking in rank order, a discount joins only if it and
	// everything already accepted are combinable, so a non-combinable
	// discount applies alone — and only when it ranks first.
	var accepted []candidate
	exclusive := false
	for _, c := range cands {
		if len(accepted) > 0 && (exclusive || !c.d.Combinable) {
			if c.codeIdx >= 0 {
				warnings[c.codeIdx] = bcp.Warning(bcp.CodeDiscountCodeCombination, codePath(c.codeIdx),
					fmt.Sprintf("O cupom %s não pode ser combinado com %s.", c.code, describeAccepted(accepted)))
			}
			continue
		}
		accepted = append(accepted, c)
		exclusive = exclusive || !c.d.Combinable
	}

	// Apply in rank order. Each merchandise discount works on what the
	// lines still cost after the earlier ones and is allocated in
	// proportion to that, so no line ever goes below zero.
	remaining := slices.Clone(q.lineSub)
	left := q.subtotal
	var applied []bcp.AppliedDiscount
	var freeShipping []int
	for _, c := range accepted {
		a := bcp.AppliedDiscount{Title: c.d.Title, Automatic: c.d.Automatic, Method: bcp.AllocationAcross, Priority: int(c.d.Priority)}
		if c.codeIdx >= 0 {
			a.Code = c.code
		}
		if c.d.Automatic {
			q.automatic = append(q.automatic, c.d.ID)
		}
		var amount int64
		switch c.d.Kind {
		case KindPercent:
			amount = percentOf(left, c.d.Value)
		case KindFixed:
			amount = min(c.d.Value, left)
		case KindFreeShipping:
			freeShipping = append(freeShipping, len(applied))
			applied = append(applied, a)
			continue
		}
		a.Amount = amount
		for i, share := range allocate(amount, remaining) {
			if share == 0 {
				continue
			}
			a.Allocations = append(a.Allocations, bcp.Allocation{Path: "$.line_items[" + strconv.Itoa(i) + "]", Amount: share})
			remaining[i] -= share
			q.lineDisc[i] += share
		}
		left -= amount
		q.itemsDisc += amount
		applied = append(applied, a)
	}
	for i := range q.codes() {
		if m, ok := warnings[i]; ok {
			q.dMsgs = append(q.dMsgs, m)
		}
	}
	return applied, freeShipping, nil
}

func (q *quote) codes() []string {
	if q.in.Discounts == nil {
		return nil
	}
	return q.in.Discounts.Codes
}

func codePath(i int) string { return "$.discounts.codes[" + strconv.Itoa(i) + "]" }

func describeAccepted(cs []candidate) string {
	for _, c := range cs {
		if !c.d.Automatic {
			return "o cupom " + c.code
		}
	}
	return "o desconto " + cs[0].d.Title
}

// discountCandidates checks each submitted code and each automatic
// discount on its own. Rejected codes get one warning each, keyed by code
// index; rejected automatic discounts just do not apply.
func (q *quote) discountCandidates() ([]candidate, map[int]bcp.Message) {
	warnings := map[int]bcp.Message{}
	byCode := map[string]*Discount{}
	var cands []candidate
	for i := range q.cfg.Discounts {
		d := &q.cfg.Discounts[i]
		if !d.Active {
			continue
		}
		if d.Automatic {
			if q.eligible(d) == "" {
				cands = append(cands, candidate{d: d, codeIdx: -1, standalone: q.standalone(d)})
			}
			continue
		}
		byCode[strings.ToLower(d.Code)] = d
	}
	first := map[string]int{}
	for i, code := range q.codes() {
		key := strings.ToLower(strings.TrimSpace(code))
		warn := func(c, format string, args ...any) {
			warnings[i] = bcp.Warning(c, codePath(i), fmt.Sprintf(format, args...))
		}
		if j, dup := first[key]; dup {
			warn(bcp.CodeDiscountCodeAlreadyApplied, "O cupom %s já foi informado (discounts.codes[%d]).", code, j)
			continue
		}
		first[key] = i
		d := byCode[key]
		if d == nil {
			warn(bcp.CodeDiscountCodeInvalid, "O cupom %s não existe.", code)
			continue
		}
		switch q.eligible(d) {
		case "":
			cands = append(cands, candidate{d: d, codeIdx: i, code: code, standalone: q.standalone(d)})
		case "not_started":
			warn(bcp.CodeDiscountCodeExpired, "O cupom %s ainda não está válido.", code)
		case "expired":
			warn(bcp.CodeDiscountCodeExpired, "O cupom %s expirou.", code)
		case "min_subtotal":
			warn(bcp.CodeDiscountCodeUserIneligible, "O cupom %s vale para compras a partir de %s.", code, money.FormatBRL(d.MinSubtotal))
		case "usage_limit":
			warn(bcp.CodeDiscountCodeUserIneligible, "O cupom %s atingiu o limite de usos.", code)
		case "no_buyer":
			warn(bcp.CodeDiscountCodeUserNotLoggedIn, "Informe o e-mail do comprador para usar o cupom %s.", code)
		case "buyer_limit":
			warn(bcp.CodeDiscountCodeUserIneligible, "O comprador já usou o cupom %s o número máximo de vezes.", code)
		}
	}
	return cands, warnings
}

// eligible returns why d cannot apply to this checkout, or "".
func (q *quote) eligible(d *Discount) string {
	at := q.req.At
	switch {
	case d.StartsAt != nil && at.Before(*d.StartsAt):
		return "not_started"
	case d.EndsAt != nil && !at.Before(*d.EndsAt):
		return "expired"
	case q.subtotal < d.MinSubtotal:
		return "min_subtotal"
	case d.UsageLimit > 0 && d.TimesUsed >= d.UsageLimit:
		return "usage_limit"
	case d.UsageLimitPerBuyer > 0 && q.req.BuyerEmail() == "":
		return "no_buyer"
	case d.UsageLimitPerBuyer > 0 && d.BuyerUsed >= d.UsageLimitPerBuyer:
		return "buyer_limit"
	}
	return ""
}

// standalone is what d would take applied alone to the checkout.
func (q *quote) standalone(d *Discount) int64 {
	switch d.Kind {
	case KindPercent:
		return percentOf(q.subtotal, d.Value)
	case KindFixed:
		return min(d.Value, q.subtotal)
	case KindFreeShipping:
		if q.ful != nil {
			return q.ful.shippingAt(q.subtotal)
		}
	}
	return 0
}
