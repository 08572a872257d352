package bcpschema

import (
	"fmt"
	"slices"
	"strings"
)

// # create_checkout from a cart
//
// A checkout made from a cart (create_checkout with checkout.cart_id,
// upstream's cart.json $defs.checkout) takes the cart's line items, buyer,
// context and discount codes: whatever the payload repeats is ignored. So
// the create schema asks for line_items only when cart_id is absent: the
// base checkout's required list loses line_items and the payload gets
// {"if": {"required": ["cart_id"]}, "else": {"required": ["line_items"]}},
// which reports a payload with neither at $.checkout.line_items, as before.
// {"cart_id": "cart_…"} alone is what UCP's conformance suite sends.

// cartIDSchema is checkout.cart_id on create.
var cartIDSchema = map[string]any{
	"type": "string",
	"description": "Cart id (from create_cart) to convert into this checkout; line_items may then be omitted. " +
		"The checkout takes the cart's line items, buyer, context and discount codes and ignores those of this payload; " +
		"converting the same cart again returns the same checkout. Needs the cart capability (" + CapCart + ").",
}

// convertibleOnCreate makes the create_checkout payload schema checkout
// (the property schema that refers to defs["checkout"]) accept cart_id in
// place of line_items.
func convertibleOnCreate(defs map[string]any, checkout map[string]any) error {
	base, err := baseCheckoutDef(defs)
	if err != nil {
		return err
	}
	req, _ := base["required"].([]any)
	i := slices.Index(req, any("line_items"))
	if i < 0 {
		return fmt.Errorf("bcpschema: the create checkout does not require line_items (required %v)", req)
	}
	base["required"] = slices.Delete(slices.Clone(req), i, i+1)
	props, _ := checkout["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		checkout["properties"] = props
	}
	props["cart_id"] = cartIDSchema
	checkout["if"] = map[string]any{"required": []any{"cart_id"}}
	checkout["else"] = map[string]any{"required": []any{"line_items"}}
	return nil
}

// baseCheckoutDef is the $defs entry of the base checkout the composed
// defs["checkout"] refers to: {"$ref": base} without extensions, or
// allOf[{"$ref": base}, additions...] (resolveComposed).
func baseCheckoutDef(defs map[string]any) (map[string]any, error) {
	root, _ := defs["checkout"].(map[string]any)
	ref, _ := root["$ref"].(string)
	if all, ok := root["allOf"].([]any); ok && ref == "" && len(all) > 0 {
		first, _ := all[0].(map[string]any)
		ref, _ = first["$ref"].(string)
	}
	key, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("bcpschema: the composed checkout does not start with a reference to its base (%v)", root)
	}
	base, ok := defs[key].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("bcpschema: no $defs entry %q", key)
	}
	return base, nil
}
