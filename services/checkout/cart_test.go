package checkout_test

import (
	"encoding/json"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/bcpnames"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
)

// Carts through the service's API: priced like a checkout, never holding
// stock, owned by their agent, replaced whole by an update, converted once
// into a checkout that carries their lines, buyer and codes, and not found
// once canceled or converted.
func TestCarts(t *testing.T) {
	e := newEnv(t)
	ag := e.agent()
	ag.Capabilities = append(ag.Capabilities, bcpnames.Cart)
	other := e.agent()
	other.ProfileUrl = "https://outra.example/profile.json"
	other.Capabilities = ag.Capabilities
	cart := func(res *checkoutv1.CartResult) map[string]any {
		t.Helper()
		var c map[string]any
		if err := json.Unmarshal(res.GetCartJson(), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	total := func(c map[string]any) float64 {
		for _, x := range c["totals"].([]any) {
			if m := x.(map[string]any); m["type"] == "total" {
				return m["amount"].(float64)
			}
		}
		return -1
	}
	body := func(v any) []byte { b, _ := json.Marshal(v); return b }
	create := map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 2}},
		"buyer": map[string]any{"email": "rui@example.com"}, "discounts": map[string]any{"codes": []any{"BEMVINDO10"}}}
	cr, err := e.r.Clients.Checkout.CreateCart(e.ctx, connect.NewRequest(&checkoutv1.CreateCartRequest{Agent: ag, CartJson: body(create)}))
	if err != nil {
		t.Fatal(err)
	}
	c := cart(cr.Msg.GetResult())
	id := c["id"].(string)
	// 2 × 5990 = 11980, less 10 % (1198) = 10782; no shipping on a cart.
	if total(c) != 10782 {
		t.Fatalf("cart total %v, want 10782: %s", total(c), cr.Msg.GetResult().GetCartJson())
	}
	if n := e.sql(`SELECT count(*) FROM catalog.stock_reservations WHERE checkout_id = $1`, id); n != 0 {
		t.Fatalf("a cart reserved %d lines", n)
	}
	if _, err := e.r.Clients.Checkout.GetCart(e.ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: other, Id: id})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("another agent's get: %v", err)
	}
	// Full replacement: one shirt, no buyer, no code.
	ur, err := e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: ag, Id: id,
		CartJson: body(map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}})}))
	if err != nil {
		t.Fatal(err)
	}
	if u := cart(ur.Msg.GetResult()); total(u) != 5990 || u["buyer"] != nil {
		t.Fatalf("after the update: %s", ur.Msg.GetResult().GetCartJson())
	}
	// Back to two shirts with the code, then converted: the checkout has them.
	if _, err := e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: ag, Id: id, CartJson: body(create)})); err != nil {
		t.Fatal(err)
	}
	convert := func() *checkoutv1.CheckoutResult {
		t.Helper()
		r, err := e.r.Clients.Checkout.CreateCheckout(e.ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: ag,
			CheckoutJson: body(map[string]any{"cart_id": id, "line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 9}}})}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetResult()
	}
	first := decode(t, convert())
	if len(first.LineItems) != 1 || first.LineItems[0].Quantity != 2 || first.Buyer == nil || first.Buyer.Email != "rui@example.com" ||
		first.Discounts == nil || len(first.Discounts.Applied) != 1 {
		t.Fatalf("converted checkout: %+v", first)
	}
	if again := decode(t, convert()); again.ID != first.ID {
		t.Fatalf("converting twice opened %s and %s", first.ID, again.ID)
	}
	if _, err := e.r.Clients.Checkout.GetCart(e.ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: ag, Id: id})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("a converted cart: %v", err)
	}
	// A canceled cart is not found afterwards.
	cr2, err := e.r.Clients.Checkout.CreateCart(e.ctx, connect.NewRequest(&checkoutv1.CreateCartRequest{Agent: ag, CartJson: body(create)}))
	if err != nil {
		t.Fatal(err)
	}
	id2 := cart(cr2.Msg.GetResult())["id"].(string)
	if _, err := e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: other, Id: id2})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("another agent's cancel: %v", err)
	}
	if _, err := e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: ag, Id: id2})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: ag, Id: id2, CartJson: body(create)})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("update of a canceled cart: %v", err)
	}
}
