package checkout_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// An automatic discount limited to one use applies to the first order
// only: its completion must redeem it, as it does a code. (It never was:
// an automatic discount shows no code, and only codes were redeemed; the
// claim now keeps the ids of the automatic discounts pricing applied.)
func TestAutomaticDiscountRedeemed(t *testing.T) {
	e := newEnv(t)
	ops := e.r.ClientsWithToken(operatorToken)
	if _, err := ops.Pricing.SetDiscount(e.ctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Title: "5% na primeira compra da loja", Kind: pricingv1.Discount_KIND_PERCENT, Value: 500, Automatic: true, Active: true, Combinable: true,
		UsageLimit: 1, Priority: 2,
	}})); err != nil {
		t.Fatal(err)
	}
	first := e.mustCreate(e.agent(), map[string]any{"line_items": shirts(2), "buyer": map[string]any{"email": "rui@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{spAddr()}}}}})
	c, err := e.update(first.ID, e.readyBody(first, 2))
	if err != nil {
		t.Fatal(err)
	}
	// 2 × 5990 less 5 % (599), plus PAC.
	if c.Status != bcp.StatusReadyForComplete || totals(c)[bcp.TotalItemsDiscount] != -599 || total(c) != 12881 {
		t.Fatalf("with the automatic discount: %s %v", c.Status, totals(c))
	}
	if done := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242")); done.Status != bcp.StatusCompleted {
		t.Fatalf("complete: %s", done.Status)
	}
	e.settledMoney(c.ID)
	if n := e.sql(`SELECT count(*) FROM pricing.discount_redemptions WHERE checkout_id = $1`, c.ID); n != 1 {
		t.Errorf("%d redemptions of the automatic discount, want 1", n)
	}
	// Used up: the next checkout pays full price.
	again := e.mustCreate(e.agent(), map[string]any{"line_items": shirts(2), "buyer": map[string]any{"email": "ana@example.com"}})
	if d := totals(again)[bcp.TotalItemsDiscount]; d != 0 || total(again) != 11980 {
		t.Errorf("the next checkout still gets %d off (total %d)", d, total(again))
	}
}
