package pricing

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

type quoteCase struct {
	name  string
	req   Request
	cfg   Config
	check func(t *testing.T, out *bcp.Checkout)
}

func runCases(t *testing.T, cases []quoteCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := price(t, tc.req, tc.cfg)
			tc.check(t, out)
		})
	}
}

func wantApplied(t *testing.T, out *bcp.Checkout, want string) {
	t.Helper()
	if got := appliedString(out); got != want {
		t.Errorf("applied:\n got  %s\n want %s", got, want)
	}
}

func wantLine(t *testing.T, out *bcp.Checkout, i int, want string) {
	t.Helper()
	wantTotals(t, "line "+string(rune('0'+i)), out.LineItems[i].Totals, want)
}

func TestPriceDiscountRoundingAndAllocation(t *testing.T) {
	runCases(t, []quoteCase{{
		name: "no extensions negotiated: only line and checkout totals",
		req: Request{At: now, Checkout: &bcp.Checkout{
			LineItems:   []bcp.LineItem{line("li_1", 1000, 2), line("li_2", 2500, 1)},
			Fulfillment: shipTo(sp()), Discounts: &bcp.Discounts{Codes: []string{"DEZ"}},
		}},
		cfg: Config{Rates: []ShippingRate{pac}, Discounts: []Discount{percent("DEZ", 1000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantTotals(t, "checkout", out.Totals, "subtotal=4500 total=4500")
			wantLine(t, out, 0, "subtotal=2000 total=2000")
			if out.Fulfillment != nil || out.Discounts != nil {
				t.Errorf("extensions not negotiated, yet fulfillment=%v discounts=%v", out.Fulfillment, out.Discounts)
			}
			if out.Totals[0].DisplayText != "Subtotal" || out.Totals[1].DisplayText != "Total" {
				t.Errorf("display texts %q/%q", out.Totals[0].DisplayText, out.Totals[1].DisplayText)
			}
		},
	}, {
		name: "10% of three lines of 3333 rounds once and spreads the extra centavo",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(3333, 3333, 3333)}, "DEZ")),
		cfg:  Config{Discounts: []Discount{percent("DEZ", 1000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "DEZ:1000 $.line_items[0]=334 $.line_items[1]=333 $.line_items[2]=333")
			wantTotals(t, "checkout", out.Totals, "subtotal=9999 items_discount=-1000 total=8999")
			wantLine(t, out, 0, "subtotal=3333 items_discount=-334 total=2999")
			wantLine(t, out, 2, "subtotal=3333 items_discount=-333 total=3000")
			if out.Totals[1].DisplayText != "Descontos nos itens" {
				t.Errorf("items_discount display %q", out.Totals[1].DisplayText)
			}
			a := out.Discounts.Applied[0]
			if a.Method != bcp.AllocationAcross || a.Priority != 1 || a.Title != "Cupom DEZ" || a.Automatic {
				t.Errorf("applied = %+v", a)
			}
		},
	}, {
		name: "one-centavo remainders go to the lower index on ties",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(1, 1, 1)}, "METADE")),
		cfg:  Config{Discounts: []Discount{percent("METADE", 5000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			// 50 % of 3 = 1.5 → 2 (half up); shares 2/3 each → 0 + remainders.
			wantApplied(t, out, "METADE:2 $.line_items[0]=1 $.line_items[1]=1")
			wantTotals(t, "checkout", out.Totals, "subtotal=3 items_discount=-2 total=1")
			wantLine(t, out, 2, "subtotal=1 total=1")
		},
	}, {
		name: "uneven weights: largest remainders first",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(1, 2, 3)}, "CINCO")),
		cfg:  Config{Discounts: []Discount{fixed("CINCO", 5, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			// 5·1/6=0 r5, 5·2/6=1 r4, 5·3/6=2 r3: two centavos left → lines 0 and 1.
			wantApplied(t, out, "CINCO:5 $.line_items[0]=1 $.line_items[1]=2 $.line_items[2]=2")
			wantTotals(t, "checkout", out.Totals, "subtotal=6 items_discount=-5 total=1")
		},
	}, {
		name: "single line takes the whole discount",
		req:  all(withCodes(&bcp.Checkout{LineItems: []bcp.LineItem{line("li_1", 1999, 3)}}, "MIL")),
		cfg:  Config{Discounts: []Discount{fixed("MIL", 1000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "MIL:1000 $.line_items[0]=1000")
			wantTotals(t, "checkout", out.Totals, "subtotal=5997 items_discount=-1000 total=4997")
			wantLine(t, out, 0, "subtotal=5997 items_discount=-1000 total=4997")
		},
	}, {
		name: "zero-price line gets no allocation",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(1000, 0, 3000)}, "CEM")),
		cfg:  Config{Discounts: []Discount{fixed("CEM", 100, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "CEM:100 $.line_items[0]=25 $.line_items[2]=75")
			wantLine(t, out, 1, "subtotal=0 total=0")
		},
	}, {
		name: "fixed discount is capped at the merchandise, never negative",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(3000, 7000)}, "VALE")),
		cfg:  Config{Discounts: []Discount{fixed("VALE", 20000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "VALE:10000 $.line_items[0]=3000 $.line_items[1]=7000")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 items_discount=-10000 total=0")
		},
	}, {
		name: "100% then fixed: the second finds nothing left",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(1, 1)}, "TUDO", "MAIS")),
		cfg:  Config{Discounts: []Discount{percent("TUDO", 10000, 1, true), fixed("MAIS", 1, 2, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "TUDO:2 $.line_items[0]=1 $.line_items[1]=1; MAIS:0")
			wantTotals(t, "checkout", out.Totals, "subtotal=2 items_discount=-2 total=0")
		},
	}})
}

