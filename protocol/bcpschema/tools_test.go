package bcpschema

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func schemaMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestToolSchemas(t *testing.T) {
	for _, tl := range checkoutTools {
		tool := tl.Name
		in, err := ToolInputSchema(tl, DefaultCheckoutCapabilities())
		if err != nil {
			t.Fatal(err)
		}
		out, err := ToolOutputSchema(tl, DefaultCheckoutCapabilities())
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range []json.RawMessage{in, out} {
			checkSelfContained(t, raw)
			m := schemaMap(t, raw)
			// MCP requires object schemas at the root of both.
			if m["type"] != "object" || m["$schema"] != draft2020 {
				t.Errorf("%s: root type %v, $schema %v", tool, m["type"], m["$schema"])
			}
			if strings.Contains(string(raw), "ucp_request") || strings.Contains(string(raw), "ucp_response") {
				t.Errorf("%s: annotations in tool schema", tool)
			}
		}

		m := schemaMap(t, in)
		props := m["properties"].(map[string]any)
		required := requiredOf(m)
		meta := props["meta"].(map[string]any)
		metaReq := requiredOf(meta)
		agent := meta["properties"].(map[string]any)["ucp-agent"].(map[string]any)
		if !slices.Contains(required, "meta") || !slices.Contains(metaReq, "ucp-agent") || meta["additionalProperties"] != true ||
			agent["properties"].(map[string]any)["profile"].(map[string]any)["format"] != "uri" {
			t.Errorf("%s: meta = %v", tool, meta)
		}
		idem := tool == "complete_checkout" || tool == "cancel_checkout"
		if slices.Contains(metaReq, "idempotency-key") != idem {
			t.Errorf("%s: idempotency-key required = %v", tool, !idem)
		}
		_, hasID := props["id"]
		if hasID != (tool != "create_checkout") || hasID != slices.Contains(required, "id") {
			t.Errorf("%s: id property %v, required %v", tool, hasID, required)
		}
		ck, hasCheckout := props["checkout"].(map[string]any)
		if hasCheckout != (tool == "create_checkout" || tool == "update_checkout" || tool == "complete_checkout") {
			t.Errorf("%s: checkout property %v", tool, hasCheckout)
		}
		if hasCheckout && !reflect.DeepEqual(ck["properties"].(map[string]any)["id"], map[string]any{"not": map[string]any{}}) {
			t.Errorf("%s: checkout.id not forbidden: %v", tool, ck)
		}

		o := schemaMap(t, out)
		want := "#/$defs/checkout"
		if tool == "get_order" {
			want = "#/$defs/order"
		}
		one := o["oneOf"].([]any)
		if len(one) != 2 || one[0].(map[string]any)["$ref"] != want || one[1].(map[string]any)["$ref"] != "#/$defs/error_response" {
			t.Errorf("%s: output oneOf = %v", tool, one)
		}
	}
	if _, err := ToolInputSchema(Tool{Name: "create_wishlist", Root: "wishlist", Op: OpCreate}, nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("err = %v, want ErrUnknownTool", err)
	}
}

func TestToolSchemaPerOp(t *testing.T) {
	defs := func(tool string, caps []string) map[string]any {
		raw, err := ToolInputSchema(bindingTool(t, tool), caps)
		if err != nil {
			t.Fatal(err)
		}
		return schemaMap(t, raw)["$defs"].(map[string]any)
	}
	create := defs("create_checkout", DefaultCheckoutCapabilities())
	complete := defs("complete_checkout", DefaultCheckoutCapabilities())
	base := func(d map[string]any) map[string]any { return d["shopping.checkout"].(map[string]any) }
	// On create, line_items is required unless cart_id names a cart to
	// convert (cartid.go): the base requires nothing, the payload decides.
	if g := requiredOf(base(create)); len(g) != 0 {
		t.Errorf("create checkout required = %v", g)
	}
	createIn := func() map[string]any {
		raw, err := ToolInputSchema(bindingTool(t, "create_checkout"), DefaultCheckoutCapabilities())
		if err != nil {
			t.Fatal(err)
		}
		return schemaMap(t, raw)["properties"].(map[string]any)["checkout"].(map[string]any)
	}()
	if !reflect.DeepEqual(createIn["if"], map[string]any{"required": []any{"cart_id"}}) || !reflect.DeepEqual(createIn["else"], map[string]any{"required": []any{"line_items"}}) ||
		createIn["properties"].(map[string]any)["cart_id"].(map[string]any)["type"] != "string" {
		t.Errorf("create checkout payload = %v", createIn)
	}
	if g := requiredOf(base(defs("update_checkout", DefaultCheckoutCapabilities()))); !reflect.DeepEqual(g, []string{"line_items"}) {
		t.Errorf("update checkout required = %v", g)
	}
	if g := requiredOf(base(complete)); !reflect.DeepEqual(g, []string{"payment"}) {
		t.Errorf("complete checkout required = %v", g)
	}
	if _, ok := base(complete)["properties"].(map[string]any)["line_items"]; ok {
		t.Error("complete checkout still describes line_items")
	}
	// Composition: the checkout root is allOf[base, one addition per extension].
	ck := create["checkout"].(map[string]any)["allOf"].([]any)
	if len(ck) != 5 || ck[0].(map[string]any)["$ref"] != "#/$defs/shopping.checkout" {
		t.Errorf("composed checkout = %v", ck)
	}
	only := defs("create_checkout", []string{CapCheckout})
	if _, ok := only["shopping.fulfillment:fulfillment"]; ok {
		t.Error("fulfillment reachable without the fulfillment capability")
	}
	if only["checkout"].(map[string]any)["$ref"] != "#/$defs/shopping.checkout" {
		t.Errorf("checkout-only root = %v", only["checkout"])
	}
	// Callers get copies.
	get := bindingTool(t, "get_checkout")
	a, _ := ToolInputSchema(get, DefaultCheckoutCapabilities())
	a[0] = 'X'
	if b, _ := ToolInputSchema(get, DefaultCheckoutCapabilities()); b[0] != '{' {
		t.Error("ToolInputSchema returned shared bytes")
	}
}

func TestCheckoutSchema(t *testing.T) {
	raw, err := CheckoutSchema(DefaultCheckoutCapabilities(), Response, OpRead)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, raw)
	defs := schemaMap(t, raw)["$defs"].(map[string]any)
	for _, k := range []string{"shopping.checkout", "shopping.fulfillment:fulfillment", "shopping.discount:discounts_object",
		"shopping.buyer_consent:buyer", "shopping.ap2_mandate:merchant_authorization", "ucp:response_checkout_schema"} {
		if _, ok := defs[k]; !ok {
			t.Errorf("$defs lacks %s", k)
		}
	}
	if g := requiredOf(defs["shopping.checkout"].(map[string]any)); !reflect.DeepEqual(g, []string{"ucp", "id", "line_items", "status", "currency", "totals", "links"}) {
		t.Errorf("response checkout required = %v", g)
	}
	if _, err := CheckoutSchema([]string{CapCheckout}, "both", OpRead); err == nil {
		t.Error("bad direction accepted")
	}
}

// TestSchemasDeterministic rebuilds a tool schema from scratch: bytes must
// not depend on map iteration order.
func TestSchemasDeterministic(t *testing.T) {
	st, err := defaultStore()
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for i := 0; i < 5; i++ {
		doc, err := toolOutputDoc(st, bindingTool(t, "complete_checkout"), DefaultCheckoutCapabilities())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(doc)
		if i == 0 {
			first = data
		} else if string(data) != string(first) {
			t.Fatal("tool schema differs between builds")
		}
	}
}
