package pricing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/wire"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Request is one quote: the checkout to price, its previous priced state
// (nil on create), which extensions were negotiated and the evaluation
// time of discount windows.
type Request struct {
	Checkout    *bcp.Checkout
	Previous    *bcp.Checkout
	Fulfillment bool
	Discounts   bool
	At          time.Time
}

// NewRequest is the engine's request for a typed QuoteRequest, evaluated
// at at.
func NewRequest(m *pricingv1.QuoteRequest, at time.Time) Request {
	c, prev := wire.QuoteInput(m)
	return Request{
		Checkout: c, Previous: prev, At: at,
		Fulfillment: slices.Contains(m.GetCapabilities(), bcpnames.Fulfillment),
		Discounts:   slices.Contains(m.GetCapabilities(), bcpnames.Discount),
	}
}

// BuyerEmail is the lower-cased buyer e-mail that per-buyer limits count
// against ("" when none).
func (r Request) BuyerEmail() string {
	if r.Checkout == nil || r.Checkout.Buyer == nil {
		return ""
	}
	return normalizeEmail(r.Checkout.Buyer.Email)
}

// Codes returns the submitted discount codes, lower-cased, for loading the
// discounts they name.
func (r Request) Codes() []string {
	if !r.Discounts || r.Checkout == nil || r.Checkout.Discounts == nil {
		return nil
	}
	out := make([]string, 0, len(r.Checkout.Discounts.Codes))
	for _, c := range r.Checkout.Discounts.Codes {
		out = append(out, strings.ToLower(strings.TrimSpace(c)))
	}
	return out
}

// Display texts of checkout totals.
const (
	displaySubtotal      = "Subtotal"
	displayItemsDiscount = "Descontos nos itens"
	displayFulfillment   = "Frete"
	displayTotal         = "Total"
)

// quote is the state of one pricing run.
type quote struct {
	req Request
	cfg Config
	in  *bcp.Checkout
	out *bcp.Checkout

	lineSub   []int64 // line subtotals
	lineDisc  []int64 // merchandise discount allocated to each line (positive)
	lineIndex map[string]int
	subtotal  int64 // sum of line subtotals
	itemsDisc int64 // sum of lineDisc

	ful   *fulfillmentPlan
	fMsgs []bcp.Message // fulfillment messages, in method order
	dMsgs []bcp.Message // discount messages, in code order

	automatic []string // ids of the automatic discounts applied
}

// Price prices a checkout: line totals, fulfillment methods with their
// options and selections, discounts with allocations, checkout totals and
// messages. It reads only req and cfg, never mutates req.Checkout, and
// returns the same input priced the same way every time.
func Price(req Request, cfg Config) (*bcp.Checkout, error) {
	out, _, err := priceWithAutomatic(req, cfg)
	return out, err
}

// priceWithAutomatic is Price that also says which automatic discounts
// applied.
func priceWithAutomatic(req Request, cfg Config) (*bcp.Checkout, []string, error) {
	if req.Checkout == nil {
		return nil, nil, apperr.Invalid("checkout_json", "checkout_required", "checkout_json is required")
	}
	if req.At.IsZero() {
		req.At = time.Now()
	}
	in := req.Checkout
	if in.Currency != "" && in.Currency != "BRL" {
		return nil, nil, apperr.Invalid("checkout_json.currency", "unsupported_currency", "only BRL is supported")
	}
	out := *in
	q := &quote{req: req, cfg: cfg, in: in, out: &out}
	if err := q.lines(); err != nil {
		return nil, nil, err
	}
	out.Fulfillment, out.Discounts = nil, nil
	if req.Fulfillment {
		var err error
		if q.ful, err = q.planFulfillment(); err != nil {
			return nil, nil, err
		}
	}
	var freeShipping []int // indexes into applied of free shipping discounts
	var applied []bcp.AppliedDiscount
	if req.Discounts {
		var err error
		if applied, freeShipping, err = q.applyDiscounts(); err != nil {
			return nil, nil, err
		}
	}
	// Free shipping thresholds look at what the buyer pays for the goods.
	merch := q.subtotal - q.itemsDisc
	var fulTotal int64
	var selected bool
	if q.ful != nil {
		var err error
		if fulTotal, selected, err = q.ful.price(merch); err != nil {
			return nil, nil, err
		}
		for _, i := range freeShipping {
			applied[i].Amount, applied[i].Allocations = q.ful.takeShipping()
		}
		for _, a := range freeShipping {
			fulTotal -= applied[a].Amount
		}
		out.Fulfillment = q.ful.result()
		for _, m := range q.ful.methods {
			q.fMsgs = append(q.fMsgs, m.msgs...)
		}
	}
	if req.Discounts && (len(applied) > 0 || (in.Discounts != nil && len(in.Discounts.Codes) > 0)) {
		out.Discounts = &bcp.Discounts{Applied: applied}
		if in.Discounts != nil {
			// Echoed exactly as sent: rejected codes stay, with a warning.
			out.Discounts.Codes = slices.Clone(in.Discounts.Codes)
		}
	}
	if err := q.totals(fulTotal, selected); err != nil {
		return nil, nil, err
	}
	out.Messages = make([]bcp.Message, 0, len(in.Messages)+len(q.fMsgs)+len(q.dMsgs))
	out.Messages = append(append(append(out.Messages, in.Messages...), q.fMsgs...), q.dMsgs...)
	if len(out.Messages) == 0 {
		out.Messages = nil
	}
	if err := verify(&out); err != nil {
		// A bug, never the caller's fault: refuse to return wrong money.
		return nil, nil, fmt.Errorf("pricing: inconsistent quote: %w", err)
	}
	return &out, q.automatic, nil
}