func TestPriceDiscountStacking(t *testing.T) {
	base := func(codes ...string) Request {
		return all(withCodes(&bcp.Checkout{LineItems: lines(6000, 4000)}, codes...))
	}
	runCases(t, []quoteCase{{
		name: "percent (priority 1) then fixed (priority 2) on what is left",
		req:  base("VINTE", "DEZ"),
		cfg:  Config{Discounts: []Discount{percent("DEZ", 1000, 1, true), fixed("VINTE", 2000, 2, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "DEZ:1000 $.line_items[0]=600 $.line_items[1]=400; VINTE:2000 $.line_items[0]=1200 $.line_items[1]=800")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 items_discount=-3000 total=7000")
			wantLine(t, out, 0, "subtotal=6000 items_discount=-1800 total=4200")
			wantMsgs(t, out)
		},
	}, {
		name: "fixed first when it has the lower priority number",
		req:  base("VINTE", "DEZ"),
		cfg:  Config{Discounts: []Discount{percent("DEZ", 1000, 2, true), fixed("VINTE", 2000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "VINTE:2000 $.line_items[0]=1200 $.line_items[1]=800; DEZ:800 $.line_items[0]=480 $.line_items[1]=320")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 items_discount=-2800 total=7200")
		},
	}, {
		name: "non-combinable with a worse priority is dropped",
		req:  base("DEZ", "EXCL"),
		cfg:  Config{Discounts: []Discount{percent("DEZ", 1000, 1, true), fixed("EXCL", 5000, 2, false)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "DEZ:1000 $.line_items[0]=600 $.line_items[1]=400")
			wantMsgs(t, out, "warning discount_code_combination_disallowed $.discounts.codes[1]")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 items_discount=-1000 total=9000")
		},
	}, {
		name: "non-combinable with the best priority applies alone",
		req:  base("DEZ", "EXCL"),
		cfg:  Config{Discounts: []Discount{percent("DEZ", 1000, 2, true), fixed("EXCL", 5000, 1, false)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "EXCL:5000 $.line_items[0]=3000 $.line_items[1]=2000")
			wantMsgs(t, out, "warning discount_code_combination_disallowed $.discounts.codes[0]")
			if !strings.Contains(out.Messages[0].Content, "EXCL") {
				t.Errorf("warning should name the kept code: %q", out.Messages[0].Content)
			}
		},
	}, {
		name: "same priority, both non-combinable: the larger amount wins",
		req:  base("A10", "B15"),
		cfg:  Config{Discounts: []Discount{percent("A10", 1000, 1, false), fixed("B15", 1500, 1, false)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "B15:1500 $.line_items[0]=900 $.line_items[1]=600")
			wantMsgs(t, out, "warning discount_code_combination_disallowed $.discounts.codes[0]")
		},
	}, {
		name: "combinable discounts at the same priority both apply, larger first",
		req:  base("A10", "B15"),
		cfg:  Config{Discounts: []Discount{percent("A10", 1000, 1, true), fixed("B15", 1500, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			// B15 ranks first (1500 > 1000 standalone); A10 then takes 10 % of 8500.
			wantApplied(t, out, "B15:1500 $.line_items[0]=900 $.line_items[1]=600; A10:850 $.line_items[0]=510 $.line_items[1]=340")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 items_discount=-2350 total=7650")
		},
	}, {
		name: "automatic discount applies without a code",
		req:  all(&bcp.Checkout{LineItems: lines(10000)}),
		cfg: Config{Discounts: []Discount{{ID: "dsc_auto", Title: "Promoção de inverno", Kind: KindPercent, Value: 500, Automatic: true,
			Priority: 1, Combinable: true, Active: true}}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "auto(Promoção de inverno):500 $.line_items[0]=500")
			b, _ := json.Marshal(out.Discounts)
			if string(b) != `{"applied":[{"title":"Promoção de inverno","amount":500,"automatic":true,"method":"across","priority":1,"allocations":[{"path":"$.line_items[0]","amount":500}]}]}` {
				t.Errorf("discounts JSON = %s", b)
			}
		},
	}, {
		name: "automatic non-combinable discount blocks a code",
		req:  base("DEZ"),
		cfg: Config{Discounts: []Discount{percent("DEZ", 1000, 2, true),
			{ID: "dsc_auto", Title: "Queima de estoque", Kind: KindFixed, Value: 1000, Automatic: true, Priority: 1, Active: true}}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "auto(Queima de estoque):1000 $.line_items[0]=600 $.line_items[1]=400")
			wantMsgs(t, out, "warning discount_code_combination_disallowed $.discounts.codes[0]")
		},
	}, {
		name: "ineligible automatic discounts stay silent",
		req:  base(),
		cfg: Config{Discounts: []Discount{
			{ID: "dsc_a", Title: "Acima de 500", Kind: KindFixed, Value: 1000, Automatic: true, MinSubtotal: 50000, Priority: 1, Active: true},
			{ID: "dsc_b", Title: "Por CPF", Kind: KindFixed, Value: 1000, Automatic: true, UsageLimitPerBuyer: 1, Priority: 1, Active: true},
		}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "")
			wantMsgs(t, out)
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 total=10000")
		},
	}})
}

func TestPriceDiscountWarnings(t *testing.T) {
	hour := time.Hour
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	cfg := Config{Discounts: []Discount{
		with(percent("VELHO", 1000, 1, true), func(d *Discount) { d.EndsAt = at(-hour) }),
		with(percent("FUTURO", 1000, 1, true), func(d *Discount) { d.StartsAt = at(hour) }),
		with(percent("FIMAGORA", 1000, 1, true), func(d *Discount) { d.StartsAt, d.EndsAt = at(-hour), at(0) }),
		with(percent("MINIMO", 1000, 1, true), func(d *Discount) { d.MinSubtotal = 50000 }),
		with(percent("ESGOTADO", 1000, 1, true), func(d *Discount) { d.UsageLimit, d.TimesUsed = 5, 5 }),
		with(percent("UMPORCPF", 1000, 1, true), func(d *Discount) { d.UsageLimitPerBuyer = 1 }),
		with(percent("INATIVO", 1000, 1, true), func(d *Discount) { d.Active = false }),
		percent("DEZ", 1000, 1, true),
	}}
	codes := []string{"NADA", "VELHO", "FUTURO", "MINIMO", "ESGOTADO", "UMPORCPF", "dez", "DEZ", "INATIVO", "FIMAGORA"}
	runCases(t, []quoteCase{{
		name: "every rejection has its code and path",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(10000)}, codes...)),
		cfg:  cfg,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out,
				"warning discount_code_invalid $.discounts.codes[0]",
				"warning discount_code_expired $.discounts.codes[1]",
				"warning discount_code_expired $.discounts.codes[2]",
				"warning discount_code_user_ineligible $.discounts.codes[3]",
				"warning discount_code_user_ineligible $.discounts.codes[4]",
				"warning discount_code_user_not_logged_in $.discounts.codes[5]",
				"warning discount_code_already_applied $.discounts.codes[7]",
				"warning discount_code_invalid $.discounts.codes[8]",
				"warning discount_code_expired $.discounts.codes[9]",
			)
			// Matched case-insensitively, echoed and applied as typed.
			wantApplied(t, out, "dez:1000 $.line_items[0]=1000")
			if strings.Join(out.Discounts.Codes, ",") != strings.Join(codes, ",") {
				t.Errorf("codes = %q", out.Discounts.Codes)
			}
			if !strings.Contains(out.Messages[3].Content, "R$ 500,00") {
				t.Errorf("min_subtotal warning should name the minimum: %q", out.Messages[3].Content)
			}
		},
	}, {
		name: "per-buyer limits with a buyer e-mail",
		req: all(withCodes(&bcp.Checkout{LineItems: lines(10000), Buyer: &bcp.Buyer{Email: "Ana@Example.com"}},
			"UMPORCPF", "DOISPORCPF")),
		cfg: Config{Discounts: []Discount{
			with(percent("UMPORCPF", 1000, 1, true), func(d *Discount) { d.UsageLimitPerBuyer, d.BuyerUsed = 1, 1 }),
			with(fixed("DOISPORCPF", 700, 1, true), func(d *Discount) { d.UsageLimitPerBuyer, d.BuyerUsed = 2, 1 }),
		}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "warning discount_code_user_ineligible $.discounts.codes[0]")
			wantApplied(t, out, "DOISPORCPF:700 $.line_items[0]=700")
		},
	}, {
		name: "minimum subtotal reached exactly applies; empty codes clear",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(50000)}, "MINIMO")),
		cfg:  cfg,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "MINIMO:5000 $.line_items[0]=5000")
			wantMsgs(t, out)
		},
	}, {
		name: "an empty code list applies nothing",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(50000)})),
		cfg:  cfg,
		check: func(t *testing.T, out *bcp.Checkout) {
			if out.Discounts != nil {
				t.Errorf("discounts = %+v, want none", out.Discounts)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=50000 total=50000")
		},
	}})
}

