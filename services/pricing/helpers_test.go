package pricing

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/internal/wire"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// The engine tests need no database; the RPC tests in this package do,
// and one PostgreSQL serves the whole binary.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

var now = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func line(id string, price, qty int64) bcp.LineItem {
	return bcp.LineItem{ID: id, Item: bcp.Item{ID: "var_" + id, Title: "Item " + id, Price: price}, Quantity: qty}
}

func lines(prices ...int64) []bcp.LineItem {
	out := make([]bcp.LineItem, len(prices))
	for i, p := range prices {
		out[i] = line("li_"+strconv.Itoa(i+1), p, 1)
	}
	return out
}

// all negotiates both pricing extensions.
func all(c *bcp.Checkout) Request {
	return Request{Checkout: c, Fulfillment: true, Discounts: true, At: now}
}

func withCodes(c *bcp.Checkout, codes ...string) *bcp.Checkout {
	c.Discounts = &bcp.Discounts{Codes: codes}
	return c
}

func ptr(s string) *string { return &s }

func sp() bcp.Destination {
	return bcp.Destination{PostalAddress: bcp.PostalAddress{StreetAddress: "Avenida Paulista, 1000", AddressLocality: "São Paulo",
		AddressRegion: "SP", PostalCode: "01310-100", AddressCountry: "BR"}}
}

func rj() bcp.Destination {
	return bcp.Destination{PostalAddress: bcp.PostalAddress{StreetAddress: "Avenida Rio Branco, 1", AddressLocality: "Rio de Janeiro",
		AddressRegion: "RJ", PostalCode: "20090-003", AddressCountry: "BR"}}
}

func shipTo(dests ...bcp.Destination) *bcp.Fulfillment {
	return &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{Type: bcp.MethodShipping, Destinations: dests}}}
}

// shipSelect ships to one destination and selects an option.
func shipSelect(d bcp.Destination, option string) *bcp.Fulfillment {
	f := shipTo(d)
	f.Methods[0].Groups = []bcp.FulfillmentGroup{{SelectedOptionID: ptr(option)}}
	return f
}

var (
	pac   = ShippingRate{ID: "shr_pac", Title: "PAC", Carrier: "Correios", Price: 1500, MinDays: 5, MaxDays: 8, Active: true, Position: 1}
	sedex = ShippingRate{ID: "shr_sedex", Title: "SEDEX", Carrier: "Correios", Price: 2500, MinDays: 1, MaxDays: 2, Active: true, Position: 0}
)

func percent(code string, bp int64, priority int32, combinable bool) Discount {
	return Discount{ID: "dsc_" + strings.ToLower(code), Code: code, Title: "Cupom " + code, Kind: KindPercent, Value: bp,
		Priority: priority, Combinable: combinable, Active: true}
}

func fixed(code string, v int64, priority int32, combinable bool) Discount {
	return Discount{ID: "dsc_" + strings.ToLower(code), Code: code, Title: "Cupom " + code, Kind: KindFixed, Value: v,
		Priority: priority, Combinable: combinable, Active: true}
}

// with returns d changed by f.
func with(d Discount, f func(*Discount)) Discount {
	f(&d)
	return d
}

// price runs the engine and checks every invariant on the result.
func price(t *testing.T, req Request, cfg Config) *bcp.Checkout {
	t.Helper()
	out, err := Price(req, cfg)
	if err != nil {
		t.Fatalf("Price: %v", err)
	}
	checkInvariants(t, req, out)
	viaJSON, err := jsonPrice(req, cfg)
	if err != nil {
		t.Fatalf("Price of the checkout as JSON: %v", err)
	}
	typed, err := typedPrice(req, cfg)
	if err != nil {
		t.Fatalf("typed Quote: %v", err)
	}
	a, _ := json.Marshal(viaJSON)
	b, _ := json.Marshal(typed)
	if string(a) != string(b) {
		t.Fatalf("the typed Quote contract prices differently from the checkout as JSON:\n json  %s\n typed %s", a, b)
	}
	return out
}

// jsonPrice prices req as the Quote of a whole checkout as JSON did
// (before the typed contract): the checkout and its previous state through
// JSON, priced, and the priced checkout through JSON again.
func jsonPrice(req Request, cfg Config) (*bcp.Checkout, error) {
	through := func(c *bcp.Checkout) *bcp.Checkout {
		if c == nil {
			return nil
		}
		b, err := json.Marshal(c)
		if err != nil {
			panic(err)
		}
		out := &bcp.Checkout{}
		if err := json.Unmarshal(b, out); err != nil {
			panic(err)
		}
		return out
	}
	req.Checkout, req.Previous = through(req.Checkout), through(req.Previous)
	out, err := Price(req, cfg)
	if err != nil {
		return nil, err
	}
	return through(out), nil
}

