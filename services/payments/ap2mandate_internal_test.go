package payments

import (
	"strings"
	"testing"
)

// A card instrument whose credential.token is an AP2 payment mandate (the
// checkout service verified it) pays in sandbox with the simulator's
// approving test card, one per mandate; a production handler refuses it.
func TestVerifiedAP2MandateToken(t *testing.T) {
	a, f := verifiedAP2Mandate("h.p.s~d~k.b.s", handler{Environment: "sandbox"})
	b, g := verifiedAP2Mandate("h.p.s~e~k.b.s", handler{Environment: "sandbox"})
	if f != nil || g != nil || !strings.HasPrefix(a, "tok_jws") || !strings.HasSuffix(a, "_4242") || a == b {
		t.Fatalf("sandbox: %q %v, %q %v", a, f, b, g)
	}
	if tok, f := verifiedAP2Mandate("h.p.s~d~k.b.s", handler{Environment: "production"}); f == nil || tok != "" || !strings.Contains(f.msg, "token do processador") {
		t.Fatalf("production: %q %v", tok, f)
	}
}
