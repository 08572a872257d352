package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/web"
	"github.com/bcpdev/bcp/web/internal/webtest"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// These tests run the page against the real platform (e2e-style: real
// services on PostgreSQL, checkouts created by an agent over MCP through
// the edge), with the handler mounted behind a Host → tenant lookup like
// the edge's.

const (
	operatorToken = "test-operator-token"
	internalToken = "test-internal-token"
)

func startPlatform(t *testing.T) *platform.Running {
	t.Helper()
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: []byte("0123456789abcdef0123456789abcdef"),
		Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatalf("start platform: %v", err)
	}
	t.Cleanup(r.Stop)
	return r
}

type merchant struct {
	host   string
	tenant uuid.UUID
	rates  map[string]string // title → rate id
}

// setupMerchant onboards a development merchant (sandbox Pix handler, a
// catalog with an HTML-looking title, two shipping rates) through the
// services' APIs, as e2e/checkout_test.go does.
func setupMerchant(t *testing.T, r *platform.Running, name, host string) merchant {
	t.Helper()
	ctx := context.Background()
	ops := r.ClientsWithToken(operatorToken)
	tr, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: name, Domains: []string{host}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := merchant{host: host, tenant: uuid.MustParse(tr.Msg.GetTenant().GetId()), rates: map[string]string{}}
	if _, err := ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: m.tenant.String(),
		Handler: &tenantsv1.PaymentHandler{Id: "pix_" + tr.Msg.GetTenant().GetSlug(), Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}})); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: m.tenant.String(), Settings: &tenantsv1.Settings{
		Links: []*tenantsv1.Link{{Type: "privacy_policy", Url: "https://" + host + "/privacidade"}, {Type: "terms_of_service", Url: "https://" + host + "/termos"}},
	}})); err != nil {
		t.Fatal(err)
	}
	tctx := tenancy.With(ctx, m.tenant)
	for _, p := range []*catalogv1.Product{
		{Id: "prd_cam", Title: "Camiseta", Active: true, Variants: []*catalogv1.Variant{{Id: "var_cam", Sku: "CAM", Title: "Camiseta M", Price: 5990, Stock: 10, Active: true}}},
		{Id: "prd_xss", Title: "Caneca", Active: true, Variants: []*catalogv1.Variant{{Id: "var_xss", Sku: "XSS", Title: `Caneca <script>alert("x")</script>`, Price: 1234567, Stock: 10, Active: true}}},
	} {
		if _, err := ops.Catalog.CreateProduct(tctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: p})); err != nil {
			t.Fatal(err)
		}
	}
	for _, rate := range []*pricingv1.ShippingRate{
		{Title: "SEDEX", Price: 3000, MinDays: 1, MaxDays: 3, Active: true, Carrier: "Correios"},
		{Title: "PAC", Price: 1500, MinDays: 5, MaxDays: 9, Active: true, Carrier: "Correios"},
	} {
		resp, err := ops.Pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rate}))
		if err != nil {
			t.Fatal(err)
		}
		m.rates[rate.GetTitle()] = resp.Msg.GetRate().GetId()
	}
	return m
}

// agentProfile is a minimal BCP platform profile with the checkout and
// fulfillment capabilities.
func agentProfile() string {
	caps := []string{}
	for _, c := range []string{"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment"} {
		name := strings.TrimPrefix(c, "br.dev.bcp.shopping.")
		ext := ""
		if name != "checkout" {
			ext = `,"extends":"br.dev.bcp.shopping.checkout"`
		}
		caps = append(caps, fmt.Sprintf(`%q:[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/%s","schema":"https://bcp.dev.br/draft/schemas/shopping/%s.json"%s}]`, c, name, name, ext))
	}
	return `{"ucp":{"version":"2026-07-28",
		"services":{"br.dev.bcp.shopping":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/overview","transport":"mcp","schema":"https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
		"capabilities":{` + strings.Join(caps, ",") + `},
		"payment_handlers":{"br.dev.bcp.pix":[{"id":"agent_pix","version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/pix","schema":"https://bcp.dev.br/draft/schemas/handlers/pix.json"}]}}}`
}

// agent calls the BCP checkout tools on one merchant's host.
type agent struct {
	t       *testing.T
	s       *mcp.ClientSession
	profile string
}

// newAgent connects an MCP session to host, authenticated with a fresh API
// key bound to profile (as e2e/checkout_test.go does).
func newAgent(t *testing.T, r *platform.Running, host, profile string) *agent {
	t.Helper()
	key, err := r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "web-test",
	}))
	if err != nil {
		t.Fatalf("API key for %s: %v", host, err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "web-test-agent", Version: "1.0"}, nil)
	hc := &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, APIKey: key.Msg.GetSecret(), Host: host}}
	s, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + r.PublicAddr + "/bcp/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect MCP client to %s: %v", host, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &agent{t: t, s: s, profile: profile}
}