// typedPrice prices req the way the checkout service and this one do over
// the typed Quote contract: the checkout's members as a QuoteRequest,
// through protobuf bytes, priced, answered as a QuoteResponse, through
// protobuf bytes again, and applied to a copy of the checkout.
func typedPrice(req Request, cfg Config) (*bcp.Checkout, error) {
	var caps []string
	if req.Fulfillment {
		caps = append(caps, bcpnames.Fulfillment)
	}
	if req.Discounts {
		caps = append(caps, bcpnames.Discount)
	}
	m := &pricingv1.QuoteRequest{}
	if err := viaWire(wire.QuoteRequest(req.Checkout, req.Previous, caps, timestamppb.New(req.At)), m); err != nil {
		return nil, err
	}
	r := NewRequest(m, req.At)
	priced, automatic, err := priceWithAutomatic(r, cfg)
	if err != nil {
		return nil, err
	}
	resp := &pricingv1.QuoteResponse{}
	if err := viaWire(wire.QuoteResponse(r.Checkout, priced, automatic), resp); err != nil {
		return nil, err
	}
	c := *req.Checkout
	c.LineItems, c.Messages = slices.Clone(c.LineItems), slices.Clone(c.Messages)
	wire.ApplyQuote(&c, resp)
	return &c, nil
}

func viaWire(m, into proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, into)
}

// amounts returns the checkout totals as "type=amount" in order.
func amounts(ts []bcp.Total) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s=%d", t.Type, t.Amount)
	}
	return strings.Join(parts, " ")
}

func wantTotals(t *testing.T, what string, ts []bcp.Total, want string) {
	t.Helper()
	if got := amounts(ts); got != want {
		t.Errorf("%s totals = %s\n want %s", what, got, want)
	}
}

// msgs renders pricing messages as "type code path".
func msgs(ms []bcp.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Type+" "+m.Code+" "+m.Path)
	}
	return out
}

func wantMsgs(t *testing.T, out *bcp.Checkout, want ...string) {
	t.Helper()
	got := msgs(out.Messages)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n got  %q\n want %q", got, want)
	}
}

