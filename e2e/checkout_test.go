package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// agentProfile is a platform profile in BCP shape, served by the test on
// loopback (allowed because the test merchants are in development mode).
func agentProfile(caps ...string) string {
	entries := []string{}
	for _, c := range caps {
		name := strings.TrimPrefix(c, "br.dev.bcp.shopping.")
		ext := ""
		if c != "br.dev.bcp.shopping.checkout" && c != "br.dev.bcp.shopping.order" {
			ext = `,"extends":"br.dev.bcp.shopping.checkout"`
		}
		entries = append(entries, fmt.Sprintf(`%q:[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/%s","schema":"https://bcp.dev.br/draft/schemas/shopping/%s.json"%s}]`, c, name, name, ext))
	}
	return `{"ucp":{"version":"2026-07-28",
		"services":{"br.dev.bcp.shopping":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/overview","transport":"mcp","schema":"https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
		"capabilities":{` + strings.Join(entries, ",") + `},
		"payment_handlers":{"br.dev.bcp.pix":[{"id":"agent_pix","version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/pix","schema":"https://bcp.dev.br/draft/schemas/handlers/pix.json"}]}}}`
}

type merchant struct {
	host       string
	pixHandler string
	tenantID   uuid.UUID
	rates      map[string]string // title → rate id
}

// setupMerchant onboards a development merchant with a catalog, two
// shipping rates and a discount code, through the services' APIs.
func setupMerchant(t testing.TB, r *platform.Running, name, host string, priceOffset int64) merchant {
	t.Helper()
	ctx := context.Background()
	ops := r.ClientsWithToken(operatorToken)
	tr, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: name, Domains: []string{host}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := merchant{host: host, pixHandler: "pix_" + tr.Msg.GetTenant().GetSlug(), tenantID: uuid.MustParse(tr.Msg.GetTenant().GetId()), rates: map[string]string{}}
	_, err = ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: m.tenantID.String(),
		Handler: &tenantsv1.PaymentHandler{Id: "pix_" + tr.Msg.GetTenant().GetSlug(), Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ops.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: m.tenantID.String(), Settings: &tenantsv1.Settings{
		Links:           []*tenantsv1.Link{{Type: "privacy_policy", Url: "https://" + host + "/privacidade"}, {Type: "terms_of_service", Url: "https://" + host + "/termos"}},
		ConsentPurposes: []string{"marketing"},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	tctx := tenancy.With(ctx, m.tenantID)
	for _, p := range []*catalogv1.Product{
		{Id: "prd_cam", Title: "Camiseta", Active: true, Variants: []*catalogv1.Variant{{Id: "var_cam", Sku: "CAM", Title: "Camiseta M", Price: 5990 + priceOffset, Stock: 10, Active: true}}},
		{Id: "prd_can", Title: "Caneca", Active: true, Variants: []*catalogv1.Variant{{Id: "var_can", Sku: "CAN", Title: "Caneca 350 ml", Price: 3990, Stock: 2, Active: true}}},
		{Id: "prd_out", Title: "Chinelo", Active: true, Variants: []*catalogv1.Variant{{Id: "var_out", Sku: "CHI", Title: "Chinelo 40", Price: 2990, Stock: 0, Active: true}}},
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
	if _, err := ops.Pricing.SetDiscount(tctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "BEMVINDO10", Title: "10% de boas-vindas", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, Active: true, Combinable: true, Priority: 1,
	}})); err != nil {
		t.Fatal(err)
	}
	return m
}

// agentSession is an MCP client session whose requests reach host,
// authenticated with a fresh API key bound to profile.
func agentSession(t *testing.T, r *platform.Running, host, profile string) *mcp.ClientSession {
	t.Helper()
	key, err := r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "e2e",
	}))
	if err != nil {
		t.Fatalf("API key for %s: %v", profile, err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1.0"}, nil)
	hc := &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, APIKey: key.Msg.GetSecret(), Host: host}}
	s, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + r.PublicAddr + "/bcp/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect MCP client to %s: %v", host, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type agent struct {
	t       *testing.T
	s       *mcp.ClientSession
	profile string
	v       *bcpschema.Validator
}

