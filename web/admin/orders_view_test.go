package admin

import (
	"net/url"
	"slices"
	"testing"
	"time"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// The orders list's filters: São Paulo days to a half-open range in Unix
// seconds, unknown values dropped, errors next to their fields, and the
// links that keep them.
func TestOrderFilters(t *testing.T) {
	f, req := parseOrderFilters(url.Values{"q": {" #1007 "}, "status": {"fulfilled"}, "pagamento": {"pix"}, "de": {"2026-12-01"}, "ate": {"2026-12-02"}})
	since := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC).Unix() // midnight in São Paulo (UTC-3)
	until := time.Date(2026, 12, 3, 3, 0, 0, 0, time.UTC).Unix()
	if len(f.Errors) != 0 || req.GetQuery() != "#1007" || req.GetStatus() != "fulfilled" || req.GetPaymentMethod() != "pix" || req.GetSinceUnix() != since || req.GetUntilUnix() != until {
		t.Fatalf("filters %+v → %v", f, req)
	}
	if got := string(href("/admin/pedidos.csv", f.values())); got != "/admin/pedidos.csv?ate=2026-12-02&de=2026-12-01&pagamento=pix&q=%231007&status=fulfilled" {
		t.Fatalf("CSV link %q", got)
	}
	f, req = parseOrderFilters(url.Values{"status": {"shipped"}, "pagamento": {"boleto"}, "de": {"01/12/2026"}})
	if f.Status != "" || f.Payment != "" || req.GetStatus() != "" || req.GetPaymentMethod() != "" || req.GetSinceUnix() != 0 || f.Errors["de"] == "" {
		t.Fatalf("bad filters %+v → %v", f, req)
	}
	f, req = parseOrderFilters(url.Values{"de": {"2026-12-02"}, "ate": {"2026-12-01"}})
	if f.Errors["ate"] != "A data final vem depois da inicial." || req.GetUntilUnix() != 0 {
		t.Fatalf("reversed range %+v → %v", f, req)
	}
	if f, _ := parseOrderFilters(url.Values{}); f.Active() {
		t.Fatal("no filter is active")
	}
	if got := string(href("/admin/pedidos.csv", nil)); got != "/admin/pedidos.csv" {
		t.Fatalf("unfiltered CSV link %q", got)
	}
	for in, want := range map[string]string{"Ana": "Ana", "=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")", "+55": "'+55", "@x": "'@x", "": ""} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
}

// An order created before details were recorded still shows where it
// goes, from its fulfillment expectations.
func TestOrderDetailsOfAnOlderOrder(t *testing.T) {
	o := &bcp.Order{Fulfillment: bcp.OrderFulfillment{Expectations: []bcp.Expectation{{MethodType: bcp.MethodShipping, Description: "PAC — Chega em 5 a 9 dias úteis",
		Destination: bcp.PostalAddress{StreetAddress: "Rua Augusta, 500", AddressLocality: "São Paulo", AddressRegion: "SP", PostalCode: "01305000", AddressCountry: "BR"}}}}}
	d := newOrderDetails(o, nil)
	if d.Recorded || len(d.Deliveries) != 1 || d.Deliveries[0].Method != "Envio" || d.Deliveries[0].Option != "PAC — Chega em 5 a 9 dias úteis" ||
		!slices.Equal(d.Deliveries[0].Lines, []string{"Rua Augusta, 500", "São Paulo – SP", "CEP 01305-000"}) || d.Payment.Method != "" {
		t.Fatalf("details %+v", d)
	}
}

// Stock badges: only active variants count.
func TestProductBadges(t *testing.T) {
	v := func(stock int64, active bool) *catalogv1.Variant {
		return &catalogv1.Variant{Stock: stock, Active: active}
	}
	for _, c := range []struct {
		p    *catalogv1.Product
		want string
	}{
		{&catalogv1.Product{Active: true, Variants: []*catalogv1.Variant{v(6, true)}}, "Ativo"},
		{&catalogv1.Product{Active: true, Variants: []*catalogv1.Variant{v(5, true), v(50, true)}}, "Estoque baixo"},
		{&catalogv1.Product{Active: true, Variants: []*catalogv1.Variant{v(0, true), v(9, false)}}, "Esgotado"},
		{&catalogv1.Product{Active: true}, "Esgotado"},
		{&catalogv1.Product{Active: false, Variants: []*catalogv1.Variant{v(0, true)}}, "Inativo"},
	} {
		if got := newProductRow(c.p).Badge; got != c.want {
			t.Errorf("%v: %q, want %q", c.p, got, c.want)
		}
	}
	p := &catalogv1.Product{ImageUrl: "http://inseguro.example/a.jpg", Variants: []*catalogv1.Variant{{ImageUrl: "https://cdn.example/b.jpg"}}}
	if got := newProductRow(p).Thumb; got != "https://cdn.example/b.jpg" {
		t.Errorf("thumbnail %q", got)
	}
}