func (a *agent) call(tool string, args map[string]any) *bcp.Checkout {
	a.t.Helper()
	if _, ok := args["meta"]; !ok {
		args["meta"] = map[string]any{"ucp-agent": map[string]any{"profile": a.profile}}
	}
	res, err := a.s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		a.t.Fatalf("%s: %v", tool, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	c := &bcp.Checkout{}
	if err := json.Unmarshal(raw, c); err != nil || c.ID == "" {
		a.t.Fatalf("%s: no checkout in %s (%v)", tool, raw, err)
	}
	return c
}

func TestHostedPageOnPlatform(t *testing.T) {
	r := startPlatform(t)
	alfa := setupMerchant(t, r, "Loja Alfa", "alfa.localhost")
	beta := setupMerchant(t, r, "Loja Beta", "beta.localhost")
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile()))
	}))
	t.Cleanup(profiles.Close)
	A := newAgent(t, r, alfa.host, profiles.URL+"/agent.json")

	// The handler as the edge will mount it, with the platform's clients.
	w := web.New(web.Options{Checkout: r.Clients.Checkout, Payments: r.Clients.Payments, Tenants: r.Clients.Tenants, Orders: r.Clients.Orders, PublicScheme: "http"})
	srv := webtest.Serve(t, w, map[string]uuid.UUID{alfa.host: alfa.tenant, beta.host: beta.tenant})

	c := A.call("create_checkout", map[string]any{"checkout": map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 2}},
	}})
	// The page lives at the continue_url the checkout service advertises.
	cu, err := url.Parse(c.ContinueURL)
	if err != nil || cu.Path != "/checkout/"+c.ID {
		t.Fatalf("continue_url %q does not point at this page", c.ContinueURL)
	}
	page := webtest.Do(t, srv.URL, "GET", alfa.host, cu.Path, nil, nil)
	if page.Status != http.StatusOK {
		t.Fatalf("page: %d %s", page.Status, page.Body)
	}
	webtest.CheckHeaders(t, "page", page, true)
	webtest.NoInlineScript(t, page.Body)
	for _, want := range []string{"Loja Alfa", "Em andamento", "Camiseta M", "2 × R$ 59,90", "<dt>Subtotal</dt><dd class=\"money\">R$ 119,80</dd>", "<dt>Total</dt><dd class=\"money\">R$ 119,80</dd>", "Política de privacidade", "data-poll"} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// Address, PAC and a product whose title is HTML: escaped, never markup.
	address := map[string]any{"street_address": "Avenida Paulista, 1000", "address_locality": "São Paulo", "address_region": "SP", "postal_code": "01310-100", "address_country": "BR"}
	buyer := map[string]any{"email": "ana@example.com", "first_name": "Ana"}
	c = A.call("update_checkout", map[string]any{"id": c.ID, "checkout": map[string]any{
		"line_items": []any{
			map[string]any{"id": c.LineItems[0].ID, "item": map[string]any{"id": "var_cam"}, "quantity": 2},
			map[string]any{"item": map[string]any{"id": "var_xss"}, "quantity": 1},
		},
		"buyer": buyer,
	}})
	var items []any
	var lineIDs []string
	for _, li := range c.LineItems {
		items = append(items, map[string]any{"id": li.ID, "item": map[string]any{"id": li.Item.ID}, "quantity": li.Quantity})
		lineIDs = append(lineIDs, li.ID)
	}
	c = A.call("update_checkout", map[string]any{"id": c.ID, "checkout": map[string]any{
		"line_items": items, "buyer": buyer,
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "line_item_ids": lineIDs, "destinations": []any{address}}}},
	}})
	method := c.Fulfillment.Methods[0]
	c = A.call("update_checkout", map[string]any{"id": c.ID, "checkout": map[string]any{
		"line_items": items, "buyer": buyer,
		"fulfillment": map[string]any{"methods": []any{map[string]any{
			"id": method.ID, "type": "shipping", "line_item_ids": method.LineItemIDs, "destinations": []any{address},
			"selected_destination_id": *method.SelectedDestinationID,
			"groups":                  []any{map[string]any{"id": method.Groups[0].ID, "selected_option_id": alfa.rates["PAC"]}},
		}}},
	}})
	if c.Status != bcp.StatusReadyForComplete {
		t.Fatalf("status %s, messages %+v", c.Status, c.Messages)
	}
	page = webtest.Do(t, srv.URL, "GET", alfa.host, "/checkout/"+c.ID, nil, nil)
	// 11980 + 1234567 = 1246547; + PAC 1500 = 1248047.
	for _, want := range []string{
		"Caneca &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "1 × R$ 12.345,67",
		"<dt>Subtotal</dt><dd class=\"money\">R$ 12.465,47</dd>", "<dt>Frete</dt><dd class=\"money\">R$ 15,00</dd>", "<dt>Total</dt><dd class=\"money\">R$ 12.480,47</dd>",
		"Avenida Paulista, 1000", "São Paulo – SP", "CEP 01310-100", "PAC · Correios",
	} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page.Body, `<script>alert`) || strings.Contains(page.Body, "ana@example.com") {
		t.Error("unescaped title or buyer e-mail in the page")
	}
	if i, j, k := strings.Index(page.Body, "<dt>Subtotal"), strings.Index(page.Body, "<dt>Frete"), strings.Index(page.Body, "<dt>Total"); !(i >= 0 && i < j && j < k) {
		t.Errorf("totals out of order: %d %d %d", i, j, k)
	}

	// Status JSON: no buyer data, no-store.
	s := webtest.Do(t, srv.URL, "GET", alfa.host, "/checkout/"+c.ID+"/status", nil, nil)
	webtest.CheckHeaders(t, "status", s, true)
	var st map[string]any
	if err := json.Unmarshal([]byte(s.Body), &st); err != nil || st["status"] != "ready_for_complete" || st["state"] != "open" || st["expires_at"] == nil || len(st) != 3 {
		t.Fatalf("status = %d %s", s.Status, s.Body)
	}

	// Another merchant's host, an unknown id, a malformed id: 404, nothing leaked.
	for _, x := range []struct{ host, path string }{
		{beta.host, "/checkout/" + c.ID}, {beta.host, "/checkout/" + c.ID + "/status"},
		{alfa.host, "/checkout/" + ids.New("chk")}, {alfa.host, "/checkout/chk_%3Cscript%3E"},
		{alfa.host, "/orders/" + ids.New("ord")}, // GetOrder is not implemented yet
	} {
		nf := webtest.Do(t, srv.URL, "GET", x.host, x.path, nil, nil)
		if nf.Status != http.StatusNotFound {
			t.Errorf("%s%s: %d, want 404", x.host, x.path, nf.Status)
		}
		for _, leak := range []string{"Camiseta", "Loja Alfa", "Loja Beta", "ana@", "Paulista"} {
			if strings.Contains(nf.Body, leak) {
				t.Errorf("%s%s leaks %q", x.host, x.path, leak)
			}
		}
	}

	// Simulate: no token → 403; a valid token on a checkout with nothing to
	// pay → back to the page; a production deployment → 403.
	nonce := strings.Repeat("B", 43)
	form := url.Values{"csrf_token": {web.CSRFMAC(w, alfa.tenant, c.ID, nonce)}, "attempt_id": {"pay_x"}}
	hdr := http.Header{"Cookie": {web.CSRFCookie + "=" + nonce}, "Sec-Fetch-Site": {"same-origin"}}
	if p := webtest.Do(t, srv.URL, "POST", alfa.host, "/checkout/"+c.ID+"/simulate-payment", hdr, url.Values{"attempt_id": {"pay_x"}}); p.Status != http.StatusForbidden {
		t.Errorf("simulate without token: %d", p.Status)
	}
	sandboxWeb := web.New(web.Options{Checkout: r.Clients.Checkout, Payments: r.Clients.Payments, Tenants: r.Clients.Tenants, CSRFKey: web.CSRFKey(w), Environment: web.EnvironmentSandbox})
	sb := webtest.Serve(t, sandboxWeb, map[string]uuid.UUID{alfa.host: alfa.tenant})
	if p := webtest.Do(t, sb.URL, "POST", alfa.host, "/checkout/"+c.ID+"/simulate-payment", hdr, form); p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/checkout/"+c.ID {
		t.Errorf("simulate with nothing to pay: %d %q", p.Status, p.Header.Get("Location"))
	}
	prodWeb := web.New(web.Options{Checkout: r.Clients.Checkout, Payments: r.Clients.Payments, Tenants: r.Clients.Tenants, CSRFKey: web.CSRFKey(w), Environment: web.EnvironmentProduction})
	prod := webtest.Serve(t, prodWeb, map[string]uuid.UUID{alfa.host: alfa.tenant})
	if p := webtest.Do(t, prod.URL, "POST", alfa.host, "/checkout/"+c.ID+"/simulate-payment", hdr, form); p.Status != http.StatusForbidden {
		t.Errorf("simulate on a production handler: %d, want 403", p.Status)
	}

	// Canceled: a clear message, no polling.
	A.call("cancel_checkout", map[string]any{"id": c.ID, "meta": map[string]any{"ucp-agent": map[string]any{"profile": A.profile}, "idempotency-key": uuid.NewString()}})
	page = webtest.Do(t, srv.URL, "GET", alfa.host, "/checkout/"+c.ID, nil, nil)
	if page.Status != http.StatusOK || !strings.Contains(page.Body, "Este checkout foi cancelado") || strings.Contains(page.Body, "data-poll") {
		t.Errorf("canceled page: %d", page.Status)
	}
	if s := webtest.Do(t, srv.URL, "GET", alfa.host, "/checkout/"+c.ID+"/status", nil, nil); s.Body != `{"status":"canceled","state":"canceled"}`+"\n" {
		t.Errorf("canceled status = %s", s.Body)
	}
}