// call invokes a tool and returns the structured result as a map and the
// decoded checkout; every result is validated against the BCP schemas.
func (a *agent) call(tool string, args map[string]any) (map[string]any, *bcp.Checkout) {
	a.t.Helper()
	res, err := a.callErr(tool, args)
	if err != nil {
		a.t.Fatalf("%s: %v", tool, err)
	}
	return res, decodeCheckout(a.t, res)
}

func (a *agent) callErr(tool string, args map[string]any) (map[string]any, error) {
	a.t.Helper()
	if _, ok := args["meta"]; !ok {
		args["meta"] = map[string]any{"ucp-agent": map[string]any{"profile": a.profile}}
	}
	res, err := a.s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		a.t.Fatal(err)
	}
	if len(res.Content) != 1 {
		a.t.Fatalf("%s: %d content blocks, want 1 text block", tool, len(res.Content))
	}
	if text, ok := res.Content[0].(*mcp.TextContent); !ok || !jsonEqual(text.Text, string(raw)) {
		a.t.Fatalf("%s: text content differs from structuredContent", tool)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		a.t.Fatal(err)
	}
	ucp, _ := out["ucp"].(map[string]any)
	if ucp["status"] == "error" {
		if err := a.v.ValidateErrorResponse(raw); err != nil {
			a.t.Fatalf("%s: error_response fails the schema: %v\n%s", tool, err, raw)
		}
	} else {
		op := map[string]bcpschema.Op{"create_checkout": bcpschema.OpCreate, "update_checkout": bcpschema.OpUpdate, "get_checkout": bcpschema.OpRead,
			"cancel_checkout": bcpschema.OpCancel, "complete_checkout": bcpschema.OpComplete}[tool]
		if tool == "get_order" {
			if err := a.v.ValidateOrder(raw); err != nil {
				a.t.Fatalf("get_order: response fails the order schema: %v\n%s", err, raw)
			}
		} else if err := a.v.ValidateCheckoutResponse(op, raw); err != nil {
			a.t.Fatalf("%s: response fails the checkout schema: %v\n%s", tool, err, raw)
		}
	}
	return out, nil
}