// lines checks the line items and computes their subtotals.
func (q *quote) lines() error {
	n := len(q.in.LineItems)
	q.out.LineItems = make([]bcp.LineItem, n)
	q.lineSub, q.lineDisc = make([]int64, n), make([]int64, n)
	q.lineIndex = make(map[string]int, n)
	for i, l := range q.in.LineItems {
		f := "checkout_json.line_items[" + strconv.Itoa(i) + "]"
		if l.ID == "" {
			return apperr.Invalid(f+".id", "line_id_required", "line items must have ids before pricing")
		}
		if _, dup := q.lineIndex[l.ID]; dup {
			return apperr.Invalid(f+".id", "duplicate_line_id", "line item id %q appears twice", l.ID)
		}
		q.lineIndex[l.ID] = i
		if l.Quantity < 1 || l.Quantity > MaxAmount {
			return apperr.Invalid(f+".quantity", "invalid_quantity", "quantity must be between 1 and %d", MaxAmount)
		}
		if l.Item.Price < 0 || l.Item.Price > MaxAmount {
			return apperr.Invalid(f+".item.price", "invalid_price", "price must be between 0 and %d centavos", MaxAmount)
		}
		sub, ok := mulAmount(l.Item.Price, l.Quantity)
		if !ok {
			return apperr.Invalid(f, "amount_out_of_range", "price × quantity exceeds %d centavos", MaxAmount)
		}
		if q.subtotal, ok = addAmounts(q.subtotal, sub); !ok {
			return apperr.Invalid("checkout_json.line_items", "amount_out_of_range", "the subtotal exceeds %d centavos", MaxAmount)
		}
		q.lineSub[i] = sub
		q.out.LineItems[i] = l
	}
	return nil
}

// totals fills line and checkout totals: subtotal, items_discount (when
// any), fulfillment (when an option is selected), total.
func (q *quote) totals(fulfillment int64, selected bool) error {
	for i := range q.out.LineItems {
		sub, disc := q.lineSub[i], q.lineDisc[i]
		t := make([]bcp.Total, 0, 3)
		t = append(t, bcp.Total{Type: bcp.TotalSubtotal, Amount: sub})
		if disc > 0 {
			t = append(t, bcp.Total{Type: bcp.TotalItemsDiscount, Amount: -disc})
		}
		t = append(t, bcp.Total{Type: bcp.TotalTotal, Amount: sub - disc})
		q.out.LineItems[i].Totals = t
	}
	t := make([]bcp.Total, 0, 4)
	t = append(t, bcp.Total{Type: bcp.TotalSubtotal, DisplayText: displaySubtotal, Amount: q.subtotal})
	if q.itemsDisc > 0 {
		t = append(t, bcp.Total{Type: bcp.TotalItemsDiscount, DisplayText: displayItemsDiscount, Amount: -q.itemsDisc})
	}
	total := q.subtotal - q.itemsDisc
	if selected {
		t = append(t, bcp.Total{Type: bcp.TotalFulfillment, DisplayText: displayFulfillment, Amount: fulfillment})
		var ok bool
		if total, ok = addAmounts(total, fulfillment); !ok {
			return apperr.Invalid("checkout_json", "amount_out_of_range", "the checkout total exceeds %d centavos", MaxAmount)
		}
	}
	q.out.Totals = append(t, bcp.Total{Type: bcp.TotalTotal, DisplayText: displayTotal, Amount: total})
	return nil
}

// verify re-checks the totals invariants on the finished quote (UCP §4.4):
// one subtotal and one total, signs by type, sum(non-total) == total, line
// totals adding up, allocations summing to their discount.
func verify(c *bcp.Checkout) error {
	check := func(line int, ts []bcp.Total) (int64, error) {
		// Named only when wrong: every quote checks every line.
		where := func() string {
			if line < 0 {
				return "checkout"
			}
			return "line " + strconv.Itoa(line)
		}
		var subs, tots int
		var sum, total int64
		for _, t := range ts {
			switch t.Type {
			case bcp.TotalSubtotal:
				subs++
			case bcp.TotalTotal:
				tots++
				total = t.Amount
				continue
			}
			neg := t.Type == bcp.TotalDiscount || t.Type == bcp.TotalItemsDiscount
			if (neg && t.Amount >= 0) || (!neg && t.Amount < 0) {
				return 0, fmt.Errorf("%s: %s has the wrong sign (%d)", where(), t.Type, t.Amount)
			}
			sum += t.Amount
		}
		if subs != 1 || tots != 1 {
			return 0, fmt.Errorf("%s: %d subtotals and %d totals", where(), subs, tots)
		}
		if sum != total || total < 0 || total > MaxAmount {
			return 0, fmt.Errorf("%s: entries sum to %d, total is %d", where(), sum, total)
		}
		return total, nil
	}
	for i, l := range c.LineItems {
		if _, err := check(i, l.Totals); err != nil {
			return err
		}
	}
	if _, err := check(-1, c.Totals); err != nil {
		return err
	}
	if c.Discounts != nil {
		for _, a := range c.Discounts.Applied {
			var sum int64
			for _, al := range a.Allocations {
				sum += al.Amount
			}
			if a.Amount < 0 || sum != a.Amount {
				return fmt.Errorf("discount %q: allocations sum to %d, amount is %d", a.Title, sum, a.Amount)
			}
		}
	}
	return nil
}
