package e2e

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// A new merchant in a real browser (issue 34): the invitation link sets
// the password once; the dashboard's "Primeiros passos" lists what is
// missing, each with the page that fixes it, and says "Pronto para
// vender" once everything is done; the operator console's list shows
// the merchant's state before and after.
func TestBrowserOnboardingChecklist(t *testing.T) {
	const host = "passos.localhost"
	chromiumPath(t)
	d := testdb.New(t)
	r := startConsolePlatform(t, d.AppURL)
	ctx := context.Background()
	ops := r.ClientsWithToken(operatorToken)
	tr, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja Passos", Domains: []string{host}, Environment: tenantsv1.Environment_ENVIRONMENT_SANDBOX,
	}))
	if err != nil {
		t.Fatal(err)
	}
	tid := uuid.MustParse(tr.Msg.GetTenant().GetId())
	tctx := tenancy.With(ctx, tid)
	inv, err := ops.Tenants.InviteMerchantUser(ctx, connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: tid.String(), Email: "dona@passos.com.br", PasswordLink: true}))
	if err != nil {
		t.Fatal(err)
	}
	c := newChrome(t, r)

	// The operator console's list: 1 of 5 (the domain) before anything.
	op := c.tab(true)
	op.open(consoleHost, "/entrar")
	op.fill("input[name=token]", operatorToken)
	op.submit("main button[type=submit]")
	if got := op.text(`[data-readiness="loja-passos"]`); got != "1/5 prontos" {
		t.Fatalf("console readiness before: %q", got)
	}
	op.screenshot("console-antes")

	// The invitation link: choose the password, then sign in with it.
	adm := c.tab(true)
	if st := adm.open(host, "/admin/senha?token="+inv.Msg.GetPasswordToken()); st != 200 || adm.text("#link-email") != "dona@passos.com.br" {
		t.Fatalf("set-password page: %d", st)
	}
	adm.fill(`input[name=password]`, "senha-da-dona-1")
	adm.fill(`input[name=password_again]`, "senha-da-dona-1")
	adm.screenshot("definir-senha")
	if st := adm.submit(`form[action="/admin/senha"] button[type=submit]`); st != 200 || adm.location() != adm.url(host, "/admin/entrar?ok=senha") ||
		adm.text(".notice") != "Senha definida. Entre com seu e-mail e a nova senha." {
		t.Fatalf("set password: %d at %s", st, adm.location())
	}
	adm.fill(`input[name=email]`, "dona@passos.com.br")
	adm.fill(`input[name=password]`, "senha-da-dona-1")
	if st := adm.submit(`form[action="/admin/entrar"] button[type=submit]`); st != 200 || adm.location() != adm.url(host, "/admin/") {
		t.Fatalf("sign-in: %d at %s", st, adm.location())
	}
	// The link is used up.
	other := c.tab(true)
	if st := other.open(host, "/admin/senha?token="+inv.Msg.GetPasswordToken()); st != 404 || !strings.Contains(other.text("#link-invalid"), "Este link não funciona mais") {
		t.Fatalf("the link a second time: %d", st)
	}

	// Primeiros passos: what is missing, with the page that fixes it.
	if got := adm.text(`[data-section="primeiros-passos"] h2`); got != "Primeiros passos" {
		t.Fatalf("dashboard section: %q", got)
	}
	if got := adm.text("[data-checklist-count]"); got != "1 de 5 prontos" {
		t.Fatalf("count: %q", got)
	}
	wantStates := func(want map[string]string) {
		t.Helper()
		for key, state := range want {
			got := eval[string](adm, `document.querySelector('[data-item="`+key+`"]').dataset.state`)
			if got != state {
				t.Errorf("item %s: %q, want %q", key, got, state)
			}
		}
	}
	wantStates(map[string]string{"domain": "feito", "payment_handler": "falta", "product": "falta", "shipping": "falta", "agent_access": "falta", "ap2": "opcional"})
	if got := adm.text(`[data-item="payment_handler"] .checklist-detail`); got != "Nenhum meio de pagamento configurado." {
		t.Fatalf("payment detail: %q", got)
	}
	links := eval[[]string](adm, `Array.from(document.querySelectorAll('[data-section="primeiros-passos"] li a')).map(a => a.closest('li').dataset.item + ' ' + a.getAttribute('href'))`)
	if strings.Join(links, ",") != "payment_handler /admin/pagamentos,product /admin/produtos,shipping /admin/frete,agent_access /admin/agentes" {
		t.Fatalf("fix links: %q", links)
	}
	adm.screenshot("primeiros-passos")
	if st := adm.navigation("follow the payment link", chromedp.Click(chromedp.CSS(`[data-item="payment_handler"] a`))); st != 200 || adm.location() != adm.url(host, "/admin/pagamentos") {
		t.Fatalf("payment link: %d at %s", st, adm.location())
	}

	// Everything done, through the services as the admin's pages do.
	if _, err := ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid.String(),
		Handler: &tenantsv1.PaymentHandler{Id: "pix", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`, Environment: "sandbox"}})); err != nil {
		t.Fatal(err)
	}
	if res, err := ops.Payments.TestHandler(tctx, connect.NewRequest(&paymentsv1.TestHandlerRequest{HandlerId: "pix", BaseUrl: "http://" + host})); err != nil || !res.Msg.GetOk() {
		t.Fatalf("handler test: %v %v", res, err)
	}
	if _, err := ops.Catalog.CreateProduct(tctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Title: "Vaso de Barro", Active: true, Variants: []*catalogv1.Variant{{Sku: "VASO-1", Title: "Vaso de Barro", Price: 4990, Stock: 3, Active: true}},
	}})); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Pricing.SetPickupLocation(tctx, connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: &pricingv1.PickupLocation{
		Name: "Loja Passos", StreetAddress: "Rua das Flores, 10", AddressLocality: "Recife", AddressRegion: "PE", PostalCode: "50010000", AddressCountry: "BR", Active: true,
	}})); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Tenants.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: tid.String(), AgentProfileUrl: "https://agente.example/profile.json"})); err != nil {
		t.Fatal(err)
	}
	adm.open(host, "/admin/")
	if got := adm.text(`[data-checklist="pronto"]`); got != "Pronto para vender Agentes já podem comprar na sua loja." {
		t.Fatalf("ready: %q", got)
	}
	wantStates(map[string]string{"domain": "feito", "payment_handler": "feito", "product": "feito", "shipping": "feito", "agent_access": "feito", "ap2": "opcional"})
	if got := adm.text(`[data-item="shipping"] .checklist-detail`); got != "0 tarifas de frete e 1 ponto de retirada ativos." {
		t.Fatalf("shipping detail: %q", got)
	}
	if got := adm.text(`[data-item="payment_handler"] .checklist-detail`); !strings.HasPrefix(got, "pix (sandbox: só pagamentos de teste): conexão testada com sucesso em ") ||
		!strings.HasSuffix(got, " (horário de Brasília).") {
		t.Fatalf("payment detail: %q", got)
	}
	if n := eval[int](adm, `document.querySelectorAll('[data-section="primeiros-passos"] li a').length`); n != 0 {
		t.Fatalf("%d fix links left", n)
	}
	adm.screenshot("pronto-para-vender")

	op.open(consoleHost, "/lojas")
	if got := op.text(`[data-readiness="loja-passos"]`); got != "pronto para vender" {
		t.Fatalf("console readiness after: %q", got)
	}
	op.screenshot("console-depois")
}