func TestPriceFulfillmentOptions(t *testing.T) {
	expressa := ShippingRate{ID: "shr_expressa", Title: "Expressa", Description: "Motoboy no mesmo dia", Price: 2500, Active: true, Position: 2}
	inactive := ShippingRate{ID: "shr_off", Title: "Desligada", Price: 1, Active: false}
	capital := ShippingRate{ID: "shr_capital", Title: "Capital SP", Price: 1000, CEPRanges: []CEPRange{{"01000000", "05999999"}}, Active: true}
	rjRate := ShippingRate{ID: "shr_rj", Title: "Rio", Price: 2000, Regions: []string{"RJ"}, Active: true}
	brasil := ShippingRate{ID: "shr_br", Title: "Brasil", Price: 3000, Active: true}
	nordeste := ShippingRate{ID: "shr_ne", Title: "Nordeste", Price: 4000, Regions: []string{"BA", "PE"}, Active: true}
	geo := Config{Rates: []ShippingRate{brasil, nordeste, rjRate, capital}}
	optionIDs := func(out *bcp.Checkout) string {
		var ids []string
		for _, o := range out.Fulfillment.Methods[0].Groups[0].Options {
			ids = append(ids, o.ID)
		}
		return strings.Join(ids, ",")
	}
	ship := func(d bcp.Destination) Request {
		return all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipTo(d)})
	}
	withCEP := func(cep, uf string) bcp.Destination {
		d := sp()
		d.PostalCode, d.AddressRegion = cep, uf
		return d
	}
	runCases(t, []quoteCase{{
		name: "cheapest first, then position; ids, descriptions, no auto-selection",
		req:  ship(sp()),
		cfg:  Config{Rates: []ShippingRate{expressa, inactive, pac, sedex}},
		check: func(t *testing.T, out *bcp.Checkout) {
			m := out.Fulfillment.Methods[0]
			if m.ID != "ship_1" || m.Type != "shipping" || strings.Join(m.LineItemIDs, ",") != "li_1" {
				t.Errorf("method = %+v", m)
			}
			if len(m.Destinations) != 1 || m.Destinations[0].ID != "dest_1" || m.SelectedDestinationID == nil || *m.SelectedDestinationID != "dest_1" {
				t.Errorf("destinations = %+v selected %v", m.Destinations, m.SelectedDestinationID)
			}
			if m.Destinations[0].PostalCode != "01310-100" {
				t.Errorf("postal code not echoed as sent: %q", m.Destinations[0].PostalCode)
			}
			g := m.Groups[0]
			if g.ID != "grp_1" || g.SelectedOptionID != nil || strings.Join(g.LineItemIDs, ",") != "li_1" {
				t.Errorf("group = %+v", g)
			}
			if got := optionIDs(out); got != "shr_pac,shr_sedex,shr_expressa" {
				t.Errorf("options = %s", got)
			}
			o := g.Options[0]
			if o.Title != "PAC" || o.Description != "Entrega em 5 a 8 dias úteis" || o.Carrier != "Correios" || amounts(o.Totals) != "total=1500" {
				t.Errorf("PAC option = %+v", o)
			}
			if g.Options[1].Description != "Entrega em 1 a 2 dias úteis" || g.Options[2].Description != "Motoboy no mesmo dia" {
				t.Errorf("descriptions %q, %q", g.Options[1].Description, g.Options[2].Description)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 total=10000")
			wantMsgs(t, out)
			av := out.Fulfillment.AvailableMethods
			if len(av) != 1 || av[0].Type != "shipping" || strings.Join(av[0].LineItemIDs, ",") != "li_1" {
				t.Errorf("available methods = %+v", av)
			}
		},
	}, {
		name: "a selected option becomes the fulfillment total",
		req:  all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipSelect(sp(), "shr_sedex")}),
		cfg:  Config{Rates: []ShippingRate{pac, sedex}},
		check: func(t *testing.T, out *bcp.Checkout) {
			if s := out.Fulfillment.Methods[0].Groups[0].SelectedOptionID; s == nil || *s != "shr_sedex" {
				t.Errorf("selected = %v", s)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=2500 total=12500")
			if out.Totals[1].DisplayText != "Frete" {
				t.Errorf("fulfillment display %q", out.Totals[1].DisplayText)
			}
		},
	}, {
		name: "a single option is preselected",
		req:  ship(sp()),
		cfg:  Config{Rates: []ShippingRate{pac}},
		check: func(t *testing.T, out *bcp.Checkout) {
			if s := out.Fulfillment.Methods[0].Groups[0].SelectedOptionID; s == nil || *s != "shr_pac" {
				t.Errorf("selected = %v", s)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=1500 total=11500")
		},
	}, {
		name: "CEP range and everywhere rates for São Paulo",
		req:  ship(sp()),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			if got := optionIDs(out); got != "shr_capital,shr_br" {
				t.Errorf("options = %s", got)
			}
		},
	}, {
		name: "UF rate for Rio de Janeiro",
		req:  ship(rj()),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			if got := optionIDs(out); got != "shr_rj,shr_br" {
				t.Errorf("options = %s", got)
			}
		},
	}, {
		name: "UF comes from the CEP when no region is given",
		req:  ship(withCEP("40010000", "")),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			if got := optionIDs(out); got != "shr_br,shr_ne" {
				t.Errorf("options = %s", got)
			}
			wantMsgs(t, out)
		},
	}, {
		name: "CEP range bounds are inclusive",
		req:  ship(withCEP("05999-999", "SP")),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			if got := optionIDs(out); got != "shr_capital,shr_br" {
				t.Errorf("options = %s", got)
			}
		},
	}, {
		name: "just outside the CEP range",
		req:  ship(withCEP("06000-000", "SP")),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			if got := optionIDs(out); got != "shr_br" {
				t.Errorf("options = %s", got)
			}
		},
	}, {
		name: "malformed CEP is a recoverable error at the postal code",
		req:  ship(withCEP("1310-100", "SP")),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_address $.fulfillment.methods[0].destinations[0].postal_code")
			if out.Messages[0].Severity != bcp.SeverityRecoverable {
				t.Errorf("severity %q", out.Messages[0].Severity)
			}
			if g := out.Fulfillment.Methods[0].Groups[0]; len(g.Options) != 0 || g.SelectedOptionID != nil {
				t.Errorf("group = %+v, want no options", g)
			}
		},
	}, {
		name: "missing CEP",
		req:  ship(withCEP("", "SP")),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_address $.fulfillment.methods[0].destinations[0].postal_code")
		},
	}, {
		name: "unknown UF",
		req:  ship(withCEP("01310100", "XX")),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_address $.fulfillment.methods[0].destinations[0].address_region")
		},
	}, {
		name: "region contradicting the CEP",
		req:  ship(withCEP("01310100", "RJ")),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_address $.fulfillment.methods[0].destinations[0].address_region")
			if !strings.Contains(out.Messages[0].Content, "é de SP") {
				t.Errorf("content %q", out.Messages[0].Content)
			}
		},
	}, {
		name: "foreign address",
		req:  ship(bcp.Destination{PostalAddress: bcp.PostalAddress{PostalCode: "94043", AddressCountry: "US"}}),
		cfg:  geo,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error address_undeliverable $.fulfillment.methods[0].destinations[0].address_country")
		},
	}, {
		name: "no rate delivers there",
		req:  ship(rj()),
		cfg:  Config{Rates: []ShippingRate{capital}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error address_undeliverable $.fulfillment.methods[0].selected_destination_id")
			if !strings.Contains(out.Messages[0].Content, "20090-003") {
				t.Errorf("content %q", out.Messages[0].Content)
			}
		},
	}, {
		name: "rate subtotal bounds",
		req:  ship(sp()),
		cfg: Config{Rates: []ShippingRate{
			{ID: "shr_min", Title: "Mín", Price: 1, MinSubtotal: 10001, Active: true},
			{ID: "shr_max", Title: "Máx", Price: 2, MaxSubtotal: 9999, Active: true},
			{ID: "shr_in", Title: "Dentro", Price: 3, MinSubtotal: 10000, MaxSubtotal: 10000, Active: true},
		}},
		check: func(t *testing.T, out *bcp.Checkout) {
			if got := optionIDs(out); got != "shr_in" {
				t.Errorf("options = %s", got)
			}
		},
	}})
}

