package bcpschema

import (
	"encoding/json"
	"fmt"
	"slices"
)

// # Cart tools
//
// The cart capability (br.dev.bcp.shopping.cart) has four MCP tools
// (OpenRPC services/shopping/mcp.openrpc.json): create_cart {meta, cart},
// get_cart {meta, id}, update_cart {meta, id, cart} and cancel_cart {meta
// (with idempotency-key), id}. cart is shopping/cart.json resolved for the
// tool's op, except that, as for checkout, the payload may not carry id:
// the top-level id names the cart (upstream's update marks cart.id
// required; the binding moves it to the argument). Results are the cart or
// an error_response. Cart schemas do not depend on the negotiated checkout
// extensions (cart.json is open, so discounts pass as members), so they
// compile once, apart from the checkout Validator.

// CapCart is the cart capability's name.
const CapCart = "br.dev.bcp.shopping.cart"

type cartToolSpec struct {
	op          Op
	id, cart    bool
	idempotency bool
}

var cartTools = map[string]cartToolSpec{
	"create_cart": {op: OpCreate, cart: true},
	"get_cart":    {op: OpRead, id: true},
	"update_cart": {op: OpUpdate, id: true, cart: true},
	"cancel_cart": {op: OpCancel, id: true, idempotency: true},
}

const cartSchemaRef = "schemas/shopping/cart.json"

// CartTools lists the cart MCP tools, sorted.
func CartTools() []string {
	names := make([]string, 0, len(cartTools))
	for n := range cartTools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookupCartTool(tool string) (cartToolSpec, error) {
	t, ok := cartTools[tool]
	if !ok {
		return cartToolSpec{}, fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	return t, nil
}

func cartToolInputDoc(st *store, tool string, _ []string) (map[string]any, error) {
	t, err := lookupCartTool(tool)
	if err != nil {
		return nil, err
	}
	props := map[string]any{"meta": metaSchema(t.idempotency)}
	required := []any{"meta"}
	if t.id {
		props["id"] = map[string]any{"type": "string", "description": "The cart id (from create_cart)."}
		required = append(required, "id")
	}
	b, err := newBundler(st, Request, t.op)
	if err != nil {
		return nil, err
	}
	if t.cart {
		b.reserve("cart")
		root, err := b.resolveRootRef(cartSchemaRef)
		if err != nil {
			return nil, err
		}
		if m, ok := root.(map[string]any); ok {
			if req, ok := m["required"].([]any); ok {
				m["required"] = slices.DeleteFunc(slices.Clone(req), func(v any) bool { return v == "id" })
			}
		}
		b.defs["cart"] = root
		props["cart"] = map[string]any{
			"$ref":        "#/$defs/cart",
			"description": fmt.Sprintf("Cart payload resolved for the %s operation. MUST NOT contain id: existing carts are identified by the top-level id argument.", t.op),
			"properties":  map[string]any{"id": forbidden()},
		}
		required = append(required, "cart")
	}
	return b.document(map[string]any{
		"title":                tool + " arguments",
		"type":                 "object",
		"required":             required,
		"additionalProperties": false,
		"properties":           props,
	}), nil
}

func cartToolOutputDoc(st *store, tool string, _ []string) (map[string]any, error) {
	t, err := lookupCartTool(tool)
	if err != nil {
		return nil, err
	}
	b, err := newBundler(st, Response, t.op)
	if err != nil {
		return nil, err
	}
	b.reserve("cart")
	root, err := b.resolveRootRef(cartSchemaRef)
	if err != nil {
		return nil, err
	}
	b.defs["cart"] = root
	b.reserve("error_response")
	er, err := b.resolveRootRef("schemas/shopping/types/error_response.json")
	if err != nil {
		return nil, err
	}
	b.defs["error_response"] = er
	return b.document(map[string]any{
		"title": tool + " result",
		"type":  "object",
		"oneOf": []any{map[string]any{"$ref": "#/$defs/cart"}, map[string]any{"$ref": "#/$defs/error_response"}},
	}), nil
}

// CartToolInputSchema returns the self-contained JSON Schema of a cart
// tool's arguments (a fresh copy).
func CartToolInputSchema(tool string) (json.RawMessage, error) {
	return cachedToolSchema("cart-in", tool, nil, cartToolInputDoc)
}

// CartToolOutputSchema returns the self-contained JSON Schema of a cart
// tool's structuredContent (a fresh copy).
func CartToolOutputSchema(tool string) (json.RawMessage, error) {
	return cachedToolSchema("cart-out", tool, nil, cartToolOutputDoc)
}

// CartValidator validates cart tool arguments and results.
type CartValidator = ToolValidator

// NewCartValidator compiles the cart tools' schemas.
func NewCartValidator() (*CartValidator, error) {
	return newToolValidator(CartTools(), cartToolInputDoc, cartToolOutputDoc)
}
