package merchantio

import (
	"slices"
	"testing"
)

func TestDecodeStrict(t *testing.T) {
	if _, ps := Decode([]byte(`{"format":"bcp.merchant.v1","catalogo":{}}`)); len(ps) != 1 || ps[0].Code != "invalid_json" {
		t.Fatalf("unknown member: %v", ps)
	}
	if _, ps := Decode([]byte(`{"format":"outro"}`)); len(ps) != 1 || ps[0].Path != "$.format" {
		t.Fatalf("format: %v", ps)
	}
	if _, ps := Decode([]byte(`{"format":"bcp.merchant.v1","shipping_rates":[{"title":"PAC","price":"15,00"}]}`)); len(ps) != 1 || ps[0].Path != "$.shipping_rates.price" {
		t.Fatalf("type error: %v", ps)
	}
	doc, ps := Decode([]byte(`{"format":"bcp.merchant.v1"}`))
	if len(ps) != 0 || doc == nil {
		t.Fatalf("minimal: %v", ps)
	}
}

func TestValidateLocal(t *testing.T) {
	doc := &Document{Format: Format,
		ShippingRates:      []ShippingRate{{Title: "PAC", Price: 1500, Regions: []string{"sp", "XX"}}, {Title: "PAC", Price: -1, MinDays: 3, MaxDays: 1}},
		PickupPoints:       []PickupPoint{{Name: "Centro", StreetAddress: "Rua A, 1", AddressLocality: "SP", AddressRegion: "SP", PostalCode: "01002-000", AddressCountry: "AR"}},
		DiscountCodes:      []Discount{{Code: "OI", Title: "Oi", Kind: "percent", Value: 10001}, {Code: "oi", Title: "Oi 2", Kind: "fixed", Value: 100}},
		AutomaticDiscounts: []Discount{{Code: "X", Title: "Auto", Kind: "free_shipping"}},
		Settings:           Settings{Links: []Link{{Type: "privacy_policy", URL: "ftp://x"}}, ConsentPurposes: []string{"spam"}, CheckoutTTLSeconds: 10},
	}
	var paths []string
	for _, p := range validateLocal(doc) {
		paths = append(paths, p.Path)
	}
	want := []string{"$.shipping_rates[0].regions[1]", "$.shipping_rates[1].title", "$.shipping_rates[1].price", "$.shipping_rates[1].max_days",
		"$.pickup_points[0].address_country", "$.discount_codes[0].value", "$.discount_codes[1].code", "$.automatic_discounts[0].code",
		"$.settings.links[0].url", "$.settings.consent_purposes[0]", "$.settings.checkout_ttl_seconds"}
	if !slices.Equal(paths, want) {
		t.Fatalf("paths\n got %v\nwant %v", paths, want)
	}
}
