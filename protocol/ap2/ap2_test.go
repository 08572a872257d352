package ap2

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func merchantSigner(t testing.TB, k *ecdsa.PrivateKey, kid string) jose.Signer {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The signing input is exactly the spec's: b64url(header) "." b64url(JCS(checkout
// without ap2)); member order, spacing and the ap2 member do not matter.
func TestMerchantAuthorizationSigningInput(t *testing.T) {
	k := newKey(t)
	pub, _ := PublicJWK(k, "m1")
	checkout := []byte(`{"ucp":{"version":"2026-07-28"},"id":"chk_1","totals":[{"type":"total","amount":9072}],"currency":"BRL"}`)
	payload, err := Payload(checkout)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"currency":"BRL","id":"chk_1","totals":[{"amount":9072,"type":"total"}],"ucp":{"version":"2026-07-28"}}`; string(payload) != want {
		t.Fatalf("payload %s, want %s", payload, want)
	}
	auth, err := Sign(merchantSigner(t, k, "m1"), payload)
	if err != nil {
		t.Fatal(err)
	}
	h, sig, ok := strings.Cut(auth, "..")
	if !ok || strings.Contains(sig, ".") {
		t.Fatalf("not detached: %s", auth)
	}
	hdr, _ := base64.RawURLEncoding.DecodeString(h)
	var hm map[string]any
	_ = json.Unmarshal(hdr, &hm)
	if hm["alg"] != "ES256" || hm["kid"] != "m1" {
		t.Fatalf("header %s", hdr)
	}
	// Verify by hand with the spec's reconstruction: the compact JWS with
	// the payload put back verifies with the public key.
	var jwk jose.JSONWebKey
	_ = jwk.UnmarshalJSON(pub)
	full := h + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + sig
	obj, err := jose.ParseSignedCompact(full, Algorithms)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obj.Verify(jwk); err != nil {
		t.Fatalf("spec reconstruction does not verify: %v", err)
	}
	signed, err := Insert(checkout, auth)
	if err != nil {
		t.Fatal(err)
	}
	reordered := []byte(`{"currency":"BRL", "ap2":{"merchant_authorization":"x..y"}, "id":"chk_1","totals":[{"amount":9072,"type":"total"}],"ucp":{"version":"2026-07-28"}}`)
	for _, c := range [][]byte{signed, reordered} {
		if kid, err := VerifyAuthorization(c, auth, []json.RawMessage{pub}); err != nil || kid != "m1" {
			t.Fatalf("verify %s: %q %v", c, kid, err)
		}
	}
	tampered := []byte(strings.Replace(string(signed), "9072", "1", 1))
	if _, err := VerifyAuthorization(tampered, auth, []json.RawMessage{pub}); err == nil {
		t.Fatal("a tampered total verifies")
	}
	other, _ := PublicJWK(newKey(t), "m1")
	if _, err := VerifyAuthorization(signed, auth, []json.RawMessage{other}); err == nil {
		t.Fatal("verifies with another key")
	}
	if _, err := VerifyAuthorization(signed, auth, nil); err == nil {
		t.Fatal("verifies with no key")
	}
}

func TestMandateVerify(t *testing.T) {
	issuer, holder := newKey(t), newKey(t)
	pub, _ := PublicJWK(issuer, "agent-1")
	w := &Wallet{Issuer: issuer, IssuerKID: "agent-1", Holder: holder, IssuerID: "https://agent.example/profile.json"}
	checkout := json.RawMessage(`{"id":"chk_1","currency":"BRL","ap2":{"merchant_authorization":"a..b"}}`)
	now := time.Unix(1_800_000_000, 0)
	opts := VerifyOptions{IssuerKeys: []json.RawMessage{pub}, Audience: "https://loja.example", Nonce: "chk_1", Now: now}
	mk := func(o MandateOptions) string {
		if o.Now.IsZero() {
			o.Now = now
		}
		s, err := w.Mandate(checkout, "https://loja.example", o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := mk(MandateOptions{})
	m, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Verify(opts)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := v.CheckoutMandate(now)
	if err != nil {
		t.Fatal(err)
	}
	jwt, _ := CheckoutJWT(checkout)
	if cm.CheckoutJWT != jwt || cm.CheckoutHash != sdHash(jwt) || v.VCT != VCTCheckout || cm.Open || v.IssuerKID != "agent-1" || v.Expires != now.Add(10*time.Minute).Unix() || v.Issuer != "https://agent.example/profile.json" || len(v.Digest) != 64 {
		t.Fatalf("verified %+v", v)
	}

	otherPub, _ := PublicJWK(newKey(t), "agent-1")
	parts := strings.Split(good, "~")
	cases := []struct {
		name, mandate string
		opts          func(VerifyOptions) VerifyOptions
		code          string
	}{
		{"no agent key", good, func(o VerifyOptions) VerifyOptions { o.IssuerKeys = nil; return o }, CodeAgentMissingKey},
		{"private or junk keys only", good, func(o VerifyOptions) VerifyOptions {
			o.IssuerKeys = []json.RawMessage{json.RawMessage(`{"kty":"oct","k":"AAAA","kid":"x"}`), json.RawMessage(`junk`)}
			return o
		}, CodeAgentMissingKey},
		{"wrong issuer key", good, func(o VerifyOptions) VerifyOptions { o.IssuerKeys = []json.RawMessage{otherPub}; return o }, CodeMandateInvalidSignature},
		{"expired", mk(MandateOptions{Lifetime: -time.Second}), nil, CodeMandateExpired},
		{"old key binding", mk(MandateOptions{Now: now.Add(-KeyBindingMaxAge - time.Minute), Lifetime: time.Hour}), nil, CodeMandateExpired},
		{"no key binding", mk(MandateOptions{NoKeyBinding: true}), nil, CodeMandateInvalidSignature},
		{"no key binding, trailing tilde", parts[0] + "~" + parts[1] + "~", nil, CodeMandateInvalidSignature},
		{"another audience", good, func(o VerifyOptions) VerifyOptions { o.Audience = "https://other.example"; return o }, CodeMandateScopeMismatch},
		{"another checkout", good, func(o VerifyOptions) VerifyOptions { o.Nonce = "chk_2"; return o }, CodeMandateScopeMismatch},
		{"disclosure swapped", parts[0] + "~" + mustDisclosure(t) + "~" + parts[2], nil, CodeMandateInvalidSignature},
		{"disclosure dropped", parts[0] + "~" + parts[2], nil, CodeMandateInvalidSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := opts
			if c.opts != nil {
				o = c.opts(o)
			}
			m, err := Parse(c.mandate)
			if err == nil {
				_, err = m.Verify(o)
			}
			if got := CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %s", got, err, c.code)
			}
		})
	}
}

func mustDisclosure(t *testing.T) string {
	d, _, err := disclosureOf("checkout_jwt", "a.e30.b")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseRejectsGarbage(t *testing.T) {
	for _, s := range []string{"a.b.c", "x", "~~~", "a.b.c~~d", strings.Repeat("a", MaxMandate+1),
		"eyJhbGciOiJub25lIn0.eyJ9.~", "eyJhbGciOiJIUzI1NiJ9.e30.c2ln~"} {
		if _, err := Parse(s); CodeOf(err) != CodeMandateInvalidSignature {
			t.Errorf("Parse(%.40q) = %v", s, err)
		}
	}
}
