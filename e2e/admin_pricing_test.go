package e2e

import (
	"context"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// Shipping rates and discounts from the admin: malformed CEP ranges and an
// expired discount window are refused next to the field with the input
// kept; good forms reach the pricing service in centavos / basis points.
func TestAdminShippingAndDiscounts(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	m := setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)
	b := newBrowser(t, r, "alfa.localhost")
	if p := b.signIn("dona@alfa.com.br", invite(t, r, m.tenantID.String(), "dona@alfa.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	ctx := tenancy.With(context.Background(), m.tenantID)
	pricing := r.ClientsWithToken(operatorToken).Pricing

	list := b.do("GET", "/admin/frete", nil)
	if list.status != 200 || !strings.Contains(list.body, "SEDEX") || !strings.Contains(list.body, "R$ 15,00") {
		t.Fatalf("shipping page: %d\n%s", list.status, list.body)
	}
	token := csrfOf(t, list)
	rate := url.Values{"_csrf": {token}, "title": {"Motoboy"}, "carrier": {"Loggi"}, "price": {"12,5"}, "free_above": {"300"},
		"regions": {"sp"}, "cep_ranges": {"01000-000 a 05999-999\n09999-999 a 01000-000"}, "min_days": {"0"}, "max_days": {"1"}, "active": {"on"}}
	p := b.do("POST", "/admin/frete/nova", rate)
	if e := fieldError("cep_ranges").FindStringSubmatch(p.body); p.status != 422 || e == nil || !strings.Contains(e[1], "Linha 2") {
		t.Fatalf("reversed CEP range: %d\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, "09999-999 a 01000-000</textarea>") || !strings.Contains(p.body, `value="Motoboy"`) || !strings.Contains(p.body, `value="12,5"`) {
		t.Fatal("rate input lost")
	}
	rate.Set("cep_ranges", "01000-000 a 05999-999\n0100-000 a 2")
	if p := b.do("POST", "/admin/frete/nova", rate); fieldError("cep_ranges").FindString(p.body) == "" || !strings.Contains(p.body, "faixa de CEP inválida") {
		t.Fatalf("malformed CEP: %d", p.status)
	}
	rate.Set("cep_ranges", "01000-000 a 05999-999\n08000000 - 08499999")
	if p := b.do("POST", "/admin/frete/nova", rate); p.status != 303 {
		t.Fatalf("rate: %d\n%s", p.status, p.body)
	}
	rates, err := pricing.ListShippingRates(ctx, connect.NewRequest(&pricingv1.ListShippingRatesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var moto *pricingv1.ShippingRate
	for _, rt := range rates.Msg.GetRates() {
		if rt.GetTitle() == "Motoboy" {
			moto = rt
		}
	}
	if moto == nil || moto.GetPrice() != 1250 || moto.GetFreeAbove() != 30000 || len(moto.GetCepRanges()) != 2 || moto.GetCepRanges()[1].GetFrom() != "08000000" || moto.GetRegions()[0] != "SP" {
		t.Fatalf("stored rate %+v", moto)
	}

	// Discounts.
	dl := b.do("GET", "/admin/descontos", nil)
	if dl.status != 200 || !strings.Contains(dl.body, "BEMVINDO10") || !strings.Contains(dl.body, "10 %") {
		t.Fatalf("discounts page: %d\n%s", dl.status, dl.body)
	}
	yesterday := time.Now().Add(-24 * time.Hour).Format("2006-01-02T15:04")
	disc := url.Values{"_csrf": {token}, "code": {"natal25"}, "title": {"Natal"}, "kind": {"percent"}, "value": {"12,5"},
		"ends_at": {yesterday}, "active": {"on"}, "combinable": {"on"}}
	p = b.do("POST", "/admin/descontos/novo", disc)
	if e := fieldError("ends_at").FindStringSubmatch(p.body); p.status != 422 || e == nil || !strings.Contains(e[1], "já passou") {
		t.Fatalf("expired window: %d\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, `value="natal25"`) || !strings.Contains(p.body, `value="`+yesterday+`"`) || !strings.Contains(p.body, `value="12,5"`) {
		t.Fatal("discount input lost")
	}
	disc.Set("starts_at", time.Now().Add(72*time.Hour).Format("2006-01-02T15:04"))
	disc.Set("ends_at", time.Now().Add(48*time.Hour).Format("2006-01-02T15:04"))
	if p := b.do("POST", "/admin/descontos/novo", disc); fieldError("ends_at").FindString(p.body) == "" || !strings.Contains(p.body, "depois do início") {
		t.Fatalf("end before start: %d", p.status)
	}
	disc.Set("ends_at", time.Now().Add(96*time.Hour).Format("2006-01-02T15:04"))
	disc.Set("value", "150")
	if p := b.do("POST", "/admin/descontos/novo", disc); fieldError("value").FindString(p.body) == "" {
		t.Fatalf("150 %% accepted: %d", p.status)
	}
	disc.Set("value", "12,5")
	if p := b.do("POST", "/admin/descontos/novo", disc); p.status != 303 {
		t.Fatalf("discount: %d\n%s", p.status, p.body)
	}
	disc.Set("code", "BEMVINDO10")
	if p := b.do("POST", "/admin/descontos/novo", disc); fieldError("code").FindString(p.body) == "" {
		t.Fatalf("duplicate code: %d\n%s", p.status, p.body)
	}
	ds, err := pricing.ListDiscounts(ctx, connect.NewRequest(&pricingv1.ListDiscountsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var natal *pricingv1.Discount
	for _, d := range ds.Msg.GetDiscounts() {
		if d.GetCode() == "NATAL25" {
			natal = d
		}
	}
	if natal == nil || natal.GetValue() != 1250 || natal.GetKind() != pricingv1.Discount_KIND_PERCENT || natal.GetEndsAt() == nil || natal.GetStartsAt() == nil {
		t.Fatalf("stored discount %+v", natal)
	}
	// A merchant admin invites a colleague: a one-time link to choose the
	// password is shown once; the list marks the invitation pending until
	// it is used; inviting again gives a new link and kills the old one; a
	// staff member cannot invite.
	linkOf := func(p page) string {
		t.Helper()
		m := regexp.MustCompile(`id="invite-link">http://alfa\.localhost(/admin/senha\?token=[A-Za-z0-9_-]{43})<`).FindStringSubmatch(p.body)
		if p.status != 200 || m == nil {
			t.Fatalf("invite: %d\n%s", p.status, p.body)
		}
		return html.UnescapeString(m[1])
	}
	inv := b.do("POST", "/admin/usuarios", url.Values{"_csrf": {token}, "email": {"caixa@alfa.com.br"}, "role": {"staff"}})
	first := linkOf(inv)
	if !strings.Contains(inv.body, "Convite criado para caixa@alfa.com.br") || strings.Contains(inv.body, `id="invite-replaced"`) {
		t.Fatalf("invite page:\n%s", inv.body)
	}
	pendingRow := regexp.MustCompile(`<tr data-user="caixa@alfa.com.br">.*?data-invitation="pendente">convite pendente</span> <span class="hint">link válido até (\d\d/\d\d/\d{4} \d\d:\d\d)</span>`)
	again := b.do("GET", "/admin/usuarios", nil)
	if strings.Contains(again.body, first[len("/admin/senha?token="):]) || pendingRow.FindStringSubmatch(strings.ReplaceAll(again.body, "\n", " ")) == nil {
		t.Fatalf("link shown twice, or the invitation is not pending:\n%s", again.body)
	}
	reinv := b.do("POST", "/admin/usuarios", url.Values{"_csrf": {token}, "email": {"caixa@alfa.com.br"}, "role": {"staff"}})
	second := linkOf(reinv)
	if second == first || !strings.Contains(reinv.body, "Novo convite para caixa@alfa.com.br") || !strings.Contains(reinv.body, `id="invite-replaced"`) {
		t.Fatalf("invite again:\n%s", reinv.body)
	}
	staff := newBrowser(t, r, "alfa.localhost")
	if p := staff.do("GET", first, nil); p.status != 404 || !strings.Contains(p.body, `id="link-invalid"`) {
		t.Fatalf("the first link after a new invitation: %d", p.status)
	}
	setPW := staff.do("GET", second, nil)
	if setPW.status != 200 || !strings.Contains(setPW.body, `<strong id="link-email">caixa@alfa.com.br</strong>`) {
		t.Fatalf("set-password page: %d\n%s", setPW.status, setPW.body)
	}
	pwForm := url.Values{"_csrf": {csrfOf(t, setPW)}, "token": {second[len("/admin/senha?token="):]}, "password": {"senha-do-caixa-1"}, "password_again": {"senha-do-caixa-1"}}
	if p := staff.do("POST", "/admin/senha", pwForm); p.status != 303 || p.location != "/admin/entrar?ok=senha" {
		t.Fatalf("set password: %d %s", p.status, p.location)
	}
	if p := staff.do("POST", "/admin/senha", pwForm); p.status != 404 {
		t.Fatalf("the link used twice: %d", p.status)
	}
	if p := staff.signIn("caixa@alfa.com.br", "senha-do-caixa-1"); p.status != 303 {
		t.Fatalf("staff sign-in: %d", p.status)
	}
	if p := b.do("GET", "/admin/usuarios", nil); strings.Contains(p.body, "data-invitation=") || !strings.Contains(p.body, `<tr data-user="caixa@alfa.com.br">`) {
		t.Fatalf("after the link, still pending:\n%s", p.body)
	}
	if dup := b.do("POST", "/admin/usuarios", url.Values{"_csrf": {token}, "email": {"caixa@alfa.com.br"}}); dup.status != 422 || fieldError("email").FindString(dup.body) == "" || strings.Contains(dup.body, `id="invite-link"`) {
		t.Fatalf("duplicate invite: %d", dup.status)
	}
	staffToken := csrfOf(t, staff.do("GET", "/admin/usuarios", nil))
	if p := staff.do("POST", "/admin/usuarios", url.Values{"_csrf": {staffToken}, "email": {"x@alfa.com.br"}, "role": {"admin"}}); p.status != 403 {
		t.Fatalf("staff invites: %d", p.status)
	}

	// Agent API keys: the secret is shown once, stored hashed; revoke.
	kp := b.do("POST", "/admin/agentes", url.Values{"_csrf": {token}, "agent_profile_url": {"ftp://agente"}, "label": {"Agente X"}})
	if kp.status != 422 || fieldError("agent_profile_url").FindString(kp.body) == "" || !strings.Contains(kp.body, `value="Agente X"`) {
		t.Fatalf("bad profile URL: %d\n%s", kp.status, kp.body)
	}
	kp = b.do("POST", "/admin/agentes", url.Values{"_csrf": {token}, "agent_profile_url": {"https://agente.example/perfil.json"}, "label": {"Agente X"}})
	secret := regexp.MustCompile(`id="api-key-secret">([^<]+)<`).FindStringSubmatch(kp.body)
	if kp.status != 200 || secret == nil || !strings.HasPrefix(secret[1], "bcp_") {
		t.Fatalf("create key: %d\n%s", kp.status, kp.body)
	}
	if again := b.do("GET", "/admin/agentes", nil); strings.Contains(again.body, secret[1]) || !strings.Contains(again.body, "agente.example") {
		t.Fatal("API key secret shown twice, or the key is not listed")
	}
	keys, err := operatorClient(r).ListAPIKeys(ctx, connect.NewRequest(&tenantsv1.ListAPIKeysRequest{Tenant: m.tenantID.String()}))
	if err != nil || len(keys.Msg.GetApiKeys()) != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	keyID := keys.Msg.GetApiKeys()[0].GetId()
	// Another merchant's admin cannot revoke it by URL.
	other := setupMerchant(t, r, "Loja Beta", "beta.localhost", 0)
	ob := newBrowser(t, r, "beta.localhost")
	if p := ob.signIn("dono@beta.com.br", invite(t, r, other.tenantID.String(), "dono@beta.com.br")); p.status != 303 {
		t.Fatal("beta sign-in")
	}
	if p := ob.do("POST", "/admin/agentes/"+keyID+"/revogar", url.Values{"_csrf": {csrfOf(t, ob.do("GET", "/admin/agentes", nil))}}); p.status != 404 {
		t.Fatalf("beta revokes alfa's key: %d", p.status)
	}
	if p := b.do("POST", "/admin/agentes/"+keyID+"/revogar", url.Values{"_csrf": {token}}); p.status != 303 {
		t.Fatalf("revoke: %d", p.status)
	}
	keys, _ = operatorClient(r).ListAPIKeys(ctx, connect.NewRequest(&tenantsv1.ListAPIKeysRequest{Tenant: m.tenantID.String()}))
	if keys.Msg.GetApiKeys()[0].GetRevokeTime() == nil {
		t.Fatal("key not revoked")
	}

	// Store settings: links and consent purposes.
	st := b.do("GET", "/admin/configuracoes", nil)
	if st.status != 200 || !strings.Contains(st.body, "https://alfa.localhost/privacidade") {
		t.Fatalf("settings page: %d\n%s", st.status, st.body)
	}
	set := url.Values{"_csrf": {token}, "link_privacy_policy": {"https://alfa.localhost/privacidade"}, "link_faq": {"alfa.localhost/faq"},
		"consent_marketing": {"on"}, "consent_analytics": {"on"}, "ttl_hours": {"2"}}
	if p := b.do("POST", "/admin/configuracoes", set); p.status != 422 || fieldError("link_faq").FindString(p.body) == "" || !strings.Contains(p.body, `value="alfa.localhost/faq"`) {
		t.Fatalf("bad FAQ link: %d\n%s", p.status, p.body)
	}
	set.Set("link_faq", "https://alfa.localhost/faq")
	if p := b.do("POST", "/admin/configuracoes", set); p.status != 303 {
		t.Fatalf("settings: %d\n%s", p.status, p.body)
	}
	gs, err := r.Clients.Tenants.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: m.tenantID.String()}))
	if err != nil || len(gs.Msg.GetSettings().GetLinks()) != 2 || len(gs.Msg.GetSettings().GetConsentPurposes()) != 2 || gs.Msg.GetSettings().GetCheckoutTtlSeconds() != 7200 {
		t.Fatalf("stored settings %v %v", gs, err)
	}

	// The edit form shows what is stored.
	if p := b.do("GET", "/admin/descontos/"+natal.GetId(), nil); !strings.Contains(p.body, `value="12,5"`) || !strings.Contains(p.body, `value="NATAL25"`) {
		t.Fatalf("edit form:\n%s", p.body)
	}
}
