package e2e

import (
	"context"
	"html"
	"net/url"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/tenancy"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// The admin checks no rule its services own (UFs, CEPs, discount codes,
// handler ids and names, the checkout lifetime): a bad value typed in a
// form comes back next to its field with the owning service's own message,
// the one a validate_only call of that service answers, and nothing is
// stored.
func TestAdminShowsTheOwnersRules(t *testing.T) {
	s := newShopper(t, 0, "alfa.localhost")
	m := s.merchant["alfa.localhost"]
	b := newBrowser(t, s.r, m.host)
	if p := b.signIn("dona@alfa.com.br", invite(t, s.r, m.tenantID.String(), "dona@alfa.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	token := csrfOf(t, b.do("GET", "/admin/frete", nil))
	ops := s.r.ClientsWithToken(operatorToken)
	ctx := tenancy.With(context.Background(), m.tenantID)
	want := func(what string, p page, field, text string) {
		t.Helper()
		e := fieldError(field).FindStringSubmatch(p.body)
		if p.status != 422 || e == nil || html.UnescapeString(e[1]) != text {
			t.Errorf("%s: %d, %s error %q; want 422 and %q", what, p.status, field, e, text)
		}
	}

	// A pickup point: UF and CEP are pricing's.
	pv, err := ops.Pricing.SetPickupLocation(ctx, connect.NewRequest(&pricingv1.SetPickupLocationRequest{ValidateOnly: true, Location: &pricingv1.PickupLocation{
		Name: "Loja Centro", StreetAddress: "Rua Direita, 10", AddressLocality: "São Paulo", AddressRegion: "XX", PostalCode: "0100-200", AddressCountry: "BR"}}))
	if err != nil {
		t.Fatal(err)
	}
	pricing := ownerSays(t, "pickup", pv.Msg.GetViolations(), "location.address_region", "location.postal_code")
	p := b.do("POST", "/admin/frete/retirada/nova", url.Values{"_csrf": {token}, "name": {"Loja Centro"}, "street_address": {"Rua Direita, 10"},
		"address_locality": {"São Paulo"}, "address_region": {"XX"}, "postal_code": {"0100-200"}, "active": {"on"}})
	want("pickup", p, "postal_code", "CEP inválido: "+pricing["location.postal_code"])
	want("pickup", p, "address_region", "UF inválida: "+pricing["location.address_region"])

	// A shipping rate: the UFs and whether CEPs make a range are pricing's.
	rv, err := ops.Pricing.SetShippingRate(ctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{ValidateOnly: true, Rate: &pricingv1.ShippingRate{
		Title: "Motoboy", Price: 1250, Regions: []string{"SP", "XX"}, CepRanges: []*pricingv1.CepRange{{From: "01000000", To: "05999999"}, {From: "09999999", To: "01000000"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	pricing = ownerSays(t, "rate", rv.Msg.GetViolations(), "rate.regions[1]", "rate.cep_ranges[1]")
	p = b.do("POST", "/admin/frete/nova", url.Values{"_csrf": {token}, "title": {"Motoboy"}, "price": {"12,50"}, "regions": {"sp, xx"},
		"cep_ranges": {"01000-000 a 05999-999\n\n09999-999 a 01000-000"}, "active": {"on"}})
	want("rate", p, "regions", "Valor recusado: "+pricing["rate.regions[1]"])
	want("rate", p, "cep_ranges", "Linha 3: faixa de CEP recusada: "+pricing["rate.cep_ranges[1]"])

	// A discount code: its pattern is pricing's.
	dv, err := ops.Pricing.SetDiscount(ctx, connect.NewRequest(&pricingv1.SetDiscountRequest{ValidateOnly: true, Discount: &pricingv1.Discount{
		Code: "NÃO VALE", Title: "Oi", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000}}))
	if err != nil {
		t.Fatal(err)
	}
	pricing = ownerSays(t, "discount", dv.Msg.GetViolations(), "discount.code")
	p = b.do("POST", "/admin/descontos/novo", url.Values{"_csrf": {token}, "code": {"não vale"}, "title": {"Oi"}, "kind": {"percent"}, "value": {"10"}, "active": {"on"}})
	want("discount", p, "code", "Valor recusado: "+pricing["discount.code"])

	// A card handler: its id and reverse-domain name are the tenants service's.
	hv, err := ops.Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: m.tenantID.String(), ValidateOnly: true,
		Handler: &tenantsv1.PaymentHandler{Id: "cartão x", Name: "Cartão X", AvailableInstrumentsJson: `[{"type":"card"}]`}}))
	if err != nil {
		t.Fatal(err)
	}
	tenants := ownerSays(t, "handler", hv.Msg.GetViolations(), "handler.id", "handler.name")
	p = b.do("POST", "/admin/pagamentos/novo/cartao", url.Values{"_csrf": {token}, "id": {"cartão x"}, "environment": {"sandbox"}, "name": {"Cartão X"},
		"brand": {"visa"}, "credential_type": {"token"}})
	want("handler", p, "id", "Identificador recusado: "+tenants["handler.id"])
	want("handler", p, "name", "Valor recusado: "+tenants["handler.name"])

	// The checkout lifetime: its bounds are the tenants service's (3 minutes).
	sv, err := ops.Tenants.SetSettings(context.Background(), connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: m.tenantID.String(), ValidateOnly: true,
		Settings: &tenantsv1.Settings{CheckoutTtlSeconds: 180}}))
	if err != nil {
		t.Fatal(err)
	}
	tenants = ownerSays(t, "settings", sv.Msg.GetViolations(), "settings.checkout_ttl_seconds")
	p = b.do("POST", "/admin/configuracoes", url.Values{"_csrf": {token}, "name": {"Loja Alfa"}, "ttl_hours": {"0,05"}})
	want("settings", p, "ttl_hours", "Valor recusado: "+tenants["settings.checkout_ttl_seconds"])

	// Nothing was stored.
	if locs, _ := ops.Pricing.ListPickupLocations(ctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{})); len(locs.Msg.GetLocations()) != 0 {
		t.Errorf("%d pickup points stored", len(locs.Msg.GetLocations()))
	}
	if rates, _ := ops.Pricing.ListShippingRates(ctx, connect.NewRequest(&pricingv1.ListShippingRatesRequest{})); len(rates.Msg.GetRates()) != 2 {
		t.Errorf("%d rates, want the 2 of the setup", len(rates.Msg.GetRates()))
	}
	if ds, _ := ops.Pricing.ListDiscounts(ctx, connect.NewRequest(&pricingv1.ListDiscountsRequest{})); len(ds.Msg.GetDiscounts()) != 1 {
		t.Errorf("%d discounts, want the 1 of the setup", len(ds.Msg.GetDiscounts()))
	}
	if st, _ := ops.Tenants.GetSettings(context.Background(), connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: m.tenantID.String()})); st.Msg.GetSettings().GetCheckoutTtlSeconds() != 6*3600 {
		t.Errorf("checkout lifetime %d s stored", st.Msg.GetSettings().GetCheckoutTtlSeconds())
	}
}

// ownerSays is what a service's validate_only call answers, by field; it
// must name each of fields.
func ownerSays[V interface {
	GetField() string
	GetMessage() string
}](t *testing.T, what string, vs []V, fields ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range vs {
		out[v.GetField()] = v.GetMessage()
	}
	for _, f := range fields {
		if out[f] == "" {
			t.Fatalf("%s: the owner says nothing about %s (%v)", what, f, out)
		}
	}
	return out
}
