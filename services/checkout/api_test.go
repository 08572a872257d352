package checkout_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform/loadkit"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout"
)

// The connect API's edges on real services: what each procedure refuses
// and with which code, the error_response of a create with nothing to
// sell, what still blocks completion, the update rules, paging, and the
// tenant fence.

// spAddr is a deliverable address in São Paulo.
func spAddr() map[string]any {
	return map[string]any{"street_address": "Rua Augusta, 500", "address_locality": "São Paulo", "address_region": "SP", "postal_code": "01305-000", "address_country": "BR"}
}

func shirts(n int) []any {
	return []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": n}}
}

func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (e *env) createRaw(agent *checkoutv1.Agent, body []byte) (*checkoutv1.CheckoutResult, error) {
	r, err := e.r.Clients.Checkout.CreateCheckout(e.ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: agent, CheckoutJson: body}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetResult(), nil
}

func (e *env) mustCreate(agent *checkoutv1.Agent, body map[string]any) *bcp.Checkout {
	e.t.Helper()
	res, err := e.createRaw(agent, jsonBody(body))
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return decode(e.t, res)
}

func (e *env) update(id string, body map[string]any) (*bcp.Checkout, error) {
	r, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: id, CheckoutJson: jsonBody(body)}))
	if err != nil {
		return nil, err
	}
	return decode(e.t, r.Msg.GetResult()), nil
}

// readyBody is the update that keeps c (made by ready) ready with n shirts.
func (e *env) readyBody(c *bcp.Checkout, n int) map[string]any {
	mth := c.Fulfillment.Methods[0]
	return map[string]any{
		"line_items": []any{map[string]any{"id": c.LineItems[0].ID, "item": map[string]any{"id": "var_cam"}, "quantity": n}},
		"buyer":      map[string]any{"email": "rui@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"id": mth.ID, "type": "shipping", "line_item_ids": []any{c.LineItems[0].ID},
			"selected_destination_id": *mth.SelectedDestinationID,
			"groups":                  []any{map[string]any{"id": mth.Groups[0].ID, "selected_option_id": e.m.PacRate}}}}},
	}
}

// str runs a one-value query as superuser.
func (e *env) str(q string, args ...any) string {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.d.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&s); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return s
}

// wantErr checks a connect error's code and the domain code and field it
// carries.
func wantErr(t *testing.T, err error, code connect.Code, appCode, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v %s", code, appCode)
	}
	ae := apperr.As(err)
	if connect.CodeOf(err) != code || ae.Code != appCode || ae.Field != field {
		t.Errorf("error %v (%s at %q), want %v (%s at %q)", connect.CodeOf(err), ae.Code, ae.Field, code, appCode, field)
	}
}

// msgs renders messages as "type code severity path" for exact comparison.
func msgs(c *bcp.Checkout) []string {
	var out []string
	for _, m := range c.Messages {
		var f []string
		for _, v := range []string{m.Type, m.Code, m.Severity, m.Path} {
			if v != "" {
				f = append(f, v)
			}
		}
		out = append(out, strings.Join(f, " "))
	}
	return out
}

