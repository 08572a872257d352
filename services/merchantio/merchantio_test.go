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

// Keys the import matches entries by may not repeat within a document;
// every other rule is its owner's (merchantio_platform_test.go).
func TestDuplicateKeys(t *testing.T) {
	doc := &Document{Format: Format,
		ShippingRates:      []ShippingRate{{Title: "PAC"}, {Title: " PAC "}, {Title: "SEDEX"}},
		PickupPoints:       []PickupPoint{{Name: "Centro"}, {Name: "Centro"}},
		DiscountCodes:      []Discount{{Code: "OI"}, {Code: "oi"}, {Code: ""}, {Code: ""}},
		AutomaticDiscounts: []Discount{{Title: "Auto"}, {Title: "Outro"}, {Title: "Auto"}},
	}
	var got []string
	for _, p := range duplicateKeys(doc) {
		got = append(got, p.Path+" "+p.Code+" "+p.Message)
	}
	want := []string{
		"$.shipping_rates[1].title duplicate_title same title as $.shipping_rates[0]",
		"$.pickup_points[1].name duplicate_name same name as $.pickup_points[0]",
		"$.discount_codes[1].code duplicate_code same code as $.discount_codes[0]",
		"$.automatic_discounts[2].title duplicate_title same title as $.automatic_discounts[0]",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n got %q\nwant %q", got, want)
	}
}
