package httpsig

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"testing"
	"time"
)

// The validity window (RFC 9421 §3.2.1: the verifier's call): created
// older than MaxAge + ClockSkew or later than now + ClockSkew, expires
// before now - ClockSkew, and missing required parameters are refused with
// ErrSignatureInvalid and a detail naming the reason.
func TestVerifierWindowReasons(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Unix(1767225600, 0)
	base := Verifier{Keys: StaticKeys(mustPublicKey(t, "k", &key.PublicKey)), MaxAge: 5 * time.Minute, ClockSkew: 30 * time.Second,
		Now: func() time.Time { return now }}
	cases := []struct {
		name    string
		created time.Time // zero: no created
		expires time.Duration
		nonce   string
		mod     func(*Verifier)
		detail  string // "" : accepted
	}{
		{name: "fresh", created: now},
		{name: "at the window's edge", created: now.Add(-330 * time.Second)},
		{name: "ahead within the skew", created: now.Add(30 * time.Second)},
		{name: "stale", created: now.Add(-331 * time.Second), detail: "created is older than the 300 s window (30 s of clock skew allowed)"},
		{name: "30 days old", created: now.Add(-30 * 24 * time.Hour), detail: "created is older than the 300 s window (30 s of clock skew allowed)"},
		{name: "future", created: now.Add(31 * time.Second), detail: "created is in the future, beyond the 30 s of clock skew allowed"},
		{name: "expired", created: now.Add(-2 * time.Minute), expires: time.Minute, detail: "the signature expired: expires is past, beyond the 30 s of clock skew allowed"},
		{name: "expired within the skew", created: now.Add(-2 * time.Minute), expires: 90 * time.Second},
		{name: "no window", created: now.Add(-30 * 24 * time.Hour), mod: func(v *Verifier) { v.MaxAge = 0 }},
		{name: "fractional", created: now.Add(-2 * time.Second), mod: func(v *Verifier) { v.MaxAge, v.ClockSkew = 1500*time.Millisecond, -1 },
			detail: "created is older than the 1.5 s window (0 s of clock skew allowed)"},
		{name: "created required", mod: func(v *Verifier) { v.RequireCreated = true }, detail: "the created parameter is required"},
		{name: "nonce required", created: now, mod: func(v *Verifier) { v.RequireNonce = true }, detail: "the nonce parameter is required"},
		{name: "nonce given", created: now, nonce: "n", mod: func(v *Verifier) { v.RequireNonce = true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &Signer{Key: key, KeyID: "k", Expires: tc.expires, Created: func() time.Time { return tc.created }}
			if tc.nonce != "" {
				s.Nonce = func() (string, error) { return tc.nonce, nil }
			}
			r, _ := http.NewRequest(http.MethodGet, "https://business.example/checkout-sessions/chk_1", nil)
			if err := s.SignRequest(r, nil); err != nil {
				t.Fatal(err)
			}
			v := base
			if tc.mod != nil {
				tc.mod(&v)
			}
			res, err := v.VerifyRequest(context.Background(), r, nil)
			if tc.detail == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if res.Nonce != tc.nonce {
					t.Fatalf("nonce = %q", res.Nonce)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != ErrSignatureInvalid || e.Label != "sig1" || e.Detail != tc.detail {
				t.Fatalf("got %v, want signature invalid: %s", err, tc.detail)
			}
		})
	}
}