func totals(c *bcp.Checkout) map[string]int64 {
	out := map[string]int64{}
	for _, t := range c.Totals {
		out[t.Type] = t.Amount
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Malformed requests are refused before anything is read or written, each
// with its code and the field at fault.
func TestRequestValidation(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	sessions := e.sql(`SELECT count(*) FROM checkout.sessions`)
	line := func(id string, q int) map[string]any {
		return map[string]any{"item": map[string]any{"id": id}, "quantity": q}
	}
	cases := []struct {
		name         string
		agent        *checkoutv1.Agent
		body         []byte
		code, field  string
		updateToo    bool
		completeCode string // what complete_checkout says of the same payload ("" when it accepts it)
	}{
		{"no agent profile", &checkoutv1.Agent{BaseUrl: "http://x"}, jsonBody(map[string]any{"line_items": shirts(1)}), "agent_required", "agent.profile_url", true, "agent_required"},
		{"no checkout", e.agent(), nil, "checkout_required", "checkout", true, ""},
		{"malformed JSON", e.agent(), []byte(`{"line_items": [`), "invalid_checkout", "checkout", true, "invalid_checkout"},
		{"id in the payload", e.agent(), jsonBody(map[string]any{"id": "chk_mine", "line_items": shirts(1)}), "id_not_allowed", "checkout.id", true, ""},
		{"line without item id", e.agent(), jsonBody(map[string]any{"line_items": []any{line("", 1)}}), "invalid_line_item", "checkout.line_items[0]", true, ""},
		{"second line with quantity 0", e.agent(), jsonBody(map[string]any{"line_items": []any{line("var_cam", 1), line("var_cam", 0)}}), "invalid_line_item", "checkout.line_items[1]", true, ""},
		{"negative quantity", e.agent(), jsonBody(map[string]any{"line_items": []any{line("var_cam", -3)}}), "invalid_line_item", "checkout.line_items[0]", true, ""},
		{"no line items", e.agent(), jsonBody(map[string]any{"buyer": map[string]any{"email": "rui@example.com"}}), "line_items_required", "checkout.line_items", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer e.use(t)()
			_, err := e.r.Clients.Checkout.CreateCheckout(e.ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: tc.agent, CheckoutJson: tc.body}))
			wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
			if tc.updateToo {
				_, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: tc.agent, Id: c.ID, CheckoutJson: tc.body}))
				wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
			}
			if tc.completeCode != "" {
				_, err := e.r.Clients.Checkout.CompleteCheckout(e.ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{Agent: tc.agent, Id: c.ID, CheckoutJson: tc.body}))
				wantErr(t, err, connect.CodeInvalidArgument, tc.completeCode, tc.field)
			}
		})
	}
	// Nothing was written, and the checkout the updates aimed at is as it was.
	if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != sessions {
		t.Errorf("%d sessions after refused requests, want %d", n, sessions)
	}
	if got := e.get(c.ID); got.Status != bcp.StatusReadyForComplete || total(got) != 13480 {
		t.Errorf("the checkout changed: %s %d", got.Status, total(got))
	}
	if v := e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, c.ID); v != 2 {
		t.Errorf("version %d, want 2 (create + one update)", v)
	}
}