func TestPriceFreeShippingThreshold(t *testing.T) {
	rate := pac
	rate.FreeAbove = 10000
	cfg := Config{Rates: []ShippingRate{rate, sedex}, Discounts: []Discount{fixed("SEISCENTOS", 600, 1, true)}}
	req := func(subtotal int64, codes ...string) Request {
		return all(withCodes(&bcp.Checkout{LineItems: lines(subtotal), Fulfillment: shipSelect(sp(), "shr_pac")}, codes...))
	}
	runCases(t, []quoteCase{{
		name: "just below",
		req:  req(9999), cfg: cfg,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantTotals(t, "checkout", out.Totals, "subtotal=9999 fulfillment=1500 total=11499")
			wantMsgs(t, out)
		},
	}, {
		name: "at the threshold",
		req:  req(10000), cfg: cfg,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=0 total=10000")
			wantMsgs(t, out, "info free_shipping $.fulfillment.methods[0].groups[0].options[0]")
			if c := out.Messages[0].Content; c != "Frete grátis em PAC para compras a partir de R$ 100,00." {
				t.Errorf("content %q", c)
			}
			if o := out.Fulfillment.Methods[0].Groups[0].Options[0]; o.ID != "shr_pac" || amounts(o.Totals) != "total=0" {
				t.Errorf("first option %+v", o)
			}
		},
	}, {
		name: "above",
		req:  req(10001), cfg: cfg,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantTotals(t, "checkout", out.Totals, "subtotal=10001 fulfillment=0 total=10001")
		},
	}, {
		name: "item discounts count: 10500 − 600 is below 10000",
		req:  req(10500, "SEISCENTOS"), cfg: cfg,
		check: func(t *testing.T, out *bcp.Checkout) {
			wantTotals(t, "checkout", out.Totals, "subtotal=10500 items_discount=-600 fulfillment=1500 total=11400")
			wantMsgs(t, out)
		},
	}})
}

func TestPriceFreeShippingDiscount(t *testing.T) {
	frete := Discount{ID: "dsc_frete", Code: "FRETE", Title: "Frete grátis", Kind: KindFreeShipping, Priority: 1, Combinable: true, Active: true}
	loja := PickupLocation{ID: "pkp_1", Name: "Loja Centro", StreetAddress: "Rua Direita, 10", AddressLocality: "São Paulo",
		AddressRegion: "SP", PostalCode: "01002000", AddressCountry: "BR", Price: 500, Active: true}
	runCases(t, []quoteCase{{
		name: "free shipping zeroes the selected option and is allocated to its group",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipSelect(sp(), "shr_sedex")}, "frete")),
		cfg:  Config{Rates: []ShippingRate{pac, sedex}, Discounts: []Discount{frete}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "frete:2500 $.fulfillment.methods[0].groups[0]=2500")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=0 total=10000")
			// Options keep their own prices.
			if o := out.Fulfillment.Methods[0].Groups[0].Options[1]; o.ID != "shr_sedex" || amounts(o.Totals) != "total=2500" {
				t.Errorf("sedex option %+v", o)
			}
		},
	}, {
		name: "before an option is chosen it applies with amount 0",
		req:  all(withCodes(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipTo(sp())}, "FRETE")),
		cfg:  Config{Rates: []ShippingRate{pac, sedex}, Discounts: []Discount{frete}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "FRETE:0")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 total=10000")
		},
	}, {
		name: "pickup fees are not shipping",
		req: all(withCodes(&bcp.Checkout{LineItems: lines(10000), Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{Type: "pickup"}}}},
			"FRETE")),
		cfg: Config{Pickups: []PickupLocation{loja}, Discounts: []Discount{frete}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "FRETE:0")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=500 total=10500")
		},
	}, {
		name: "percent and free shipping stack",
		req: all(withCodes(&bcp.Checkout{LineItems: lines(6000, 4000), Fulfillment: shipSelect(sp(), "shr_pac")},
			"FRETE", "DEZ")),
		cfg: Config{Rates: []ShippingRate{pac}, Discounts: []Discount{frete, percent("DEZ", 1000, 2, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantApplied(t, out, "FRETE:1500 $.fulfillment.methods[0].groups[0]=1500; DEZ:1000 $.line_items[0]=600 $.line_items[1]=400")
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 items_discount=-1000 fulfillment=0 total=9000")
		},
	}, {
		name: "non-combinable free shipping vs a larger percent at the same priority",
		req: all(withCodes(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipSelect(sp(), "shr_pac")},
			"FRETE", "DEZ")),
		cfg: Config{Rates: []ShippingRate{pac}, Discounts: []Discount{
			with(frete, func(d *Discount) { d.Combinable = false }), percent("DEZ", 1000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			// DEZ takes 1000 alone, FRETE 1500: free shipping wins.
			wantApplied(t, out, "FRETE:1500 $.fulfillment.methods[0].groups[0]=1500")
			wantMsgs(t, out, "warning discount_code_combination_disallowed $.discounts.codes[1]")
		},
	}})
}

