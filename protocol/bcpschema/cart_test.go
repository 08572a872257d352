package bcpschema

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCartToolSchemas(t *testing.T) {
	v, err := NewToolValidator(toolsOf(RootCart))
	if err != nil {
		t.Fatal(err)
	}
	meta := `{"ucp-agent":{"profile":"https://agent.example/profile"}}`
	ok := `{"meta":` + meta + `,"cart":{"line_items":[{"item":{"id":"var_1"},"quantity":2}]}}`
	if err := v.ValidateToolInput("create_cart", json.RawMessage(ok)); err != nil {
		t.Fatalf("valid create_cart rejected: %v", err)
	}
	// update moves cart.id to the top-level id: absent is fine, present is not.
	upd := `{"meta":` + meta + `,"id":"cart_1","cart":{"line_items":[{"item":{"id":"var_1"},"quantity":1}]}}`
	if err := v.ValidateToolInput("update_cart", json.RawMessage(upd)); err != nil {
		t.Fatalf("valid update_cart rejected: %v", err)
	}
	for tool, args := range map[string]string{
		"create_cart": `{"meta":` + meta + `,"cart":{"id":"x","line_items":[{"item":{"id":"var_1"},"quantity":1}]}}`,
		"cancel_cart": `{"meta":` + meta + `,"id":"cart_1"}`,
		"get_cart":    `{"meta":` + meta + `}`,
	} {
		err := v.ValidateToolInput(tool, json.RawMessage(args))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: want a ValidationError, got %v", tool, err)
		}
		want := map[string]string{"create_cart": "$.cart.id", "cancel_cart": "$.meta['idempotency-key']", "get_cart": "$.id"}[tool]
		if ve.Violations[0].Path != want {
			t.Errorf("%s: violation at %s, want %s", tool, ve.Violations[0].Path, want)
		}
	}
	res := `{"ucp":{"version":"2026-07-28","capabilities":{"br.dev.bcp.shopping.cart":[{"version":"2026-07-28"}]}},"id":"cart_1","currency":"BRL",` +
		`"line_items":[{"id":"li_1","item":{"id":"var_1","title":"Caneca","price":4990},"quantity":1,"totals":[{"type":"subtotal","amount":4990}]}],` +
		`"totals":[{"type":"subtotal","amount":4990},{"type":"total","amount":4990}],"links":[]}`
	if err := v.ValidateResult("get_cart", json.RawMessage(res)); err != nil {
		t.Fatalf("valid cart result rejected: %v", err)
	}
	if err := v.ValidateResult("get_cart", json.RawMessage(`{"ucp":{"version":"2026-07-28"},"id":"cart_1"}`)); err == nil {
		t.Fatal("a cart without line_items, currency and totals validated")
	}
	if _, err := ToolInputSchema(bindingTool(t, "create_cart"), nil); err != nil {
		t.Fatal(err)
	}
}