func appliedString(c *bcp.Checkout) string {
	if c.Discounts == nil {
		return ""
	}
	var parts []string
	for _, a := range c.Discounts.Applied {
		s := fmt.Sprintf("%s:%d", cmpCode(a), a.Amount)
		for _, al := range a.Allocations {
			s += fmt.Sprintf(" %s=%d", al.Path, al.Amount)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func cmpCode(a bcp.AppliedDiscount) string {
	if a.Automatic {
		return "auto(" + a.Title + ")"
	}
	return a.Code
}

var (
	validatorOnce sync.Once
	validator     *bcpschema.Validator
	validatorErr  error
)

var lineAlloc = regexp.MustCompile(`^\$\.line_items\[(\d+)\]$`)
var groupAlloc = regexp.MustCompile(`^\$\.fulfillment\.methods\[(\d+)\]\.groups\[(\d+)\]$`)

// checkInvariants asserts, independently of the engine's own guard, what
// every priced checkout must satisfy (UCP totals rules, allocations,
// fulfillment references) and validates it against the BCP response
// schema of the negotiated capabilities.
func checkInvariants(t *testing.T, req Request, c *bcp.Checkout) {
	t.Helper()
	if len(c.LineItems) != len(req.Checkout.LineItems) {
		t.Fatalf("line count %d, want %d", len(c.LineItems), len(req.Checkout.LineItems))
	}
	checkTotals := func(where string, ts []bcp.Total, wantOrder bool) (map[string]int64, int64) {
		t.Helper()
		by := map[string]int64{}
		counts := map[string]int{}
		var sum, total int64
		rank := map[string]int{bcp.TotalSubtotal: 0, bcp.TotalItemsDiscount: 1, bcp.TotalDiscount: 2, bcp.TotalFulfillment: 3, bcp.TotalTotal: 9}
		last := -1
		for _, x := range ts {
			counts[x.Type]++
			by[x.Type] += x.Amount
			if wantOrder {
				if r, ok := rank[x.Type]; !ok || r <= last {
					t.Errorf("%s: totals out of order: %s", where, amounts(ts))
				} else {
					last = r
				}
			}
			switch x.Type {
			case bcp.TotalTotal:
				total = x.Amount
				continue
			case bcp.TotalDiscount, bcp.TotalItemsDiscount:
				if x.Amount >= 0 {
					t.Errorf("%s: %s = %d, want < 0", where, x.Type, x.Amount)
				}
			default:
				if x.Amount < 0 {
					t.Errorf("%s: %s = %d, want >= 0", where, x.Type, x.Amount)
				}
			}
			sum += x.Amount
		}
		if counts[bcp.TotalSubtotal] != 1 || counts[bcp.TotalTotal] != 1 {
			t.Errorf("%s: %d subtotal(s), %d total(s), want exactly one each: %s", where, counts[bcp.TotalSubtotal], counts[bcp.TotalTotal], amounts(ts))
		}
		if sum != total {
			t.Errorf("%s: sum(non-total) = %d, total = %d", where, sum, total)
		}
		if total < 0 || total > MaxAmount {
			t.Errorf("%s: total %d out of range", where, total)
		}
		return by, total
	}
	var sumLineSub, sumLineDisc int64
	lineAllocs := make([]int64, len(c.LineItems))
	for i, l := range c.LineItems {
		by, total := checkTotals(fmt.Sprintf("line %d", i), l.Totals, true)
		in := req.Checkout.LineItems[i]
		if by[bcp.TotalSubtotal] != in.Item.Price*in.Quantity {
			t.Errorf("line %d subtotal %d, want price×quantity %d", i, by[bcp.TotalSubtotal], in.Item.Price*in.Quantity)
		}
		if by[bcp.TotalSubtotal]+by[bcp.TotalItemsDiscount] != total {
			t.Errorf("line %d: subtotal + items_discount != total", i)
		}
		if len(l.Totals) != 2 && len(l.Totals) != 3 {
			t.Errorf("line %d: unexpected totals %s", i, amounts(l.Totals))
		}
		sumLineSub += by[bcp.TotalSubtotal]
		sumLineDisc += by[bcp.TotalItemsDiscount]
	}
	by, _ := checkTotals("checkout", c.Totals, true)
	if by[bcp.TotalSubtotal] != sumLineSub {
		t.Errorf("checkout subtotal %d != sum of line subtotals %d", by[bcp.TotalSubtotal], sumLineSub)
	}
	if by[bcp.TotalItemsDiscount] != sumLineDisc {
		t.Errorf("checkout items_discount %d != sum of line items_discount %d", by[bcp.TotalItemsDiscount], sumLineDisc)
	}
	if _, ok := by[bcp.TotalDiscount]; ok {
		t.Errorf("unexpected order-level discount total (the model allocates every discount): %s", amounts(c.Totals))
	}

	// Discounts: allocations sum to amounts and explain the line discounts
	// and the free shipping taken from fulfillment.
	var fulDiscount int64
	if c.Discounts != nil {
		if !req.Discounts {
			t.Errorf("discounts present without the discount extension")
		}
		if req.Checkout.Discounts != nil && strings.Join(c.Discounts.Codes, "\x00") != strings.Join(req.Checkout.Discounts.Codes, "\x00") {
			t.Errorf("codes %q, want them echoed as sent %q", c.Discounts.Codes, req.Checkout.Discounts.Codes)
		}
		for _, a := range c.Discounts.Applied {
			var sum int64
			for _, al := range a.Allocations {
				if al.Amount <= 0 {
					t.Errorf("discount %q: allocation %s = %d, want > 0", a.Title, al.Path, al.Amount)
				}
				sum += al.Amount
				if m := lineAlloc.FindStringSubmatch(al.Path); m != nil {
					i, _ := strconv.Atoi(m[1])
					if i >= len(c.LineItems) {
						t.Errorf("allocation to missing line %s", al.Path)
						continue
					}
					lineAllocs[i] += al.Amount
				} else if groupAlloc.MatchString(al.Path) {
					fulDiscount += al.Amount
				} else {
					t.Errorf("allocation path %q targets neither a line nor a fulfillment group", al.Path)
				}
			}
			if sum != a.Amount || a.Amount < 0 {
				t.Errorf("discount %q: allocations sum to %d, amount %d", a.Title, sum, a.Amount)
			}
			if a.Automatic && a.Code != "" {
				t.Errorf("automatic discount %q carries a code", a.Title)
			}
		}
	}
	for i, l := range c.LineItems {
		var disc int64
		for _, x := range l.Totals {
			if x.Type == bcp.TotalItemsDiscount {
				disc = -x.Amount
			}
		}
		if disc != lineAllocs[i] {
			t.Errorf("line %d items_discount %d, allocations to it sum to %d", i, disc, lineAllocs[i])
		}
	}

	// Fulfillment: references resolve, ids are unique, the fulfillment
	// total is the selected options net of free shipping.
	var selectedSum int64
	anySelected := false
	if c.Fulfillment != nil {
		if !req.Fulfillment {
			t.Errorf("fulfillment present without the fulfillment extension")
		}
		ids := map[string]bool{}
		for i, m := range c.Fulfillment.Methods {
			if m.ID == "" || m.Type == "" || ids[m.ID] {
				t.Errorf("method %d: id %q type %q (ids must be set and unique)", i, m.ID, m.Type)
			}
			ids[m.ID] = true
			dests := map[string]bool{}
			for _, d := range m.Destinations {
				if d.ID == "" || dests[d.ID] {
					t.Errorf("method %d: destination id %q missing or repeated", i, d.ID)
				}
				dests[d.ID] = true
			}
			if m.SelectedDestinationID != nil && !dests[*m.SelectedDestinationID] {
				t.Errorf("method %d: selected destination %q is not listed", i, *m.SelectedDestinationID)
			}
			if len(m.Groups) > 1 {
				t.Errorf("method %d: %d groups, want one per method", i, len(m.Groups))
			}
			for _, g := range m.Groups {
				if g.ID == "" || ids[g.ID] {
					t.Errorf("method %d: group id %q missing or repeated", i, g.ID)
				}
				ids[g.ID] = true
				var prev int64 = -1
				for _, o := range g.Options {
					if len(o.Totals) != 1 || o.Totals[0].Type != bcp.TotalTotal || o.Totals[0].Amount < 0 {
						t.Errorf("option %q totals %s, want one non-negative total", o.ID, amounts(o.Totals))
						continue
					}
					if o.Totals[0].Amount < prev {
						t.Errorf("method %d: options not cheapest first", i)
					}
					prev = o.Totals[0].Amount
					if o.Description != "" && (strings.Contains(o.Description, o.Title) || strings.Contains(o.Description, "R$")) {
						t.Errorf("option %q description %q repeats the title or a price", o.ID, o.Description)
					}
				}
				if g.SelectedOptionID != nil {
					found := false
					for _, o := range g.Options {
						if o.ID == *g.SelectedOptionID {
							found = true
							selectedSum += o.Totals[0].Amount
						}
					}
					if !found {
						t.Errorf("method %d: selected option %q is not offered", i, *g.SelectedOptionID)
					}
					anySelected = true
				}
			}
		}
	}
	if f, ok := by[bcp.TotalFulfillment]; ok != anySelected || (ok && f != selectedSum-fulDiscount) {
		t.Errorf("fulfillment total %d (present %v), want %d (selected %d − free shipping %d, present %v)",
			f, ok, selectedSum-fulDiscount, selectedSum, fulDiscount, anySelected)
	}
	for _, m := range c.Messages {
		if m.Content == "" || (m.Path != "" && !strings.HasPrefix(m.Path, "$")) {
			t.Errorf("message %+v: needs content and a JSONPath", m)
		}
		if m.Type == bcp.MessageError && m.Severity == "" {
			t.Errorf("error %q has no severity", m.Code)
		}
	}
	validateSchema(t, req, c)
}

// validateSchema checks the priced checkout against the BCP checkout
// response schema (with the envelope members pricing does not own).
func validateSchema(t *testing.T, req Request, c *bcp.Checkout) {
	t.Helper()
	validatorOnce.Do(func() {
		validator, validatorErr = bcpschema.NewValidator(bcpnames.Checkout, bcpnames.Fulfillment, bcpnames.Discount)
	})
	if validatorErr != nil {
		t.Fatalf("validator: %v", validatorErr)
	}
	if len(c.LineItems) == 0 {
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["ucp"] = map[string]any{"version": bcpnames.Version, "payment_handlers": map[string]any{}}
	doc["id"], doc["status"], doc["currency"] = "chk_test", bcp.StatusIncomplete, "BRL"
	if doc["links"] == nil {
		doc["links"] = []any{}
	}
	b, _ = json.Marshal(doc)
	if err := validator.ValidateCheckoutResponse(bcpschema.OpUpdate, b); err != nil {
		t.Errorf("priced checkout fails the BCP schema: %v\n%s", err, b)
	}
}