func TestPriceSelectionsAndPickup(t *testing.T) {
	loja1 := PickupLocation{ID: "pkp_1", Name: "Loja Centro", StreetAddress: "Rua Direita, 10", AddressLocality: "São Paulo",
		AddressRegion: "SP", PostalCode: "01002000", AddressCountry: "BR", Price: 0, Active: true, Position: 0}
	loja2 := PickupLocation{ID: "pkp_2", Name: "Loja Paulista", StreetAddress: "Av. Paulista, 900", AddressLocality: "São Paulo",
		AddressRegion: "SP", PostalCode: "01310100", AddressCountry: "BR", Price: 500, Description: "Retire em 2 horas", Active: true, Position: 1}
	closed := PickupLocation{ID: "pkp_off", Name: "Fechada", Active: false}
	pickupMethod := func(sel *string) *bcp.Fulfillment {
		return &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{Type: "pickup", SelectedDestinationID: sel}}}
	}
	runCases(t, []quoteCase{{
		name: "unknown option id: selection stays null, error at its path, no substitute",
		req:  all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipSelect(sp(), "shr_nope")}),
		cfg:  Config{Rates: []ShippingRate{pac}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_selection $.fulfillment.methods[0].groups[0].selected_option_id")
			if s := out.Fulfillment.Methods[0].Groups[0].SelectedOptionID; s != nil {
				t.Errorf("selection = %q, want null (PAC must not be substituted)", *s)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 total=10000")
			b, _ := json.Marshal(out.Fulfillment.Methods[0].Groups[0])
			if strings.Contains(string(b), "selected_option_id") {
				t.Errorf("group JSON carries a selection: %s", b)
			}
		},
	}, {
		name: "unknown destination id: null, error, no options",
		req: all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
			Type: "shipping", Destinations: []bcp.Destination{sp(), rj()}, SelectedDestinationID: ptr("dest_9"),
		}}}}),
		cfg: Config{Rates: []ShippingRate{pac}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_selection $.fulfillment.methods[0].selected_destination_id")
			m := out.Fulfillment.Methods[0]
			if m.SelectedDestinationID != nil || len(m.Groups[0].Options) != 0 {
				t.Errorf("method = %+v", m)
			}
			if m.Destinations[0].ID != "dest_1" || m.Destinations[1].ID != "dest_2" {
				t.Errorf("destination ids %q %q", m.Destinations[0].ID, m.Destinations[1].ID)
			}
		},
	}, {
		name: "two destinations, the second selected",
		req: all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
			Type: "shipping", Destinations: []bcp.Destination{sp(), rj()}, SelectedDestinationID: ptr("dest_2"),
		}}}}),
		cfg: Config{Rates: []ShippingRate{{ID: "shr_rj", Title: "Rio", Price: 900, Regions: []string{"RJ"}, Active: true}, sedex}},
		check: func(t *testing.T, out *bcp.Checkout) {
			g := out.Fulfillment.Methods[0].Groups[0]
			if len(g.Options) != 2 || g.Options[0].ID != "shr_rj" {
				t.Errorf("options %+v", g.Options)
			}
		},
	}, {
		name: "pickup: locations as destinations, chosen one priced",
		req:  all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: pickupMethod(ptr("pkp_2"))}),
		cfg:  Config{Pickups: []PickupLocation{loja1, closed, loja2}},
		check: func(t *testing.T, out *bcp.Checkout) {
			m := out.Fulfillment.Methods[0]
			if m.ID != "pickup_1" || len(m.Destinations) != 2 || m.Destinations[1].ID != "pkp_2" || m.Destinations[1].Name != "Loja Paulista" {
				t.Fatalf("method = %+v", m)
			}
			if a := m.Destinations[1].Address; a == nil || a.PostalCode != "01310-100" || a.AddressRegion != "SP" || a.StreetAddress != "Av. Paulista, 900" {
				t.Errorf("address = %+v", a)
			}
			o := m.Groups[0].Options
			if len(o) != 1 || o[0].ID != "pickup" || o[0].Title != "Retirada na loja" || o[0].Description != "Retire em 2 horas" || amounts(o[0].Totals) != "total=500" {
				t.Errorf("options %+v", o)
			}
			if s := m.Groups[0].SelectedOptionID; s == nil || *s != "pickup" {
				t.Errorf("single option not preselected: %v", s)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=500 total=10500")
			av := out.Fulfillment.AvailableMethods
			if len(av) != 1 || av[0].Type != "pickup" || av[0].Description != "Retirada em uma das 2 lojas." {
				t.Errorf("available = %+v", av)
			}
		},
	}, {
		name: "pickup: several locations and none chosen",
		req:  all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: pickupMethod(nil)}),
		cfg:  Config{Pickups: []PickupLocation{loja1, loja2}},
		check: func(t *testing.T, out *bcp.Checkout) {
			m := out.Fulfillment.Methods[0]
			if m.SelectedDestinationID != nil || len(m.Groups[0].Options) != 0 {
				t.Errorf("method = %+v", m)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 total=10000")
		},
	}, {
		name: "pickup: the only location is selected",
		req:  all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: pickupMethod(nil)}),
		cfg:  Config{Pickups: []PickupLocation{loja1}},
		check: func(t *testing.T, out *bcp.Checkout) {
			m := out.Fulfillment.Methods[0]
			if m.SelectedDestinationID == nil || *m.SelectedDestinationID != "pkp_1" {
				t.Errorf("selected %v", m.SelectedDestinationID)
			}
			if d := m.Groups[0].Options[0].Description; d != "Loja Centro: Rua Direita, 10, São Paulo/SP" {
				t.Errorf("description %q", d)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=0 total=10000")
		},
	}, {
		name: "pickup: unknown location",
		req:  all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: pickupMethod(ptr("pkp_off"))}),
		cfg:  Config{Pickups: []PickupLocation{loja1, closed}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_selection $.fulfillment.methods[0].selected_destination_id")
			if out.Fulfillment.Methods[0].SelectedDestinationID != nil {
				t.Errorf("selection kept")
			}
		},
	}, {
		name: "pickup: none configured",
		req:  all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: pickupMethod(nil)}),
		cfg:  Config{Pickups: []PickupLocation{closed}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error address_undeliverable $.fulfillment.methods[0]")
		},
	}, {
		name: "shipping one line, pickup the other",
		req: all(&bcp.Checkout{LineItems: lines(6000, 4000), Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{
			{Type: "shipping", LineItemIDs: []string{"li_1"}, Destinations: []bcp.Destination{sp()}},
			{Type: "pickup"},
		}}}),
		cfg: Config{Rates: []ShippingRate{pac}, Pickups: []PickupLocation{loja2}},
		check: func(t *testing.T, out *bcp.Checkout) {
			ms := out.Fulfillment.Methods
			if ms[0].ID != "ship_1" || ms[1].ID != "pickup_1" || ms[0].Groups[0].ID != "grp_1" || ms[1].Groups[0].ID != "grp_2" {
				t.Errorf("ids %s %s %s %s", ms[0].ID, ms[1].ID, ms[0].Groups[0].ID, ms[1].Groups[0].ID)
			}
			if strings.Join(ms[1].LineItemIDs, ",") != "li_2" || strings.Join(ms[1].Groups[0].LineItemIDs, ",") != "li_2" {
				t.Errorf("pickup lines %v", ms[1].LineItemIDs)
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=2000 total=12000")
		},
	}, {
		name: "a line in two methods is an error; the second method is not priced",
		req: all(&bcp.Checkout{LineItems: lines(6000, 4000), Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{
			{Type: "shipping", LineItemIDs: []string{"li_1", "li_2"}, Destinations: []bcp.Destination{sp()}},
			{Type: "pickup", LineItemIDs: []string{"li_2"}},
		}}}),
		cfg: Config{Rates: []ShippingRate{pac}, Pickups: []PickupLocation{loja2}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error invalid_selection $.fulfillment.methods[1].line_item_ids[0]")
			if len(out.Fulfillment.Methods[1].Groups) != 0 {
				t.Errorf("conflicting method was priced")
			}
			wantTotals(t, "checkout", out.Totals, "subtotal=10000 fulfillment=1500 total=11500")
		},
	}, {
		name: "an unknown line in a method",
		req: all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{
			{Type: "shipping", LineItemIDs: []string{"li_9"}, Destinations: []bcp.Destination{sp()}},
		}}}),
		cfg: Config{Rates: []ShippingRate{pac}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out, "error not_found $.fulfillment.methods[0].line_item_ids[0]")
		},
	}, {
		name: "messages already present are kept first",
		req: all(withCodes(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipSelect(sp(), "x"),
			Messages: []bcp.Message{bcp.Warning(bcp.CodeQuantityAdjusted, "$.line_items[0].quantity", "ajustada")}}, "NADA")),
		cfg: Config{Rates: []ShippingRate{pac, sedex}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantMsgs(t, out,
				"warning quantity_adjusted $.line_items[0].quantity",
				"error invalid_selection $.fulfillment.methods[0].groups[0].selected_option_id",
				"warning discount_code_invalid $.discounts.codes[0]")
		},
	}, {
		name: "no lines left (every item removed on update)",
		req:  all(withCodes(&bcp.Checkout{LineItems: []bcp.LineItem{}, Fulfillment: shipTo(sp())}, "DEZ")),
		cfg:  Config{Rates: []ShippingRate{pac}, Discounts: []Discount{percent("DEZ", 1000, 1, true)}},
		check: func(t *testing.T, out *bcp.Checkout) {
			wantTotals(t, "checkout", out.Totals, "subtotal=0 total=0")
			if len(out.Fulfillment.Methods[0].Groups) != 0 {
				t.Errorf("groups without lines")
			}
		},
	}})
}

