package checkout_test

import (
	"encoding/json"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/bcpnames"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// The cart's edges through the service's API: what create_cart and
// update_cart refuse (code and field), a cart with nothing to sell, and
// the conversions that find the cart another agent's, ended, expired,
// converted into a checkout that ended or was never written, or no longer
// sellable.

func (e *env) cartAgent() *checkoutv1.Agent {
	ag := e.agent()
	ag.Capabilities = append(ag.Capabilities, bcpnames.Cart)
	return ag
}

func (e *env) createCart(ag *checkoutv1.Agent, body []byte) (*checkoutv1.CartResult, error) {
	r, err := e.r.Clients.Checkout.CreateCart(e.ctx, connect.NewRequest(&checkoutv1.CreateCartRequest{Agent: ag, CartJson: body}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetResult(), nil
}

// mustCart creates a cart and returns its id.
func (e *env) mustCart(body map[string]any) string {
	e.t.Helper()
	res, err := e.createCart(e.cartAgent(), jsonBody(body))
	if err != nil {
		e.t.Fatalf("create cart: %v", err)
	}
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res.GetCartJson(), &c); err != nil || c.ID == "" {
		e.t.Fatalf("cart %s: %v", res.GetCartJson(), err)
	}
	return c.ID
}

// convert is create_checkout with cart_id (and lines the cart overrides).
func (e *env) convert(ag *checkoutv1.Agent, cartID string) (*checkoutv1.CheckoutResult, error) {
	return e.createRaw(ag, jsonBody(map[string]any{"cart_id": cartID, "line_items": shirts(9)}))
}

func TestCartRefusals(t *testing.T) {
	e := newEnv(t)
	id := e.mustCart(map[string]any{"line_items": shirts(2)})
	before := e.str(`SELECT state::text FROM checkout.carts WHERE id = $1`, id)
	line := func(item string, q int) map[string]any {
		return map[string]any{"item": map[string]any{"id": item}, "quantity": q}
	}
	for _, tc := range []struct {
		name        string
		agent       *checkoutv1.Agent
		body        []byte
		code, field string
	}{
		{"no agent profile", &checkoutv1.Agent{BaseUrl: "http://x", Capabilities: e.cartAgent().GetCapabilities()}, jsonBody(map[string]any{"line_items": shirts(1)}), "agent_required", "agent.profile_url"},
		{"no cart", e.cartAgent(), nil, "cart_required", "cart"},
		{"malformed JSON", e.cartAgent(), []byte(`{"line_items": [`), "invalid_cart", "cart"},
		{"id in the payload", e.cartAgent(), jsonBody(map[string]any{"id": id, "line_items": shirts(1)}), "id_not_allowed", "cart.id"},
		{"no line items", e.cartAgent(), jsonBody(map[string]any{"buyer": map[string]any{"email": "rui@example.com"}}), "line_items_required", "cart.line_items"},
		{"second line without item id", e.cartAgent(), jsonBody(map[string]any{"line_items": []any{line("var_cam", 1), line("", 1)}}), "invalid_line_item", "cart.line_items[1]"},
		{"quantity 0", e.cartAgent(), jsonBody(map[string]any{"line_items": []any{line("var_cam", 0)}}), "invalid_line_item", "cart.line_items[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer e.use(t)()
			_, err := e.createCart(tc.agent, tc.body)
			wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
			_, err = e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: tc.agent, Id: id, CartJson: tc.body}))
			wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
		})
	}
	// cart_id on create_checkout: a string, not empty.
	for _, tc := range []struct {
		name string
		body string
	}{
		{"cart_id not a string", `{"cart_id": 5, "line_items": [{"item": {"id": "var_cam"}, "quantity": 1}]}`},
		{"cart_id empty", `{"cart_id": "", "line_items": [{"item": {"id": "var_cam"}, "quantity": 1}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer e.use(t)()
			_, err := e.createRaw(e.cartAgent(), []byte(tc.body))
			wantErr(t, err, connect.CodeInvalidArgument, "invalid_cart_id", "checkout.cart_id")
		})
	}
	if n := e.sql(`SELECT count(*) FROM checkout.carts`); n != 1 {
		t.Errorf("%d carts after refused requests, want 1", n)
	}
	if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != 0 {
		t.Errorf("%d sessions after refused conversions, want 0", n)
	}
	if after := e.str(`SELECT state::text FROM checkout.carts WHERE id = $1`, id); after != before {
		t.Errorf("the cart changed:\n%s\n%s", before, after)
	}
	if v := e.sql(`SELECT version FROM checkout.carts WHERE id = $1`, id); v != 1 {
		t.Errorf("cart version %d, want 1", v)
	}
}

func TestCartConversionEdges(t *testing.T) {
	e := newEnv(t)
	ops := e.r.ClientsWithToken(operatorToken)
	for _, v := range []*catalogv1.Variant{
		{Id: "var_esg", Sku: "ESG", Title: "Boné azul", Price: 3990, Stock: 0, Active: true},
		{Id: "var_ult", Sku: "ULT", Title: "Boné verde", Price: 3990, Stock: 1, Active: true},
	} {
		if _, err := ops.Catalog.CreateProduct(e.ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
			Id: "prd_" + v.Sku, Title: "Boné", Active: true, Variants: []*catalogv1.Variant{v}}})); err != nil {
			t.Fatal(err)
		}
	}
	ag := e.cartAgent()
	other := e.cartAgent()
	other.ProfileUrl = "https://outra.example/profile.json"
	line := func(item string, q int) []any {
		return []any{map[string]any{"item": map[string]any{"id": item}, "quantity": q}}
	}

	t.Run("a cart with nothing to sell is not created", func(t *testing.T) {
		defer e.use(t)()
		res, err := e.createCart(ag, jsonBody(map[string]any{"line_items": line("var_esg", 1)}))
		if err != nil {
			t.Fatal(err)
		}
		want := jsonBody(bcp.ErrorResponse{ContinueURL: ag.GetBaseUrl() + "/", Messages: []bcp.Message{{Type: bcp.MessageError, Code: bcp.CodeOutOfStock,
			Severity: bcp.SeverityUnrecoverable, Path: "$.line_items", Content: "Todos os itens pedidos estão esgotados."}}})
		if !res.GetErrorResponse() || string(res.GetCartJson()) != string(want) {
			t.Errorf("error_response=%v\n got %s\nwant %s", res.GetErrorResponse(), res.GetCartJson(), want)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.carts`); n != 0 {
			t.Errorf("%d carts stored", n)
		}
	})

	t.Run("get returns the cart as priced; its context reaches the checkout", func(t *testing.T) {
		defer e.use(t)()
		res, err := e.createCart(ag, jsonBody(map[string]any{"line_items": shirts(1), "context": map[string]any{"address_country": "BR", "postal_code": "01305-000"}}))
		if err != nil {
			t.Fatal(err)
		}
		var cr struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(res.GetCartJson(), &cr); err != nil {
			t.Fatal(err)
		}
		g, err := e.r.Clients.Checkout.GetCart(e.ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: ag, Id: cr.ID}))
		if err != nil {
			t.Fatal(err)
		}
		// As stored (jsonb orders members its own way): the same cart.
		var got, want bcp.Checkout
		if err := json.Unmarshal(g.Msg.GetResult().GetCartJson(), &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(res.GetCartJson(), &want); err != nil {
			t.Fatal(err)
		}
		if string(jsonBody(got)) != string(jsonBody(want)) || got.ID != cr.ID || total(&got) != 5990 || g.Msg.GetResult().GetErrorResponse() {
			t.Errorf("get\n got %s\nwant %s", g.Msg.GetResult().GetCartJson(), res.GetCartJson())
		}
		conv, err := e.convert(ag, cr.ID)
		if err != nil {
			t.Fatal(err)
		}
		c := decode(t, conv)
		if c.Context == nil || c.Context.AddressCountry != "BR" || c.Context.PostalCode != "01305-000" || len(c.LineItems) != 1 || c.LineItems[0].Quantity != 1 || total(c) != 5990 {
			t.Errorf("converted: context %+v lines %+v total %d", c.Context, c.LineItems, total(c))
		}
	})

	t.Run("another agent's cart is not found, and stays the owner's", func(t *testing.T) {
		defer e.use(t)()
		id := e.mustCart(map[string]any{"line_items": shirts(1)})
		_, err := e.convert(other, id)
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
		if st := e.str(`SELECT status FROM checkout.carts WHERE id = $1`, id); st != "active" {
			t.Errorf("cart %s", st)
		}
	})

	t.Run("a canceled or expired cart is not found", func(t *testing.T) {
		defer e.use(t)()
		sessions := e.sql(`SELECT count(*) FROM checkout.sessions`)
		canceled := e.mustCart(map[string]any{"line_items": shirts(1)})
		if _, err := e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: ag, Id: canceled})); err != nil {
			t.Fatal(err)
		}
		expired := e.mustCart(map[string]any{"line_items": shirts(1)})
		e.exec(`UPDATE checkout.carts SET expires_at = now() - interval '1 second' WHERE id = $1`, expired)
		for _, id := range []string{canceled, expired} {
			_, err := e.convert(ag, id)
			wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != sessions {
			t.Errorf("%d sessions, want %d", n, sessions)
		}
	})

	t.Run("the checkout a cart became ended: the cart is gone", func(t *testing.T) {
		defer e.use(t)()
		id := e.mustCart(map[string]any{"line_items": shirts(1)})
		conv, err := e.convert(ag, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.cancel(decode(t, conv).ID); err != nil {
			t.Fatal(err)
		}
		_, err = e.convert(ag, id)
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	})

	t.Run("converted but its checkout never written: opened under the reserved id", func(t *testing.T) {
		defer e.use(t)()
		// A process that died between marking the cart converted and
		// writing the checkout.
		id := e.mustCart(map[string]any{"line_items": shirts(2), "buyer": map[string]any{"email": "ana@example.com"}})
		e.exec(`UPDATE checkout.carts SET status = 'converted', checkout_id = 'chk_reserved_by_the_dead', version = version + 1 WHERE id = $1`, id)
		conv, err := e.convert(ag, id)
		if err != nil {
			t.Fatal(err)
		}
		c := decode(t, conv)
		if c.ID != "chk_reserved_by_the_dead" || len(c.LineItems) != 1 || c.LineItems[0].Quantity != 2 || c.Buyer == nil || c.Buyer.Email != "ana@example.com" || total(c) != 11980 {
			t.Errorf("opened %s lines %+v buyer %+v total %d", c.ID, c.LineItems, c.Buyer, total(c))
		}
		if again, err := e.convert(ag, id); err != nil || decode(t, again).ID != c.ID {
			t.Errorf("converted again: %v", err)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = 'chk_reserved_by_the_dead'`); n != 1 {
			t.Errorf("%d sessions", n)
		}
	})

	t.Run("sold out since: no checkout, the cart stays active", func(t *testing.T) {
		defer e.use(t)()
		id := e.mustCart(map[string]any{"line_items": line("var_ult", 1)})
		e.exec(`UPDATE catalog.variants SET stock = 0 WHERE tenant_id = $1 AND id = 'var_ult'`, e.m.TenantID)
		sessions := e.sql(`SELECT count(*) FROM checkout.sessions`)
		res, err := e.convert(ag, id)
		if err != nil {
			t.Fatal(err)
		}
		var got bcp.ErrorResponse
		if err := json.Unmarshal(res.GetCheckoutJson(), &got); err != nil {
			t.Fatal(err)
		}
		if !res.GetErrorResponse() || len(got.Messages) != 1 || got.Messages[0].Code != bcp.CodeOutOfStock || got.Messages[0].Path != "$.line_items" {
			t.Errorf("error_response=%v %s", res.GetErrorResponse(), res.GetCheckoutJson())
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != sessions {
			t.Errorf("%d sessions, want %d", n, sessions)
		}
		if st := e.str(`SELECT status || coalesce(checkout_id, '') FROM checkout.carts WHERE id = $1`, id); st != "active" {
			t.Errorf("cart %q, want active with no checkout", st)
		}
		if _, err := e.r.Clients.Checkout.GetCart(e.ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: ag, Id: id})); err != nil {
			t.Errorf("the cart after a failed conversion: %v", err)
		}
	})
}

// Past its expiry, every operation on a checkout or a cart finds it ended:
// a checkout whose card payment waits for the buyer's 3-D Secure is closed
// on the next read with its sale voided and its stock back; a cancel of an
// expired open checkout cancels it; an expired cart is not found on any
// cart operation.
func TestExpiryOnEveryOperation(t *testing.T) {
	e := quietEnv(t)
	past := func(table, id string) {
		e.exec(`UPDATE checkout.`+table+` SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	}

	t.Run("get of a payment waiting for 3-D Secure", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if got := e.mustComplete(c.ID, card(tok("3220"))); got.Status != bcp.StatusRequiresEscalation {
			t.Fatalf("3DS: %s", got.Status)
		}
		past("sessions", c.ID)
		got := e.get(c.ID)
		if got.Status != bcp.StatusCanceled || !equalStrings(msgs(got), []string{"info expired"}) || got.ContinueURL != "" {
			t.Errorf("get: %s %v %q", got.Status, msgs(got), got.ContinueURL)
		}
		if n := e.voided(c.ID); n != 1 {
			t.Errorf("%d voided charges, want 1", n)
		}
		if m := e.settledMoney(c.ID); m.status != bcp.StatusCanceled {
			t.Errorf("ledgers: %+v", m)
		}
	})

	t.Run("cancel of an expired open checkout", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		past("sessions", c.ID)
		got, err := e.cancel(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != bcp.StatusCanceled || len(got.Messages) != 0 {
			t.Errorf("cancel: %s %v", got.Status, msgs(got))
		}
		if m := e.settledMoney(c.ID); m.status != bcp.StatusCanceled {
			t.Errorf("ledgers: %+v", m)
		}
	})

	t.Run("an expired cart", func(t *testing.T) {
		defer e.use(t)()
		ag := e.cartAgent()
		id := e.mustCart(map[string]any{"line_items": shirts(1)})
		past("carts", id)
		_, err := e.r.Clients.Checkout.GetCart(e.ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: ag, Id: id}))
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
		_, err = e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: ag, Id: id, CartJson: jsonBody(map[string]any{"line_items": shirts(2)})}))
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
		_, err = e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: ag, Id: id}))
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
		if st := e.str(`SELECT status || ' ' || version FROM checkout.carts WHERE id = $1`, id); st != "active 1" {
			t.Errorf("cart %q", st)
		}
	})
}
