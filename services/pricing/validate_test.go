package pricing

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
)

// validate_only answers every rule a value breaks, in the order a set
// checks them (a set answers the first), and stores nothing.
func TestValidateOnly(t *testing.T) {
	c, ctx := rpc(t), tenant()
	fields := func(vs []*pricingv1.Violation) []string {
		out := []string{}
		for _, v := range vs {
			if v.GetCode() == "" || v.GetMessage() == "" {
				t.Errorf("violation without code or message: %v", v)
			}
			out = append(out, v.GetField()+" "+v.GetCode())
		}
		return out
	}
	equal := func(what string, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: violations %q, want %q", what, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: violations %q, want %q", what, got, want)
			}
		}
	}

	bad := &pricingv1.ShippingRate{Title: " ", Price: -1, Regions: []string{"sp", "XX"},
		CepRanges: []*pricingv1.CepRange{{From: "0100000", To: "05999-999"}, {From: "06000-000", To: "05999-999"}}}
	r, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: bad, ValidateOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	equal("rate", fields(r.Msg.GetViolations()), []string{"rate.title invalid_title", "rate.price invalid_price", "rate.regions[1] unknown_uf",
		"rate.cep_ranges[0].from invalid_cep", "rate.cep_ranges[1] invalid_cep_range"})
	if r.Msg.GetRate() != nil {
		t.Errorf("validate_only answered a rate: %v", r.Msg.GetRate())
	}
	_, err = c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: bad}))
	wantErr(t, err, apperr.KindInvalidArgument, "invalid_title", "rate.title")
	good := &pricingv1.ShippingRate{Title: "PAC", Price: 1500, Regions: []string{"sp"}}
	if r, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: good, ValidateOnly: true})); err != nil || len(r.Msg.GetViolations()) != 0 {
		t.Fatalf("a valid rate: %v %v", err, r.Msg.GetViolations())
	}

	p, err := c.SetPickupLocation(ctx, req(&pricingv1.SetPickupLocationRequest{ValidateOnly: true, Location: &pricingv1.PickupLocation{
		Name: "Centro", StreetAddress: "Rua A, 1", AddressLocality: "São Paulo", AddressRegion: "XX", PostalCode: "0100-200", AddressCountry: "AR"}}))
	if err != nil {
		t.Fatal(err)
	}
	equal("pickup", fields(p.Msg.GetViolations()), []string{"location.address_region unknown_uf", "location.postal_code invalid_cep", "location.address_country unsupported_country"})

	start := timestamppb.New(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	d, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{ValidateOnly: true, Discount: &pricingv1.Discount{
		Code: "NÃO VALE", Title: "Oi", Kind: pricingv1.Discount_KIND_PERCENT, Value: 10001, StartsAt: start, EndsAt: &timestamppb.Timestamp{Seconds: -1 << 62}}}))
	if err != nil {
		t.Fatal(err)
	}
	equal("discount", fields(d.Msg.GetViolations()), []string{"discount.ends_at invalid_time", "discount.code invalid_code", "discount.value invalid_value"})

	// Nothing was stored.
	rates, err := c.ListShippingRates(ctx, req(&pricingv1.ListShippingRatesRequest{}))
	if err != nil || len(rates.Msg.GetRates()) != 0 {
		t.Fatalf("rates after validate_only: %v %v", rates.Msg.GetRates(), err)
	}
	locs, err := c.ListPickupLocations(ctx, req(&pricingv1.ListPickupLocationsRequest{}))
	if err != nil || len(locs.Msg.GetLocations()) != 0 {
		t.Fatalf("locations after validate_only: %v %v", locs.Msg.GetLocations(), err)
	}
	ds, err := c.ListDiscounts(ctx, req(&pricingv1.ListDiscountsRequest{}))
	if err != nil || len(ds.Msg.GetDiscounts()) != 0 {
		t.Fatalf("discounts after validate_only: %v %v", ds.Msg.GetDiscounts(), err)
	}
}