// A create whose every item cannot be sold creates nothing and answers an
// error_response whose one message names why: out_of_stock when every
// item is sold out, item_unavailable otherwise.
func TestCreateWithNothingToSell(t *testing.T) {
	e := newEnv(t)
	ops := e.r.ClientsWithToken(operatorToken)
	if _, err := ops.Catalog.CreateProduct(e.ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Id: "prd_esg", Title: "Boné", Active: true,
		Variants: []*catalogv1.Variant{{Id: "var_esg", Sku: "ESG", Title: "Boné azul", Price: 3990, Stock: 0, Active: true}},
	}})); err != nil {
		t.Fatal(err)
	}
	line := func(id string) map[string]any { return map[string]any{"item": map[string]any{"id": id}, "quantity": 1} }
	for _, tc := range []struct {
		name    string
		lines   []any
		code    string
		content string
	}{
		{"unknown item", []any{line("var_nope")}, bcp.CodeItemUnavailable, "Nenhum dos itens pedidos está disponível para compra."},
		{"sold out", []any{line("var_esg")}, bcp.CodeOutOfStock, "Todos os itens pedidos estão esgotados."},
		{"sold out and unknown", []any{line("var_esg"), line("var_nope")}, bcp.CodeItemUnavailable, "Nenhum dos itens pedidos está disponível para compra."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer e.use(t)()
			res, err := e.createRaw(e.agent(), jsonBody(map[string]any{"line_items": tc.lines, "buyer": map[string]any{"email": "rui@example.com"}}))
			if err != nil {
				t.Fatal(err)
			}
			if !res.GetErrorResponse() || res.GetStatus() != "" {
				t.Fatalf("error_response=%v status=%q, want an error_response", res.GetErrorResponse(), res.GetStatus())
			}
			var got bcp.ErrorResponse
			if err := json.Unmarshal(res.GetCheckoutJson(), &got); err != nil {
				t.Fatal(err)
			}
			want := bcp.ErrorResponse{ContinueURL: e.agent().GetBaseUrl() + "/", Messages: []bcp.Message{
				{Type: bcp.MessageError, Code: tc.code, Severity: bcp.SeverityUnrecoverable, Path: "$.line_items", Content: tc.content}}}
			if a, b := jsonBody(got), jsonBody(want); string(a) != string(b) {
				t.Errorf("error_response\n got %s\nwant %s", a, b)
			}
		})
	}
	if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE tenant_id = $1`, e.m.TenantID); n != 0 {
		t.Errorf("%d sessions created, want 0", n)
	}
	// One sold-out line beside an available one is removed with its own
	// message; the checkout is created with the rest.
	c := e.mustCreate(e.agent(), map[string]any{"line_items": []any{line("var_esg"), line("var_cam")}, "buyer": map[string]any{"email": "rui@example.com"}})
	if len(c.LineItems) != 1 || c.LineItems[0].Item.ID != "var_cam" || c.LineItems[0].ID != "li_2" || !hasMessage(c, bcp.CodeOutOfStock) {
		t.Errorf("mixed create: %+v %v", c.LineItems, msgs(c))
	}
}

// What still blocks completion is listed at its JSONPath, and only a
// checkout with none of it is ready.
func TestMissingInfo(t *testing.T) {
	e := newEnv(t)
	noFulfillment := &checkoutv1.Agent{ProfileUrl: profileURL, BaseUrl: e.agent().GetBaseUrl(), Capabilities: []string{bcpnames.Checkout}}
	for _, tc := range []struct {
		name   string
		agent  *checkoutv1.Agent
		body   map[string]any
		status string
		want   []string
	}{
		{"only items", e.agent(), map[string]any{"line_items": shirts(1)}, bcp.StatusIncomplete,
			[]string{"error missing recoverable $.buyer.email", "error missing recoverable $.fulfillment.methods"}},
		{"blank e-mail", e.agent(), map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "  "}}, bcp.StatusIncomplete,
			[]string{"error missing recoverable $.buyer.email", "error missing recoverable $.fulfillment.methods"}},
		{"invalid e-mail", e.agent(), map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "rui.example.com"}}, bcp.StatusIncomplete,
			[]string{"error invalid_email recoverable $.buyer.email", "error missing recoverable $.fulfillment.methods"}},
		{"shipping without an address", e.agent(), map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "rui@example.com"},
			"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping"}}}}, bcp.StatusIncomplete,
			[]string{"error missing recoverable $.fulfillment.methods[0].destinations"}},
		{"address, no option chosen", e.agent(), map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "rui@example.com"},
			"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{spAddr()}}}}}, bcp.StatusIncomplete,
			[]string{"error missing recoverable $.fulfillment.methods[0].groups[0].selected_option_id"}},
		{"two addresses, none chosen", e.agent(), map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "rui@example.com"},
			"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{spAddr(), spAddr()}}}}}, bcp.StatusIncomplete,
			[]string{"error missing recoverable $.fulfillment.methods[0].selected_destination_id"}},
		{"agent without the fulfillment extension", noFulfillment, map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "rui@example.com"},
			"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{spAddr()}}}}}, bcp.StatusRequiresEscalation,
			[]string{"error missing requires_buyer_input $"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer e.use(t)()
			c := e.mustCreate(tc.agent, tc.body)
			if c.Status != tc.status || !equalStrings(msgs(c), tc.want) {
				t.Errorf("%s %v, want %s %v", c.Status, msgs(c), tc.status, tc.want)
			}
			if row := e.str(`SELECT status FROM checkout.sessions WHERE id = $1`, c.ID); row != tc.status {
				t.Errorf("stored status %s", row)
			}
		})
	}
}

// Another tenant's checkout id is not found, whatever the procedure, and
// its checkout is left as it was; a request with no tenant is refused by
// the transport and, if it got through, by the service itself.
func TestTenantFence(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	m2, err := loadkit.SeedMerchant(context.Background(), e.r.ClientsWithToken(operatorToken), "loja-"+uuid.NewString()[:8]+".localhost", profileURL)
	if err != nil {
		t.Fatal(err)
	}
	other := tenancy.With(context.Background(), m2.TenantID)
	cl := e.r.Clients.Checkout
	upd := jsonBody(e.readyBody(c, 1))
	pay := jsonBody(map[string]any{"payment": map[string]any{"instruments": []any{card("tok_" + uuid.NewString()[:8] + "_4242")}}})
	calls := map[string]func(ctx context.Context) error{
		"get": func(ctx context.Context) error {
			_, err := cl.GetCheckout(ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: c.ID}))
			return err
		},
		"update": func(ctx context.Context) error {
			_, err := cl.UpdateCheckout(ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: upd}))
			return err
		},
		"complete": func(ctx context.Context) error {
			_, err := cl.CompleteCheckout(ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: pay}))
			return err
		},
		"cancel": func(ctx context.Context) error {
			_, err := cl.CancelCheckout(ctx, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Id: c.ID}))
			return err
		},
		"settle": func(ctx context.Context) error {
			_, err := cl.SettlePayment(ctx, connect.NewRequest(&checkoutv1.SettlePaymentRequest{CheckoutId: c.ID, AttemptId: "pay_x"}))
			return err
		},
	}
	for name, call := range calls {
		t.Run("other tenant "+name, func(t *testing.T) {
			wantErr(t, call(other), connect.CodeNotFound, bcp.CodeNotFound, "")
		})
		t.Run("no tenant "+name, func(t *testing.T) {
			if err := call(context.Background()); connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("no tenant header: %v, want invalid_argument", err)
			}
		})
	}
	lr, err := cl.ListCheckouts(other, connect.NewRequest(&checkoutv1.ListCheckoutsRequest{}))
	if err != nil || len(lr.Msg.GetCheckouts()) != 0 {
		t.Errorf("the other tenant lists %v (%v)", lr.Msg.GetCheckouts(), err)
	}
	if got := e.get(c.ID); got.Status != bcp.StatusReadyForComplete || total(got) != 13480 || len(got.LineItems) != 1 || got.LineItems[0].Quantity != 2 {
		t.Errorf("the checkout changed: %s %d", got.Status, total(got))
	}
	if n := e.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, c.ID); n != 0 {
		t.Errorf("%d payment attempts for a fenced checkout", n)
	}

	// The service itself fails closed when no tenant reached it.
	svc := checkout.New(e.r.Pool, checkout.Clients{Catalog: e.r.Clients.Catalog, Pricing: e.r.Clients.Pricing, Tenants: e.r.Clients.Tenants,
		Payments: e.r.Clients.Payments, Orders: e.r.Clients.Orders})
	bg := context.Background()
	direct := map[string]error{}
	_, direct["create"] = svc.CreateCheckout(bg, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: e.agent(), CheckoutJson: jsonBody(map[string]any{"line_items": shirts(1)})}))
	_, direct["get"] = svc.GetCheckout(bg, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: c.ID}))
	_, direct["update"] = svc.UpdateCheckout(bg, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: upd}))
	_, direct["complete"] = svc.CompleteCheckout(bg, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: pay}))
	_, direct["cancel"] = svc.CancelCheckout(bg, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Id: c.ID}))
	_, direct["list"] = svc.ListCheckouts(bg, connect.NewRequest(&checkoutv1.ListCheckoutsRequest{}))
	_, direct["expire"] = svc.ExpireCheckouts(bg, connect.NewRequest(&checkoutv1.ExpireCheckoutsRequest{}))
	_, direct["stats"] = svc.GetCheckoutStats(bg, connect.NewRequest(&checkoutv1.GetCheckoutStatsRequest{}))
	key := &checkoutv1.Idempotency{Scope: "s", Key: "k", RequestHash: make([]byte, 32)}
	_, direct["keyed cancel"] = svc.CancelCheckout(bg, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Id: c.ID, Idempotency: key}))
	for name, err := range direct {
		if !errors.Is(err, tenancy.ErrNoTenant) {
			t.Errorf("%s without a tenant: %v, want %v", name, err, tenancy.ErrNoTenant)
		}
	}
	if got := e.get(c.ID); got.Status != bcp.StatusReadyForComplete {
		t.Errorf("the checkout changed: %s", got.Status)
	}
}

// Ping answers for the service and its database, with no tenant.
func TestPing(t *testing.T) {
	e := newEnv(t)
	r, err := e.r.Clients.Checkout.Ping(context.Background(), connect.NewRequest(&checkoutv1.PingRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Msg.GetService() != "checkout" || !r.Msg.GetDatabaseOk() {
		t.Errorf("ping = %v", r.Msg)
	}
	if checkout.Policy(checkoutv1connect.CheckoutServicePingProcedure) == checkout.Policy(checkoutv1connect.CheckoutServiceGetCheckoutProcedure) {
		t.Error("Ping has the tenant-scoped policy")
	}
}

// With the buyer_consent extension the checkout advertises exactly the
// merchant's consent purposes: stated values kept, unstated ones not
// granted (or as the previous state had them), others dropped; marketing
// consent without a way to reach the buyer is warned about.
func TestBuyerConsent(t *testing.T) {
	e := newEnv(t)
	ops := e.r.ClientsWithToken(operatorToken)
	if _, err := ops.Tenants.SetSettings(context.Background(), connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: e.m.TenantID.String(), Settings: &tenantsv1.Settings{
		Links:           []*tenantsv1.Link{{Type: "privacy_policy", Url: "https://" + e.m.Host + "/privacidade"}},
		ConsentPurposes: []string{"analytics", "marketing"},
	}})); err != nil {
		t.Fatal(err)
	}
	agent := e.agent()
	agent.Capabilities = append(agent.Capabilities, bcpnames.BuyerConsent)
	consent := func(c *bcp.Checkout) string {
		if c.Buyer == nil {
			return "no buyer"
		}
		return string(jsonBody(c.Buyer.Consent))
	}
	body := map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "rui@example.com", "consent": map[string]any{"marketing": true, "sale_of_data": true}}}
	var c *bcp.Checkout
	// The settings reach the checkout service with the registry's change
	// notification.
	e.eventually("the consent purposes reach the checkout", func() bool {
		c = e.mustCreate(agent, body)
		return c.Buyer != nil && c.Buyer.Consent != nil && c.Buyer.Consent.Analytics != nil
	})
	if got := consent(c); got != `{"analytics":false,"marketing":true}` {
		t.Errorf("consent %s", got)
	}
	if len(c.Links) != 1 || c.Links[0].Type != "privacy_policy" || c.Links[0].URL != "https://"+e.m.Host+"/privacidade" {
		t.Errorf("links %+v", c.Links)
	}
	// An update stating only analytics keeps the previous marketing.
	r, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: agent, Id: c.ID, CheckoutJson: jsonBody(map[string]any{
		"line_items": shirts(1), "buyer": map[string]any{"email": "rui@example.com", "consent": map[string]any{"analytics": true}}})}))
	if err != nil {
		t.Fatal(err)
	}
	if got := consent(decode(t, r.Msg.GetResult())); got != `{"analytics":true,"marketing":true}` {
		t.Errorf("after update: %s", got)
	}
	// No buyer at all: every purpose advertised, not granted.
	if got := consent(e.mustCreate(agent, map[string]any{"line_items": shirts(1)})); got != `{"analytics":false,"marketing":false}` {
		t.Errorf("no buyer: %s", got)
	}
	// Marketing granted with neither e-mail nor phone: warned.
	nc := e.mustCreate(agent, map[string]any{"line_items": shirts(1), "buyer": map[string]any{"first_name": "Rui", "consent": map[string]any{"marketing": true}}})
	if want := []string{"error missing recoverable $.buyer.email", "error missing recoverable $.fulfillment.methods", "warning missing_consent_data $.buyer.consent.marketing"}; !equalStrings(msgs(nc), want) {
		t.Errorf("messages %v, want %v", msgs(nc), want)
	}
	// All four purposes: each advertised, in the schema's order.
	if _, err := ops.Tenants.SetSettings(context.Background(), connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: e.m.TenantID.String(), Settings: &tenantsv1.Settings{
		ConsentPurposes: []string{"sale_of_data", "preferences", "marketing", "analytics"},
	}})); err != nil {
		t.Fatal(err)
	}
	e.eventually("the four purposes reach the checkout", func() bool {
		c = e.mustCreate(agent, body)
		return c.Buyer.Consent.Preferences != nil
	})
	if got := consent(c); got != `{"analytics":false,"preferences":false,"marketing":true,"sale_of_data":true}` {
		t.Errorf("four purposes: %s", got)
	}
	if len(c.Links) != 0 {
		t.Errorf("links %+v after they were removed", c.Links)
	}
}

// Quantities are capped at 1 000 000 a line, a total beyond the safe
// integer range is refused (never wrapped), an agent without a base URL
// gets no continue_url, and a variant's image is shown.
func TestLimits(t *testing.T) {
	e := newEnv(t)
	ops := e.r.ClientsWithToken(operatorToken)
	if _, err := ops.Catalog.CreateProduct(e.ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Id: "prd_lux", Title: "Relógio", Active: true,
		Variants: []*catalogv1.Variant{
			{Id: "var_lux", Sku: "LUX", Title: "Relógio de ouro", Price: 5_000_000_000_000_000, Stock: 10, Active: true},
			{Id: "var_img", Sku: "IMG", Title: "Caneca", Price: 2500, Stock: 10, Active: true, ImageUrl: "https://cdn.example/caneca.jpg"},
		},
	}})); err != nil {
		t.Fatal(err)
	}

	c := e.mustCreate(e.agent(), map[string]any{"line_items": shirts(2_000_000)})
	if len(c.LineItems) != 1 || c.LineItems[0].Quantity != 1_000_000 || total(c) != 1_000_000*5990 {
		t.Errorf("capped: %+v %d", c.LineItems, total(c))
	}
	if want := []string{"error missing recoverable $.buyer.email", "error missing recoverable $.fulfillment.methods", "warning quantity_adjusted $.line_items[0].quantity"}; !equalStrings(msgs(c), want) {
		t.Errorf("messages %v, want %v", msgs(c), want)
	}

	lux := map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_lux"}, "quantity": 2}}}
	before := e.sql(`SELECT count(*) FROM checkout.sessions`)
	// Pricing's refusal reaches the caller with its code, though it
	// crossed two services.
	relayed := func(err error) {
		t.Helper()
		if connect.CodeOf(err) != connect.CodeInvalidArgument || apperr.As(err).Code != "amount_out_of_range" {
			t.Errorf("error %v (code %q), want invalid_argument amount_out_of_range", err, apperr.As(err).Code)
		}
	}
	_, err := e.createRaw(e.agent(), jsonBody(lux))
	relayed(err)
	if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != before {
		t.Errorf("%d sessions, want %d", n, before)
	}
	r := e.ready()
	_, err = e.update(r.ID, lux)
	relayed(err)
	if got := e.get(r.ID); got.Status != bcp.StatusReadyForComplete || total(got) != 13480 {
		t.Errorf("after the refused update: %s %d", got.Status, total(got))
	}

	// No base URL, no capabilities: the buyer finishes on the hosted page,
	// which the agent has no link to.
	bare := &checkoutv1.Agent{ProfileUrl: profileURL}
	b := e.mustCreate(bare, map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_img"}, "quantity": 1}},
		"buyer": map[string]any{"email": "rui@example.com"}})
	if b.ContinueURL != "" || b.Status != bcp.StatusRequiresEscalation || !equalStrings(msgs(b), []string{"error missing requires_buyer_input $"}) {
		t.Errorf("bare agent: %q %s %v", b.ContinueURL, b.Status, msgs(b))
	}
	if len(b.LineItems) != 1 || b.LineItems[0].Item.ImageURL != "https://cdn.example/caneca.jpg" || b.LineItems[0].Item.Title != "Caneca" || total(b) != 2500 {
		t.Errorf("line %+v total %d", b.LineItems, total(b))
	}
	if n := e.sql(`SELECT cardinality(capabilities) FROM checkout.sessions WHERE id = $1`, b.ID); n != 0 {
		t.Errorf("%d capabilities stored", n)
	}
	if got := e.mustCreate(e.agent(), map[string]any{"line_items": shirts(1)}); got.ContinueURL != e.agent().GetBaseUrl()+"/checkout/"+got.ID {
		t.Errorf("continue_url %q", got.ContinueURL)
	}
}
