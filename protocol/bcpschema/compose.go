package bcpschema

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Capability names (architecture §2).
const (
	CapCheckout     = "br.dev.bcp.shopping.checkout"
	CapFulfillment  = "br.dev.bcp.shopping.fulfillment"
	CapDiscount     = "br.dev.bcp.shopping.discount"
	CapBuyerConsent = "br.dev.bcp.shopping.buyer_consent"
	CapAP2Mandate   = "br.dev.bcp.shopping.ap2_mandate"
	CapOrder        = "br.dev.bcp.shopping.order"
)

// DefaultCheckoutCapabilities is every checkout capability BCP implements:
// the root and its four extensions. NewValidator() and NewToolValidator
// without capabilities use it. Note that with ap2_mandate negotiated, complete
// requires "ap2" (its schema marks ap2 and ap2.checkout_mandate required on
// complete); pass the negotiated set when AP2 is not in it.
func DefaultCheckoutCapabilities() []string {
	return []string{CapCheckout, CapAP2Mandate, CapBuyerConsent, CapDiscount, CapFulfillment}
}

// composeCheckout builds the composed checkout schema for a negotiated
// capability set, as upstream composes it (digest §1): every extension's
// $defs[<root capability name>] is allOf[checkout.json, {additions}], and the
// composition is allOf over those, so a payload must satisfy the base and
// every extension. Capabilities that are known but do not extend checkout
// (order, cart, identity linking) are ignored; unknown names are an error.
// It returns the composed root (with absolute $refs) and the capabilities used.
func composeCheckout(st *store, capabilities []string) (any, []string, error) {
	root, ok := st.caps[CapCheckout]
	if !ok {
		return nil, nil, fmt.Errorf("bcpschema: no schema for %s", CapCheckout)
	}
	if !slices.Contains(capabilities, CapCheckout) {
		return nil, nil, fmt.Errorf("bcpschema: capability set lacks the root %s", CapCheckout)
	}
	var exts []string
	for _, c := range capabilities {
		if c == CapCheckout || slices.Contains(exts, c) {
			continue
		}
		u, ok := st.caps[c]
		if !ok {
			return nil, nil, fmt.Errorf("bcpschema: unknown capability %q", c)
		}
		if _, err := st.lookup(u, "/$defs/"+escapePointer(CapCheckout)); err != nil {
			continue // does not extend checkout
		}
		exts = append(exts, c)
	}
	slices.Sort(exts) // composition order must not depend on profile order
	used := append([]string{CapCheckout}, exts...)
	if len(exts) == 0 {
		return map[string]any{"$ref": root}, used, nil
	}
	branches := make([]any, len(exts))
	for i, c := range exts {
		branches[i] = map[string]any{"$ref": st.caps[c] + "#/$defs/" + escapePointer(CapCheckout)}
	}
	return map[string]any{"allOf": branches}, used, nil
}

// CheckoutSchema returns the composed checkout schema for the negotiated
// capabilities, resolved for dir and op and bundled into one self-contained
// document. For op OpCancel and dir Request there is no payload, but the
// schema is still produced (per-op annotations do not name cancel).
func CheckoutSchema(capabilities []string, dir Direction, op Op) (json.RawMessage, error) {
	st, err := defaultStore()
	if err != nil {
		return nil, err
	}
	composed, _, err := composeCheckout(st, capabilities)
	if err != nil {
		return nil, err
	}
	b, err := newBundler(st, dir, op)
	if err != nil {
		return nil, err
	}
	root, err := b.resolveComposed(composed)
	if err != nil {
		return nil, err
	}
	return json.Marshal(b.document(root))
}

// resolveComposed resolves a composed checkout root and flattens it.
//
// Every extension definition is allOf[checkout, additions], so the plain
// composition validates the whole base checkout once per extension (4x with
// the default set). allOf is a conjunction, and conjoining the same schema
// twice changes nothing, so when every resolved extension starts with a $ref
// to the same base copy the result is rewritten to allOf[base, additions...],
// which validates the base once. If allOf propagation produced per-extension
// variants of the base, the refs differ and nothing is rewritten.
func (b *bundler) resolveComposed(composed any) (any, error) {
	root, err := b.resolveRoot(composed, BaseURL)
	if err != nil {
		return nil, err
	}
	m, ok := root.(map[string]any)
	if !ok {
		return root, nil
	}
	exts, ok := m["allOf"].([]any)
	if !ok || len(m) != 1 {
		return root, nil
	}
	var base string
	flat := []any{nil}
	var keys []string
	for _, e := range exts {
		ref, _ := e.(map[string]any)["$ref"].(string)
		key, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok || len(e.(map[string]any)) != 1 {
			return root, nil
		}
		def, _ := b.defs[key].(map[string]any)
		branches, _ := def["allOf"].([]any)
		if len(branches) == 0 {
			return root, nil
		}
		for k := range def {
			if k != "allOf" && k != "title" && k != "description" {
				return root, nil
			}
		}
		first, _ := branches[0].(map[string]any)
		r, _ := first["$ref"].(string)
		if len(first) != 1 || r == "" || (base != "" && r != base) {
			return root, nil
		}
		base = r
		for _, add := range branches[1:] {
			if am, ok := add.(map[string]any); ok {
				if _, has := am["title"]; !has && def["title"] != nil {
					add = withMember(am, "title", def["title"])
				}
			}
			flat = append(flat, add)
		}
		keys = append(keys, key)
	}
	flat[0] = map[string]any{"$ref": base}
	for _, k := range keys {
		delete(b.defs, k) // now unreferenced
	}
	return map[string]any{"allOf": flat}, nil
}

// withMember returns a copy of m with k set; resolved maps may be shared.
func withMember(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// capsKey canonicalises a capability set for caching.
func capsKey(capabilities []string) string {
	c := slices.Clone(capabilities)
	slices.Sort(c)
	return strings.Join(slices.Compact(c), ",")
}