// TestPreviousKeepsIDsStable walks a checkout through updates the way the
// checkout service sends them (the binding's create and update examples).
func TestPreviousKeepsIDsStable(t *testing.T) {
	spOnly := sedex
	spOnly.CEPRanges = []CEPRange{{"01000000", "19999999"}}
	cfg := Config{Rates: []ShippingRate{pac, spOnly}}
	step := func(t *testing.T, prev *bcp.Checkout, f *bcp.Fulfillment, prices ...int64) *bcp.Checkout {
		t.Helper()
		req := all(&bcp.Checkout{LineItems: lines(prices...), Fulfillment: f})
		req.Previous = prev
		return price(t, req, cfg)
	}
	m := func(c *bcp.Checkout) bcp.FulfillmentMethod { return c.Fulfillment.Methods[0] }

	create := step(t, nil, shipTo(sp()), 10000)
	if mm := m(create); mm.ID != "ship_1" || mm.Destinations[0].ID != "dest_1" || mm.Groups[0].ID != "grp_1" || mm.Groups[0].SelectedOptionID != nil {
		t.Fatalf("create: %+v", mm)
	}

	// The binding's update: method id and a group selection only.
	upd := step(t, create, &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
		ID: "ship_1", LineItemIDs: []string{"li_1"}, Groups: []bcp.FulfillmentGroup{{ID: "grp_1", SelectedOptionID: ptr("shr_sedex")}},
	}}}, 10000)
	mm := m(upd)
	if mm.Type != "shipping" || len(mm.Destinations) != 1 || mm.Destinations[0].ID != "dest_1" || mm.Destinations[0].PostalCode != "01310-100" ||
		mm.SelectedDestinationID == nil || *mm.SelectedDestinationID != "dest_1" {
		t.Fatalf("update kept %+v", mm)
	}
	wantTotals(t, "update", upd.Totals, "subtotal=10000 fulfillment=2500 total=12500")

	// Resending the same address without ids (and no groups) keeps every id
	// and the selection.
	again := step(t, upd, shipTo(sp()), 10000)
	mm = m(again)
	if mm.ID != "ship_1" || mm.Destinations[0].ID != "dest_1" || mm.Groups[0].ID != "grp_1" ||
		mm.Groups[0].SelectedOptionID == nil || *mm.Groups[0].SelectedOptionID != "shr_sedex" {
		t.Fatalf("resend: %+v", mm)
	}
	wantMsgs(t, again)

	// A new address gets a new id (dest_1 meant São Paulo); SEDEX is not
	// offered in Rio, so the selection is dropped with fulfillment_changed
	// and PAC — now the only option — is not substituted.
	moved := step(t, again, shipTo(rj()), 10000)
	mm = m(moved)
	if mm.Destinations[0].ID != "dest_2" || mm.Groups[0].SelectedOptionID != nil || len(mm.Groups[0].Options) != 1 {
		t.Fatalf("moved: %+v", mm)
	}
	wantMsgs(t, moved, "warning fulfillment_changed $.fulfillment.methods[0].groups[0].selected_option_id")

	// A sent id is kept, with its address from before when sent bare.
	bare := step(t, again, &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
		ID: "ship_1", Type: "shipping", Destinations: []bcp.Destination{{ID: "dest_1"}},
	}}}, 10000)
	if d := m(bare).Destinations[0]; d.ID != "dest_1" || d.PostalCode != "01310-100" {
		t.Fatalf("bare id: %+v", d)
	}
	unknown := step(t, again, &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
		ID: "ship_1", Type: "shipping", Destinations: []bcp.Destination{{ID: "casa"}},
	}}}, 10000)
	// No address, no options: the kept SEDEX choice cannot stand either.
	wantMsgs(t, unknown, "error invalid_address $.fulfillment.methods[0].destinations[0]",
		"warning fulfillment_changed $.fulfillment.methods[0].groups[0].selected_option_id")

	// A price change of the kept selection is announced.
	free := pac
	free.FreeAbove = 10000
	cfg = Config{Rates: []ShippingRate{free}}
	rich := step(t, nil, shipTo(sp()), 10000)
	wantTotals(t, "rich", rich.Totals, "subtotal=10000 fulfillment=0 total=10000")
	poorer := step(t, rich, shipTo(sp()), 9000)
	wantTotals(t, "poorer", poorer.Totals, "subtotal=9000 fulfillment=1500 total=10500")
	wantMsgs(t, poorer, "warning fulfillment_changed $.fulfillment.methods[0].groups[0].selected_option_id")
	if c := poorer.Messages[0].Content; c != "O valor de PAC mudou de R$ 0,00 para R$ 15,00." {
		t.Errorf("content %q", c)
	}

	// Agent-chosen method ids are kept; a second method gets fresh ids.
	two := step(t, nil, &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{
		{ID: "meu_envio", Type: "shipping", LineItemIDs: []string{"li_1"}, Destinations: []bcp.Destination{sp()}},
		{Type: "shipping", LineItemIDs: []string{"li_2"}, Destinations: []bcp.Destination{sp()}},
	}}, 100, 200)
	if ms := two.Fulfillment.Methods; ms[0].ID != "meu_envio" || ms[1].ID != "ship_1" || ms[0].Destinations[0].ID != "dest_1" || ms[1].Destinations[0].ID != "dest_2" {
		t.Errorf("ids: %s %s %s %s", ms[0].ID, ms[1].ID, ms[0].Destinations[0].ID, ms[1].Destinations[0].ID)
	}
}

