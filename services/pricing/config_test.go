package pricing

import (
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
)

func wantInvalid(t *testing.T, err error, code, field string) {
	t.Helper()
	e := apperr.As(err)
	if err == nil || e.Kind != apperr.KindInvalidArgument || e.Code != code || e.Field != field {
		t.Errorf("err = %v, want invalid %s at %s", err, code, field)
	}
}

func TestNormalizeCEPAndUF(t *testing.T) {
	for in, want := range map[string]string{"01310-100": "01310100", "01310100": "01310100", " 01.310-100 ": "01310100"} {
		if got, ok := normalizeCEP(in); !ok || got != want {
			t.Errorf("normalizeCEP(%q) = %q %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "1310-100", "013101000", "0131O100", "01310 100", "abcdefgh"} {
		if got, ok := normalizeCEP(bad); ok {
			t.Errorf("normalizeCEP(%q) = %q, want rejected", bad, got)
		}
	}
	if len(ufs) != 27 {
		t.Errorf("%d UFs, want 27", len(ufs))
	}
	if uf, ok := normalizeUF(" sp "); !ok || uf != "SP" {
		t.Errorf("normalizeUF = %q %v", uf, ok)
	}
	if _, ok := normalizeUF("XX"); ok {
		t.Error("XX accepted")
	}
	for cep, uf := range map[string]string{"01310100": "SP", "20090003": "RJ", "69005000": "AM", "69301000": "RR", "70040000": "DF",
		"72800000": "GO", "73000000": "DF", "74000000": "GO", "76801000": "RO", "77000000": "TO", "90000000": "RS", "00100000": ""} {
		if got := ufOfCEP(cep); got != uf {
			t.Errorf("ufOfCEP(%s) = %q, want %q", cep, got, uf)
		}
	}
	// Every UF is reachable from some CEP range.
	seen := map[string]bool{}
	for _, r := range cepUF {
		seen[r.uf] = true
		if !ufs[r.uf] || r.from > r.to {
			t.Errorf("bad CEP range %+v", r)
		}
	}
	if len(seen) != 27 {
		t.Errorf("CEP table covers %d UFs", len(seen))
	}
}

func TestValidateRate(t *testing.T) {
	ok := func() ShippingRate {
		return ShippingRate{Title: " PAC ", Regions: []string{"sp", "SP", "rj"}, CEPRanges: []CEPRange{{"01000-000", "05999999"}}, Price: 1500, MinDays: 3, MaxDays: 5}
	}
	r := ok()
	if err := validateRate(&r); err != nil {
		t.Fatal(err)
	}
	if r.Title != "PAC" || len(r.Regions) != 2 || r.Regions[0] != "SP" || r.Regions[1] != "RJ" || r.CEPRanges[0].From != "01000000" {
		t.Errorf("not normalised: %+v", r)
	}
	cases := []struct {
		name        string
		mut         func(*ShippingRate)
		code, field string
	}{
		{"empty title", func(r *ShippingRate) { r.Title = " " }, "invalid_title", "rate.title"},
		{"negative price", func(r *ShippingRate) { r.Price = -1 }, "invalid_price", "rate.price"},
		{"price beyond 2^53−1", func(r *ShippingRate) { r.Price = MaxAmount + 1 }, "invalid_price", "rate.price"},
		{"negative free_above", func(r *ShippingRate) { r.FreeAbove = -1 }, "invalid_free_above", "rate.free_above"},
		{"negative min_subtotal", func(r *ShippingRate) { r.MinSubtotal = -1 }, "invalid_min_subtotal", "rate.min_subtotal"},
		{"max below min subtotal", func(r *ShippingRate) { r.MinSubtotal, r.MaxSubtotal = 100, 99 }, "invalid_max_subtotal", "rate.max_subtotal"},
		{"negative min_days", func(r *ShippingRate) { r.MinDays = -1 }, "invalid_min_days", "rate.min_days"},
		{"max below min days", func(r *ShippingRate) { r.MinDays, r.MaxDays = 5, 3 }, "invalid_max_days", "rate.max_days"},
		{"unknown UF", func(r *ShippingRate) { r.Regions = []string{"SP", "XX"} }, "unknown_uf", "rate.regions[1]"},
		{"short CEP", func(r *ShippingRate) { r.CEPRanges = []CEPRange{{"0100000", "05999999"}} }, "invalid_cep", "rate.cep_ranges[0].from"},
		{"letters in CEP", func(r *ShippingRate) { r.CEPRanges = append(r.CEPRanges, CEPRange{"01000000", "0599999X"}) }, "invalid_cep", "rate.cep_ranges[1].to"},
		{"from after to", func(r *ShippingRate) { r.CEPRanges = []CEPRange{{"06000000", "05999999"}} }, "invalid_cep_range", "rate.cep_ranges[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.mut(&r)
			wantInvalid(t, validateRate(&r), tc.code, tc.field)
		})
	}
}

func TestValidatePickup(t *testing.T) {
	ok := func() PickupLocation {
		return PickupLocation{Name: "Loja", StreetAddress: "Rua A, 1", AddressLocality: "São Paulo", AddressRegion: "sp", PostalCode: "01310-100"}
	}
	p := ok()
	if err := validatePickup(&p); err != nil || p.AddressRegion != "SP" || p.PostalCode != "01310100" || p.AddressCountry != "BR" {
		t.Fatalf("%v %+v", err, p)
	}
	cases := []struct {
		name        string
		mut         func(*PickupLocation)
		code, field string
	}{
		{"no name", func(p *PickupLocation) { p.Name = "" }, "invalid_name", "location.name"},
		{"no street", func(p *PickupLocation) { p.StreetAddress = "" }, "invalid_address", "location.street_address"},
		{"no city", func(p *PickupLocation) { p.AddressLocality = "" }, "invalid_address", "location.address_locality"},
		{"unknown UF", func(p *PickupLocation) { p.AddressRegion = "ZZ" }, "unknown_uf", "location.address_region"},
		{"bad CEP", func(p *PickupLocation) { p.PostalCode = "123" }, "invalid_cep", "location.postal_code"},
		{"abroad", func(p *PickupLocation) { p.AddressCountry = "PT" }, "unsupported_country", "location.address_country"},
		{"negative price", func(p *PickupLocation) { p.Price = -5 }, "invalid_price", "location.price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ok()
			tc.mut(&p)
			wantInvalid(t, validatePickup(&p), tc.code, tc.field)
		})
	}
}

