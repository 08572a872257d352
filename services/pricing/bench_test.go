package pricing

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/wire"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// benchCheckout is a 3-line checkout shipping to São Paulo with an option
// selected and two codes (a percent and a fixed one), as the checkout
// service sends it on an update.
func benchCheckout() *bcp.Checkout {
	return withCodes(&bcp.Checkout{
		ID:          "chk_bench",
		LineItems:   []bcp.LineItem{line("li_1", 3333, 2), line("li_2", 12990, 1), line("li_3", 4590, 3)},
		Buyer:       &bcp.Buyer{Email: "ana@example.com"},
		Fulfillment: shipSelect(sp(), "shr_pac"),
	}, "DEZ", "VINTE")
}

// BenchmarkQuote prices a 3-line checkout with shipping and two
// discounts. "engine" is the CPU work of a Quote call (the typed request
// to the engine's, price, the typed response); "rpc" adds connect over HTTP and the configuration read from
// PostgreSQL.
func BenchmarkQuote(b *testing.B) {
	caps := []string{bcpnames.Checkout, bcpnames.Fulfillment, bcpnames.Discount}
	in := wire.QuoteRequest(benchCheckout(), nil, caps, timestamppb.New(now))
	b.Run("engine", func(b *testing.B) {
		cfg := Config{
			Rates:     []ShippingRate{pac, sedex, {ID: "shr_capital", Title: "Capital", Price: 990, CEPRanges: []CEPRange{{"01000000", "05999999"}}, Active: true}},
			Discounts: []Discount{percent("DEZ", 1000, 1, true), fixed("VINTE", 2000, 2, true)},
		}
		b.ReportAllocs()
		for b.Loop() {
			req := NewRequest(in, now)
			out, automatic, err := priceWithAutomatic(req, cfg)
			if err != nil {
				b.Fatal(err)
			}
			_ = wire.QuoteResponse(req.Checkout, out, automatic)
		}
	})
	b.Run("rpc", func(b *testing.B) {
		c, ctx := rpc(b), tenant()
		for _, r := range []*pricingv1.ShippingRate{
			{Title: "PAC", Price: 1500, MinDays: 5, MaxDays: 8, Active: true},
			{Title: "SEDEX", Price: 2500, MinDays: 1, MaxDays: 2, Active: true},
		} {
			if _, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: r})); err != nil {
				b.Fatal(err)
			}
		}
		for _, d := range []*pricingv1.Discount{
			{Code: "DEZ", Title: "10%", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, Priority: 1, Combinable: true, Active: true},
			{Code: "VINTE", Title: "R$ 20", Kind: pricingv1.Discount_KIND_FIXED, Value: 2000, Priority: 2, Combinable: true, Active: true},
		} {
			if _, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: d})); err != nil {
				b.Fatal(err)
			}
		}
		msg := in
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Quote(ctx, req(msg)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
