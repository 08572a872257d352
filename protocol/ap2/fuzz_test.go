package ap2

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzMandate feeds the mandate parser and verifier what an agent can
// send in ap2.checkout_mandate: it must never panic, and anything it
// accepts must be a mandate of the fuzz key for this checkout.
func FuzzMandate(f *testing.F) {
	// A fixed key keeps the corpus valid across runs.
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), append([]byte{0}, "bcp-ap2-fuzz-issuer-key-0123456"...))
	if err != nil {
		f.Fatal(err)
	}
	pub, err := PublicJWK(key, "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	w := &Wallet{Issuer: key, IssuerKID: "fuzz"}
	good, err := w.Mandate(json.RawMessage(`{"id":"chk_f","ap2":{"merchant_authorization":"a..b"}}`), "https://m.example", MandateOptions{Now: now})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(strings.Split(good, "~")[0] + "~")
	f.Add("a.b.c~d~e.f.g")
	f.Add("eyJhbGciOiJFUzI1NiJ9.eyJjaGVja291dCI6e319.c2lnbmF0dXJl~WyJzYWx0IiwiY2xhaW0iXQ~a2Itand0")
	opts := VerifyOptions{IssuerKeys: []json.RawMessage{pub}, Audience: "https://m.example", Nonce: "chk_f", Now: now}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil {
			if CodeOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		_ = m.Digest()
		v, err := m.Verify(opts)
		if err != nil {
			if CodeOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		_, _ = v.CheckoutMandate(now)
		_, _ = v.PaymentMandate()
		if v.IssuerKID != "fuzz" || v.Nonce != "chk_f" {
			t.Fatalf("accepted a mandate that is not the fuzz key's for chk_f: %+v", v)
		}
	})
}