func TestValidateDiscount(t *testing.T) {
	ok := func() Discount {
		return Discount{Code: " BemVindo10 ", Title: "Boas-vindas", Kind: KindPercent, Value: 1000}
	}
	d := ok()
	if err := validateDiscount(&d); err != nil || d.Code != "BemVindo10" || d.Priority != 1 {
		t.Fatalf("%v %+v", err, d)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	cases := []struct {
		name        string
		mut         func(*Discount)
		code, field string
	}{
		{"percent 0", func(d *Discount) { d.Value = 0 }, "invalid_value", "discount.value"},
		{"percent above 100 %", func(d *Discount) { d.Value = 10001 }, "invalid_value", "discount.value"},
		{"fixed 0", func(d *Discount) { d.Kind, d.Value = KindFixed, 0 }, "invalid_value", "discount.value"},
		{"fixed negative", func(d *Discount) { d.Kind, d.Value = KindFixed, -100 }, "invalid_value", "discount.value"},
		{"free shipping with a value", func(d *Discount) { d.Kind, d.Value = KindFreeShipping, 5 }, "invalid_value", "discount.value"},
		{"no kind", func(d *Discount) { d.Kind = "" }, "invalid_kind", "discount.kind"},
		{"no code", func(d *Discount) { d.Code = "" }, "code_required", "discount.code"},
		{"code with spaces", func(d *Discount) { d.Code = "BEM VINDO" }, "invalid_code", "discount.code"},
		{"automatic with a code", func(d *Discount) { d.Automatic = true }, "invalid_code", "discount.code"},
		{"no title", func(d *Discount) { d.Title = "" }, "invalid_title", "discount.title"},
		{"ends before it starts", func(d *Discount) { d.StartsAt, d.EndsAt = &t1, &t0 }, "invalid_ends_at", "discount.ends_at"},
		{"ends when it starts", func(d *Discount) { d.StartsAt, d.EndsAt = &t0, &t0 }, "invalid_ends_at", "discount.ends_at"},
		{"negative usage limit", func(d *Discount) { d.UsageLimit = -1 }, "invalid_usage_limit", "discount.usage_limit"},
		{"negative per-buyer limit", func(d *Discount) { d.UsageLimitPerBuyer = -1 }, "invalid_usage_limit", "discount.usage_limit_per_buyer"},
		{"negative priority", func(d *Discount) { d.Priority = -1 }, "invalid_priority", "discount.priority"},
		{"negative min_subtotal", func(d *Discount) { d.MinSubtotal = -1 }, "invalid_min_subtotal", "discount.min_subtotal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := ok()
			tc.mut(&d)
			wantInvalid(t, validateDiscount(&d), tc.code, tc.field)
		})
	}
}