func TestPriceIsDeterministicAndPure(t *testing.T) {
	req := all(withCodes(&bcp.Checkout{LineItems: lines(3333, 3333, 3333), Fulfillment: shipSelect(sp(), "shr_pac"),
		Messages: []bcp.Message{bcp.Info("x", "$", "y")}}, "DEZ", "NADA"))
	cfg := Config{Rates: []ShippingRate{pac, sedex}, Discounts: []Discount{percent("DEZ", 1000, 1, true)}}
	before, _ := json.Marshal(req.Checkout)
	a, _ := json.Marshal(price(t, req, cfg))
	b, _ := json.Marshal(price(t, req, cfg))
	after, _ := json.Marshal(req.Checkout)
	if !bytes.Equal(a, b) {
		t.Errorf("two quotes differ:\n%s\n%s", a, b)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("Price mutated its input:\n%s\n%s", before, after)
	}
}

func TestPriceRejectsOutOfRange(t *testing.T) {
	cases := []struct {
		name        string
		lines       []bcp.LineItem
		currency    string
		ship        bool
		code, field string
	}{
		{"price × quantity beyond 2^53−1", []bcp.LineItem{line("li_1", MaxAmount, 2)}, "", false, "amount_out_of_range", "checkout_json.line_items[0]"},
		{"price × quantity beyond int64", []bcp.LineItem{line("li_1", MaxAmount, MaxAmount)}, "", false, "amount_out_of_range", "checkout_json.line_items[0]"},
		{"subtotal beyond 2^53−1", []bcp.LineItem{line("li_1", MaxAmount, 1), line("li_2", 1, 1)}, "", false, "amount_out_of_range", "checkout_json.line_items"},
		{"total with shipping beyond 2^53−1", []bcp.LineItem{line("li_1", MaxAmount, 1)}, "", true, "amount_out_of_range", "checkout_json"},
		{"price beyond 2^53−1", []bcp.LineItem{line("li_1", MaxAmount+1, 1)}, "", false, "invalid_price", "checkout_json.line_items[0].item.price"},
		{"negative price", []bcp.LineItem{line("li_1", -1, 1)}, "", false, "invalid_price", "checkout_json.line_items[0].item.price"},
		{"zero quantity", []bcp.LineItem{line("li_1", 1, 0)}, "", false, "invalid_quantity", "checkout_json.line_items[0].quantity"},
		{"missing line id", []bcp.LineItem{line("", 1, 1)}, "", false, "line_id_required", "checkout_json.line_items[0].id"},
		{"duplicate line id", []bcp.LineItem{line("li_1", 1, 1), line("li_1", 1, 1)}, "", false, "duplicate_line_id", "checkout_json.line_items[1].id"},
		{"other currency", []bcp.LineItem{line("li_1", 1, 1)}, "USD", false, "unsupported_currency", "checkout_json.currency"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &bcp.Checkout{LineItems: tc.lines, Currency: tc.currency}
			if tc.ship {
				c.Fulfillment = shipSelect(sp(), "shr_pac")
			}
			_, err := Price(all(c), Config{Rates: []ShippingRate{pac}})
			e := apperr.As(err)
			if err == nil || e.Kind != apperr.KindInvalidArgument || e.Code != tc.code || e.Field != tc.field {
				t.Fatalf("err = %v (kind %v, code %q, field %q), want invalid %s at %s", err, e.Kind, e.Code, e.Field, tc.code, tc.field)
			}
		})
	}
	// The largest amount itself is fine.
	out := price(t, all(&bcp.Checkout{LineItems: []bcp.LineItem{line("li_1", MaxAmount, 1)}}), Config{})
	wantTotals(t, "max", out.Totals, "subtotal=9007199254740991 total=9007199254740991")
}

