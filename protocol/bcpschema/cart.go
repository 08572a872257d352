package bcpschema

import (
	"fmt"
	"slices"
)

// # Cart tools
//
// The cart capability (br.dev.bcp.shopping.cart) has four MCP tools
// (OpenRPC services/shopping/mcp.openrpc.json), rows of RootCart:
// create_cart {meta, cart}, get_cart {meta, id}, update_cart {meta, id,
// cart} and cancel_cart {meta (with idempotency-key), id}. cart is
// shopping/cart.json resolved for the tool's op, except that, as for
// checkout, the payload may not carry id: the top-level id names the cart
// (upstream's update marks cart.id required; the binding moves it to the
// argument). Results are the cart or an error_response. Cart schemas do
// not depend on the negotiated checkout extensions (cart.json is open, so
// discounts pass as members).

// CapCart is the cart capability's name.
const CapCart = "br.dev.bcp.shopping.cart"

const cartSchemaRef = "schemas/shopping/cart.json"

func cartToolInputDoc(st *store, t Tool, _ []string) (map[string]any, error) {
	props, required := envelopeOf(t)
	b, err := newBundler(st, Request, t.Op)
	if err != nil {
		return nil, err
	}
	if t.Payload() == "cart" {
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
			"description": fmt.Sprintf("Cart payload resolved for the %s operation. MUST NOT contain id: existing carts are identified by the top-level id argument.", t.Op),
			"properties":  map[string]any{"id": forbidden()},
		}
		required = append(required, "cart")
	}
	return b.document(map[string]any{
		"title":                t.Name + " arguments",
		"type":                 "object",
		"required":             required,
		"additionalProperties": false,
		"properties":           props,
	}), nil
}

func cartToolOutputDoc(st *store, t Tool, _ []string) (map[string]any, error) {
	b, err := newBundler(st, Response, t.Op)
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
		"title": t.Name + " result",
		"type":  "object",
		"oneOf": []any{map[string]any{"$ref": "#/$defs/cart"}, map[string]any{"$ref": "#/$defs/error_response"}},
	}), nil
}