func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func decodeCheckout(t *testing.T, m map[string]any) *bcp.Checkout {
	t.Helper()
	raw, _ := json.Marshal(m)
	c := &bcp.Checkout{}
	if err := json.Unmarshal(raw, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func totals(c *bcp.Checkout) map[string]int64 {
	out := map[string]int64{}
	for _, t := range c.Totals {
		out[t.Type] += t.Amount
	}
	return out
}

func hasMessage(c *bcp.Checkout, typ, code, path string) bool {
	return slices.ContainsFunc(c.Messages, func(m bcp.Message) bool { return m.Type == typ && m.Code == code && m.Path == path })
}

func rpcError(t *testing.T, err error) (int64, map[string]any) {
	t.Helper()
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	var data map[string]any
	_ = json.Unmarshal(e.Data, &data)
	return e.Code, data
}

func TestCheckoutOverMCPTwoMerchants(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	alfa := setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)
	beta := setupMerchant(t, r, "Loja Beta", "beta.localhost", 1000)

	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch req.URL.Path {
		case "/agent.json":
			_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount", "br.dev.bcp.shopping.buyer_consent")))
		case "/no-extensions.json":
			_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout")))
		case "/cart-only.json":
			_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.order")))
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(profiles.Close)
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	A := &agent{t: t, s: agentSession(t, r, alfa.host, profiles.URL+"/agent.json"), profile: profiles.URL + "/agent.json", v: v}
	B := &agent{t: t, s: agentSession(t, r, beta.host, profiles.URL+"/agent.json"), profile: profiles.URL + "/agent.json", v: v}

	tools, err := A.s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema != nil {
			t.Errorf("tool %s lacks a description or an input schema, or lists an output schema", tool.Name)
		}
	}
	for _, want := range []string{"create_checkout", "get_checkout", "update_checkout", "cancel_checkout"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list = %v, missing %s", names, want)
		}
	}

	// 1. Create: priced, incomplete, tells what is missing.
	res, c := A.call("create_checkout", map[string]any{"checkout": map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 2}},
	}})
	if c.Status != bcp.StatusIncomplete || c.Currency != "BRL" || !strings.HasPrefix(c.ID, "chk_") {
		t.Fatalf("create: status %s currency %s id %s", c.Status, c.Currency, c.ID)
	}
	if got := totals(c); got["subtotal"] != 11980 || got["total"] != 11980 {
		t.Fatalf("create totals = %v, want subtotal 11980 and total 11980", got)
	}
	li := c.LineItems[0]
	if li.Item.Title != "Camiseta M" || li.Item.Price != 5990 || li.Quantity != 2 || li.ID == "" {
		t.Fatalf("line = %+v", li)
	}
	if !hasMessage(c, "error", "missing", "$.buyer.email") || !hasMessage(c, "error", "missing", "$.fulfillment.methods") {
		t.Fatalf("create messages = %+v", c.Messages)
	}
	if c.ContinueURL == "" || !strings.Contains(c.ContinueURL, c.ID) || c.ExpiresAt == nil {
		t.Fatalf("continue_url %q, expires_at %v", c.ContinueURL, c.ExpiresAt)
	}
	if len(c.Links) != 2 || c.Links[0].Type != "privacy_policy" {
		t.Fatalf("links = %+v", c.Links)
	}
	ucp := res["ucp"].(map[string]any)
	capsGot := ucp["capabilities"].(map[string]any)
	for _, want := range []string{"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount", "br.dev.bcp.shopping.buyer_consent"} {
		if _, ok := capsGot[want]; !ok {
			t.Errorf("negotiated capabilities %v lack %s", capsGot, want)
		}
	}
	if _, ok := capsGot["br.dev.bcp.shopping.order"]; ok {
		t.Errorf("order capability must not appear in a checkout response: %v", capsGot)
	}
	if c.Buyer == nil || c.Buyer.Consent == nil || c.Buyer.Consent.Marketing == nil || *c.Buyer.Consent.Marketing {
		t.Errorf("consent must advertise the merchant's purposes (marketing=false): %+v", c.Buyer)
	}

	// 2. Update (full replacement): buyer and a shipping address.
	address := map[string]any{"street_address": "Avenida Paulista, 1000", "address_locality": "São Paulo", "address_region": "SP", "postal_code": "01310-100", "address_country": "BR"}
	_, c = A.call("update_checkout", map[string]any{"id": c.ID, "checkout": map[string]any{
		"line_items":  []any{map[string]any{"id": li.ID, "item": map[string]any{"id": "var_cam"}, "quantity": 2}},
		"buyer":       map[string]any{"email": "ana@example.com", "first_name": "Ana"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "line_item_ids": []any{li.ID}, "destinations": []any{address}}}},
	}})
	if c.Status != bcp.StatusIncomplete {
		t.Fatalf("after address: status %s, messages %+v", c.Status, c.Messages)
	}
	method := c.Fulfillment.Methods[0]
	if method.ID == "" || method.SelectedDestinationID == nil || len(method.Groups) != 1 {
		t.Fatalf("method = %+v", method)
	}
	opts := method.Groups[0].Options
	if len(opts) != 2 || opts[0].ID != alfa.rates["PAC"] || opts[1].ID != alfa.rates["SEDEX"] || opts[0].Totals[0].Amount != 1500 {
		t.Fatalf("options (cheapest first) = %+v", opts)
	}
	if !hasMessage(c, "error", "missing", "$.fulfillment.methods[0].groups[0].selected_option_id") {
		t.Fatalf("an unselected option must be reported at its path: %+v", c.Messages)
	}

	// 3. Select PAC and apply a discount code: ready, with exact totals.
	update := func(codes []string, option string) map[string]any {
		return map[string]any{"id": c.ID, "checkout": map[string]any{
			"line_items": []any{map[string]any{"id": li.ID, "item": map[string]any{"id": "var_cam"}, "quantity": 2}},
			"buyer":      map[string]any{"email": "ana@example.com", "first_name": "Ana"},
			"fulfillment": map[string]any{"methods": []any{map[string]any{
				"id": method.ID, "type": "shipping", "line_item_ids": []any{li.ID}, "destinations": []any{address},
				"selected_destination_id": *method.SelectedDestinationID,
				"groups":                  []any{map[string]any{"id": method.Groups[0].ID, "selected_option_id": option}},
			}}},
			"discounts": map[string]any{"codes": codes},
		}}
	}
	_, c = A.call("update_checkout", update([]string{"bemvindo10"}, alfa.rates["PAC"]))
	if c.Status != bcp.StatusReadyForComplete {
		t.Fatalf("status %s, messages %+v", c.Status, c.Messages)
	}
	// 11980 − 10 % (1198) + PAC 1500 = 12282.
	if got := totals(c); got["subtotal"] != 11980 || got["items_discount"] != -1198 || got["fulfillment"] != 1500 || got["total"] != 12282 {
		t.Fatalf("totals = %v", got)
	}
	if c.Discounts == nil || len(c.Discounts.Codes) != 1 || c.Discounts.Codes[0] != "bemvindo10" || len(c.Discounts.Applied) != 1 || c.Discounts.Applied[0].Amount != 1198 {
		t.Fatalf("discounts = %+v", c.Discounts)
	}
	var sum int64
	for _, tt := range c.Totals {
		if tt.Type != "total" {
			sum += tt.Amount
		}
	}
	if sum != 12282 {
		t.Fatalf("sum of non-total entries %d != total 12282", sum)
	}

	// 4. An invalid code is echoed with a warning at its path; valid ones still apply.
	_, c2 := A.call("update_checkout", update([]string{"BEMVINDO10", "NAOEXISTE"}, alfa.rates["PAC"]))
	if !hasMessage(c2, "warning", "discount_code_invalid", "$.discounts.codes[1]") || len(c2.Discounts.Codes) != 2 || totals(c2)["total"] != 12282 {
		t.Fatalf("invalid code: codes %v, messages %+v, totals %v", c2.Discounts.Codes, c2.Messages, totals(c2))
	}

	// 5. Get returns the stored state.
	_, got := A.call("get_checkout", map[string]any{"id": c.ID})
	if got.Status != bcp.StatusReadyForComplete || totals(got)["total"] != 12282 {
		t.Fatalf("get: %s %v", got.Status, totals(got))
	}

	// 6. The other merchant cannot see it: not_found, nothing leaked.
	resB, err := B.callErr("get_checkout", map[string]any{"id": c.ID})
	if err != nil {
		t.Fatal(err)
	}
	rawB, _ := json.Marshal(resB)
	if !strings.Contains(string(rawB), `"code":"not_found"`) || strings.Contains(string(rawB), "ana@example.com") || strings.Contains(string(rawB), "Camiseta") {
		t.Fatalf("cross-tenant get: %s", rawB)
	}
	// B has its own catalog and prices.
	_, cb := B.call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}})
	if totals(cb)["subtotal"] != 6990 {
		t.Fatalf("tenant B price = %v, want 6990", totals(cb))
	}

	// 7. Cancel.
	_, cc := A.call("cancel_checkout", map[string]any{"id": c.ID, "meta": map[string]any{"ucp-agent": map[string]any{"profile": A.profile}, "idempotency-key": uuid.NewString()}})
	if cc.Status != bcp.StatusCanceled || cc.ContinueURL != "" {
		t.Fatalf("cancel: status %s continue_url %q", cc.Status, cc.ContinueURL)
	}
	_, after := A.call("update_checkout", update([]string{}, alfa.rates["PAC"]))
	if after.Status != bcp.StatusCanceled || !hasMessage(after, "error", "checkout_not_modifiable", "$.status") {
		t.Fatalf("update after cancel: %s %+v", after.Status, after.Messages)
	}

	// Stock: quantity lowered to what is there; sold-out only → no checkout.
	_, q := A.call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 5}}}})
	if q.LineItems[0].Quantity != 2 || !hasMessage(q, "warning", "quantity_adjusted", "$.line_items[0].quantity") || totals(q)["subtotal"] != 7980 {
		t.Fatalf("quantity adjusted: %+v %+v", q.LineItems, q.Messages)
	}
	out, err := A.callErr("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_out"}, "quantity": 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, hasID := out["id"]; hasID || out["ucp"].(map[string]any)["status"] != "error" || !strings.Contains(fmt.Sprint(out["messages"]), "out_of_stock") {
		t.Fatalf("all out of stock must be an error_response without a resource: %v", out)
	}

	// Invalid arguments: -32602 naming the path.
	_, err = A.callErr("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 0}}}})
	if code, data := rpcError(t, err); code != -32602 || !slices.Contains(toStrings(data["paths"]), "$.checkout.line_items[0].quantity") {
		t.Fatalf("quantity 0: code %d data %v", code, data)
	}
	_, err = A.callErr("update_checkout", map[string]any{"id": c.ID, "checkout": map[string]any{"id": "chk_x", "line_items": []any{}}})
	if code, data := rpcError(t, err); code != -32602 || !slices.Contains(toStrings(data["paths"]), "$.checkout.id") {
		t.Fatalf("checkout.id in payload: code %d data %v", code, data)
	}
	_, err = A.callErr("cancel_checkout", map[string]any{"id": c.ID})
	if code, data := rpcError(t, err); code != -32602 || !slices.Contains(toStrings(data["paths"]), "$.meta['idempotency-key']") {
		t.Fatalf("cancel without idempotency key: code %d data %v", code, data)
	}
	// Unknown agent profile: -32001.
	missing := &agent{t: t, s: agentSession(t, r, alfa.host, profiles.URL+"/missing.json"), profile: profiles.URL + "/missing.json", v: v}
	_, err = missing.callErr("create_checkout", map[string]any{
		"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}})
	if code, data := rpcError(t, err); code != -32001 || data["code"] != "profile_unreachable" {
		t.Fatalf("unknown profile: code %d data %v", code, data)
	}
	// No shared checkout capability: business result capabilities_incompatible.
	cartOnly := &agent{t: t, s: agentSession(t, r, alfa.host, profiles.URL+"/cart-only.json"), profile: profiles.URL + "/cart-only.json", v: v}
	inc, err := cartOnly.callErr("create_checkout", map[string]any{
		"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}})
	if err != nil || !strings.Contains(fmt.Sprint(inc["messages"]), "capabilities_incompatible") {
		t.Fatalf("incompatible agent: %v %v", inc, err)
	}
	// An agent without the fulfillment extension is sent to the buyer.
	noExt := &agent{t: t, s: agentSession(t, r, alfa.host, profiles.URL+"/no-extensions.json"), profile: profiles.URL + "/no-extensions.json", v: v}
	_, esc := noExt.call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}, "buyer": map[string]any{"email": "b@example.com"}}})
	if esc.Status != bcp.StatusRequiresEscalation || esc.ContinueURL == "" {
		t.Fatalf("no fulfillment extension: status %s, messages %+v", esc.Status, esc.Messages)
	}
}

func toStrings(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, s := range list {
			out = append(out, fmt.Sprint(s))
		}
	}
	return out
}
