package bcpschema

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/protocol/bcpschema/internal/derivation"
)

// A create_checkout payload with cart_id needs no line_items; with line
// items too it is still valid (the cart's win at the service).
func TestCreateCheckoutFromCart(t *testing.T) {
	v := defaultToolValidator(t)
	meta := `"meta":{"ucp-agent":{"profile":"https://platform.example/agent.json"}}`
	for _, args := range []string{
		`{` + meta + `,"checkout":{"cart_id":"cart_01"}}`,
		`{` + meta + `,"checkout":{"cart_id":"cart_01","fulfillment":{"methods":[{"type":"shipping"}]}}}`,
		`{` + meta + `,"checkout":{"cart_id":"cart_01","line_items":[{"item":{"id":"sku"},"quantity":1}]}}`,
	} {
		if err := v.ValidateToolInput("create_checkout", json.RawMessage(args)); err != nil {
			t.Errorf("%s: %v", args, err)
		}
	}
	// Every capability set (the base alone too) builds the same rule.
	only, err := newBindingValidator(CapCheckout)
	if err != nil {
		t.Fatal(err)
	}
	if err := only.ValidateToolInput("create_checkout", json.RawMessage(`{`+meta+`,"checkout":{"cart_id":"cart_01"}}`)); err != nil {
		t.Errorf("checkout only: %v", err)
	}
	if g := got(t, only.ValidateToolInput("create_checkout", json.RawMessage(`{`+meta+`,"checkout":{}}`))); len(g) != 1 || g[0] != "$.checkout.line_items required" {
		t.Errorf("checkout only, empty payload: %v", g)
	}
}

// The published checkout_mandate pattern admits what the platform
// requires: an SD-JWT with a key-binding JWT, as the wallet makes it; and
// everything upstream's pattern admitted.
func TestMandatePatternAdmitsKeyBinding(t *testing.T) {
	raw, err := Resolve("schemas/shopping/ap2_mandate.json#/$defs/checkout_mandate", Request, OpComplete)
	if err != nil {
		t.Fatal(err)
	}
	var def struct{ Pattern string }
	if err := json.Unmarshal(raw, &def); err != nil || def.Pattern != derivation.MandatePattern {
		t.Fatalf("ap2_mandate.json checkout_mandate pattern %q, want %q (%v)", def.Pattern, derivation.MandatePattern, err)
	}
	re := regexp.MustCompile(def.Pattern)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w := &ap2.Wallet{Issuer: key, IssuerKID: "k1", IssuerID: "https://platform.example/agent.json"}
	checkout := json.RawMessage(`{"id":"chk_1","ap2":{"merchant_authorization":"eyJhbGciOiJFUzI1NiJ9..c2ln"}}`)
	kb, err := w.Mandate(checkout, "https://loja.example", ap2.MandateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := w.Mandate(checkout, "https://loja.example", ap2.MandateOptions{NoKeyBinding: true})
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(kb, "~"); strings.Count(parts[len(parts)-1], ".") != 2 {
		t.Fatalf("the wallet's mandate does not end in a key-binding JWT: %s", kb)
	}
	for _, s := range []string{kb, plain, "h.p.s", "h..s", "h.p.s~d1~d2", "h.p.s~", "h.p.s~d1~", "h.p.s~kb.p.s", "h.p.s~d1~d2~kb.p.s"} {
		if !re.MatchString(s) {
			t.Errorf("pattern refuses %q", s)
		}
	}
	for _, s := range []string{"", "h.p", "h.p.s~~", "h.p.s~kb.p", "h.p.s~kb.p.s~", "h.p.s~kb..s", "h.p.s~d1~kb.p.s.x", "h.p.s d"} {
		if re.MatchString(s) {
			t.Errorf("pattern admits %q", s)
		}
	}
	// The complete_checkout tool schema (AP2 negotiated) accepts it.
	args, _ := json.Marshal(map[string]any{
		"meta":     map[string]any{"ucp-agent": map[string]any{"profile": "https://platform.example/agent.json"}, "idempotency-key": "550e8400-e29b-41d4-a716-446655440000"},
		"id":       "chk_1",
		"checkout": map[string]any{"payment": map[string]any{}, "ap2": map[string]any{"checkout_mandate": kb}},
	})
	if err := defaultToolValidator(t).ValidateToolInput("complete_checkout", args); err != nil {
		t.Errorf("complete_checkout with a key-bound mandate: %v", err)
	}
}