func TestPriceRejectsMalformedFulfillment(t *testing.T) {
	cases := []struct {
		name        string
		methods     []bcp.FulfillmentMethod
		code, field string
	}{
		{"new method without type", []bcp.FulfillmentMethod{{}}, "method_type_required", "checkout_json.fulfillment.methods[0].type"},
		{"unsupported type", []bcp.FulfillmentMethod{{Type: "curbside"}}, "unsupported_method_type", "checkout_json.fulfillment.methods[0].type"},
		{"duplicate method id", []bcp.FulfillmentMethod{{ID: "m", Type: "shipping", LineItemIDs: []string{"li_1"}}, {ID: "m", Type: "pickup", LineItemIDs: []string{"li_2"}}},
			"duplicate_method_id", "checkout_json.fulfillment.methods[1].id"},
		{"duplicate destination id", []bcp.FulfillmentMethod{{Type: "shipping", Destinations: []bcp.Destination{{ID: "d", PostalAddress: sp().PostalAddress}, {ID: "d", PostalAddress: rj().PostalAddress}}}},
			"duplicate_destination_id", "checkout_json.fulfillment.methods[0].destinations[1].id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Price(all(&bcp.Checkout{LineItems: lines(1, 2), Fulfillment: &bcp.Fulfillment{Methods: tc.methods}}), Config{})
			if e := apperr.As(err); err == nil || e.Code != tc.code || e.Field != tc.field {
				t.Fatalf("err = %v, want %s at %s", err, tc.code, tc.field)
			}
		})
	}
}

// A typed QuoteRequest becomes the engine's request: the capabilities
// choose the extensions, the buyer's e-mail and the codes are what limits
// and discounts read, and the previous methods keep their presence.
func TestNewRequest(t *testing.T) {
	r := NewRequest(&pricingv1.QuoteRequest{
		CheckoutId: "chk_1", BuyerEmail: " Ana@Example.COM ", DiscountCodes: []string{"Dez", " X "},
		Capabilities: []string{"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.discount"},
		Lines:        []*pricingv1.QuoteLine{{Id: "li_1", VariantId: "var_1", Quantity: 2, UnitPrice: 990}},
	}, now)
	if r.Fulfillment || !r.Discounts || r.BuyerEmail() != "ana@example.com" || strings.Join(r.Codes(), ",") != "dez,x" || r.Previous != nil ||
		r.Checkout.ID != "chk_1" || !r.At.Equal(now) {
		t.Errorf("request = %+v email %q codes %q", r, r.BuyerEmail(), r.Codes())
	}
	if l := r.Checkout.LineItems; len(l) != 1 || l[0].ID != "li_1" || l[0].Item != (bcp.Item{ID: "var_1", Price: 990}) || l[0].Quantity != 2 {
		t.Errorf("lines = %+v", l)
	}
	sel, none := "dest_1", ""
	r = NewRequest(&pricingv1.QuoteRequest{
		Methods:         []*pricingv1.FulfillmentMethod{{Id: "ship_1"}, {Id: "ship_2", SelectedDestinationId: &none}},
		PreviousMethods: []*pricingv1.FulfillmentMethod{{Id: "ship_1", Type: "shipping", SelectedDestinationId: &sel}},
	}, now)
	ms := r.Checkout.Fulfillment.Methods
	if ms[0].Destinations != nil || ms[0].SelectedDestinationID != nil || ms[1].SelectedDestinationID == nil || *ms[1].SelectedDestinationID != "" {
		t.Errorf("methods = %+v", ms)
	}
	if pm := r.Previous.Fulfillment.Methods[0]; pm.SelectedDestinationID == nil || *pm.SelectedDestinationID != "dest_1" {
		t.Errorf("previous = %+v", pm)
	}
}

// Only the automatic discounts that applied are named, by id, for the
// completion to redeem (codes it redeems by code): one a code beat to
// it, or one not eligible, is not.
func TestPriceNamesTheAutomaticDiscountsApplied(t *testing.T) {
	cfg := Config{Discounts: []Discount{
		percent("DEZ", 1000, 2, true),
		{ID: "dsc_auto", Title: "Promoção de inverno", Kind: KindPercent, Value: 500, Automatic: true, Priority: 1, Combinable: true, Active: true},
		{ID: "dsc_big", Title: "Acima de 500", Kind: KindFixed, Value: 1000, Automatic: true, MinSubtotal: 50000, Priority: 1, Combinable: true, Active: true},
	}}
	req := all(withCodes(&bcp.Checkout{LineItems: lines(6000, 4000)}, "DEZ"))
	_, ids, err := priceWithAutomatic(req, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"dsc_auto"}) {
		t.Fatalf("automatic ids %v, want [dsc_auto]", ids)
	}
	cfg.Discounts[1].Combinable, cfg.Discounts[1].Priority = false, 3 // alone only, and the code ranks first
	if _, ids, _ = priceWithAutomatic(req, cfg); len(ids) != 0 {
		t.Fatalf("automatic ids %v, want none", ids)
	}
}

// An update that sends an empty destinations array keeps the method's
// previous destinations, as one that sends none: the checkout reached
// pricing as JSON, where an empty array is no array, and the typed
// contract keeps that (price compares the two).
func TestEmptyDestinationsKeepThePrevious(t *testing.T) {
	cfg := Config{Rates: []ShippingRate{pac}}
	first := price(t, all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipTo(sp())}), cfg)
	m := first.Fulfillment.Methods[0]
	req := all(&bcp.Checkout{LineItems: lines(10000), Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{ID: m.ID, Destinations: []bcp.Destination{}}}}})
	req.Previous = first
	typed, err := typedPrice(req, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := typed.Fulfillment.Methods[0].Destinations; len(d) != 1 || d[0].ID != m.Destinations[0].ID || typed.Fulfillment.Methods[0].SelectedDestinationID == nil {
		t.Errorf("destinations %+v, want the previous %s selected", d, m.Destinations[0].ID)
	}
	wantTotals(t, "typed", typed.Totals, "subtotal=10000 fulfillment=1500 total=11500")
}
