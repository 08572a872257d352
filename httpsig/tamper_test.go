package httpsig

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// tamperFixture holds one signed request in wire form; every case parses
// it afresh, changes one thing and expects a specific sentinel.
type tamperFixture struct {
	wire     []byte
	body     []byte
	verifier *Verifier
	now      time.Time
}

func newTamperFixture(t *testing.T) tamperFixture {
	t.Helper()
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Unix(1767225600, 0)
	body := []byte(`{"line_items":[{"id":"sku_1","quantity":2}]}`)
	r, _ := http.NewRequest(http.MethodPost, "https://business.example/checkout-sessions?cart=1", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("UCP-Agent", `profile="https://platform.example/.well-known/ucp"`)
	r.Header.Set("Idempotency-Key", "550e8400-e29b-41d4-a716-446655440000")
	s := &Signer{
		Key: k1, KeyID: "k1", Created: func() time.Time { return now },
		CoverIfPresent: []string{"ucp-agent", "idempotency-key"},
	}
	if err := s.SignRequest(r, body); err != nil {
		t.Fatal(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return tamperFixture{
		wire: buf.Bytes(),
		body: body,
		now:  now,
		verifier: &Verifier{
			Keys: StaticKeys(
				mustPublicKey(t, "k1", &k1.PublicKey),
				mustPublicKey(t, "k2", &k2.PublicKey),
			),
			Requirements:       RequestRequirements("ucp-agent"),
			RejectAlgParameter: true,
			Now:                func() time.Time { return now },
		},
	}
}

func (f tamperFixture) request(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(f.wire)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	return r, body
}

// editInput rewrites the Signature-Input field textually.
func editInput(r *http.Request, old, new string) {
	r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), old, new, 1))
}

func TestTamperedRequestsAreRejected(t *testing.T) {
	f := newTamperFixture(t)
	ctx := context.Background()

	r, body := f.request(t)
	res, err := f.verifier.VerifyRequest(ctx, r, body)
	if err != nil {
		t.Fatalf("untampered request: %v", err)
	}
	wantComponents := `"@method" "@authority" "@path" "@query" "content-digest" "content-type" "ucp-agent" "idempotency-key"`
	if got := strings.Join(res.Components, " "); got != wantComponents {
		t.Errorf("covered %s, want %s", got, wantComponents)
	}
	if res.KeyID != "k1" || res.Algorithm != ES256 || !res.Created.Equal(f.now) || res.Label != "sig1" {
		t.Errorf("result = %+v", res)
	}

	cases := []struct {
		name   string
		tamper func(r *http.Request, body []byte) []byte
		want   error
	}{
		{"method", func(r *http.Request, b []byte) []byte { r.Method = http.MethodPut; return b }, ErrSignatureInvalid},
		{"authority", func(r *http.Request, b []byte) []byte { r.Host = "evil.example"; return b }, ErrSignatureInvalid},
		{"authority port", func(r *http.Request, b []byte) []byte { r.Host = "business.example:8443"; return b }, ErrSignatureInvalid},
		{"path", func(r *http.Request, b []byte) []byte { r.URL.Path = "/checkout-sessions/x"; return b }, ErrSignatureInvalid},
		{"query", func(r *http.Request, b []byte) []byte { r.URL.RawQuery = "cart=2"; return b }, ErrSignatureInvalid},
		{"query removed", func(r *http.Request, b []byte) []byte { r.URL.RawQuery = ""; return b }, ErrSignatureInvalid},
		{"covered header", func(r *http.Request, b []byte) []byte { r.Header.Set("Idempotency-Key", "other"); return b }, ErrSignatureInvalid},
		{"covered header removed", func(r *http.Request, b []byte) []byte { r.Header.Del("Idempotency-Key"); return b }, ErrComponentMissing},
		{"agent header", func(r *http.Request, b []byte) []byte {
			r.Header.Set("UCP-Agent", `profile="https://evil.example/"`)
			return b
		}, ErrSignatureInvalid},
		{"content-type", func(r *http.Request, b []byte) []byte { r.Header.Set("Content-Type", "text/plain"); return b }, ErrSignatureInvalid},
		{"body", func(r *http.Request, b []byte) []byte { return bytes.Replace(b, []byte(`2`), []byte(`9`), 1) }, ErrDigestMismatch},
		{"body with matching digest", func(r *http.Request, b []byte) []byte {
			b = bytes.Replace(b, []byte(`2`), []byte(`9`), 1)
			r.Header.Set("Content-Digest", ContentDigest(b))
			return b
		}, ErrSignatureInvalid},
		{"body without digest", func(r *http.Request, b []byte) []byte { r.Header.Del("Content-Digest"); return b }, ErrComponentMissing},
		{"signature bytes", func(r *http.Request, b []byte) []byte {
			sigs, _ := ParseSignature(r.Header.Values("Signature"))
			sig := sigs["sig1"]
			sig[10] ^= 0x01
			v, _ := FormatSignature("sig1", sig)
			r.Header.Set("Signature", v)
			return b
		}, ErrSignatureInvalid},
		{"unknown keyid", func(r *http.Request, b []byte) []byte { editInput(r, `keyid="k1"`, `keyid="nope"`); return b }, ErrKeyNotFound},
		{"no keyid", func(r *http.Request, b []byte) []byte { editInput(r, `;keyid="k1"`, ``); return b }, ErrKeyNotFound},
		{"other known keyid", func(r *http.Request, b []byte) []byte { editInput(r, `keyid="k1"`, `keyid="k2"`); return b }, ErrSignatureInvalid},
		{"alg parameter added", func(r *http.Request, b []byte) []byte {
			editInput(r, `keyid="k1"`, `keyid="k1";alg="ecdsa-p256-sha256"`)
			return b
		}, ErrSignatureInvalid},
		{"created changed", func(r *http.Request, b []byte) []byte {
			editInput(r, `created=1767225600`, `created=1767225601`)
			return b
		}, ErrSignatureInvalid},
		{"covered component dropped", func(r *http.Request, b []byte) []byte {
			editInput(r, ` "idempotency-key"`, ``)
			return b
		}, ErrSignatureInvalid},
		{"label renamed in Signature only", func(r *http.Request, b []byte) []byte {
			r.Header.Set("Signature", strings.Replace(r.Header.Get("Signature"), "sig1=", "sig2=", 1))
			return b
		}, ErrMalformed},
		{"Signature removed", func(r *http.Request, b []byte) []byte { r.Header.Del("Signature"); return b }, ErrSignatureMissing},
		{"both removed", func(r *http.Request, b []byte) []byte {
			r.Header.Del("Signature")
			r.Header.Del("Signature-Input")
			return b
		}, ErrSignatureMissing},
		{"Signature-Input garbage", func(r *http.Request, b []byte) []byte { r.Header.Set("Signature-Input", "sig1=(((("); return b }, ErrMalformed},
		{"Signature not bytes", func(r *http.Request, b []byte) []byte { r.Header.Set("Signature", `sig1="abc"`); return b }, ErrMalformed},
		{"Content-Digest garbage", func(r *http.Request, b []byte) []byte { r.Header.Set("Content-Digest", "sha-256=?"); return b }, ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, body := f.request(t)
			body = tc.tamper(r, body)
			res, err := f.verifier.VerifyRequest(ctx, r, body)
			if res != nil {
				t.Fatalf("accepted: %+v", res)
			}
			wantErr(t, err, tc.want)
		})
	}
}

func TestVerifierPolicy(t *testing.T) {
	f := newTamperFixture(t)
	ctx := context.Background()
	verify := func(mod func(v *Verifier)) error {
		r, body := f.request(t)
		v := *f.verifier
		mod(&v)
		_, err := v.VerifyRequest(ctx, r, body)
		return err
	}

	wantErr(t, verify(func(v *Verifier) { v.Algorithms = []Algorithm{EdDSA} }), ErrAlgorithmUnsupported)
	wantErr(t, verify(func(v *Verifier) { v.Now = func() time.Time { return f.now.Add(-2 * time.Minute) } }), ErrSignatureInvalid) // created in the future
	if err := verify(func(v *Verifier) { v.Now = func() time.Time { return f.now.Add(-30 * time.Second) } }); err != nil {
		t.Errorf("within the default skew: %v", err)
	}
	wantErr(t, verify(func(v *Verifier) {
		v.ClockSkew = -1
		v.Now = func() time.Time { return f.now.Add(-time.Second) }
	}), ErrSignatureInvalid)
	wantErr(t, verify(func(v *Verifier) {
		v.MaxAge = 5 * time.Minute
		v.Now = func() time.Time { return f.now.Add(10 * time.Minute) }
	}), ErrSignatureInvalid)
	wantErr(t, verify(func(v *Verifier) { v.RequireExpires = true }), ErrSignatureInvalid)
	wantErr(t, verify(func(v *Verifier) { v.Label = "other" }), ErrSignatureMissing)
	wantErr(t, verify(func(v *Verifier) { v.Tag = "web-bot-auth" }), ErrSignatureMissing)
	wantErr(t, verify(func(v *Verifier) { v.KeyIDIsThumbprint = true }), ErrSignatureInvalid)
	wantErr(t, verify(func(v *Verifier) { v.Requirements = append(v.Requirements, Require("date")) }), ErrSignatureInvalid)

	// A resolver failure that is not a protocol error keeps its identity.
	unreachable := errors.New("profile unreachable")
	err := verify(func(v *Verifier) {
		v.Keys = func(context.Context, string) (PublicKey, error) { return PublicKey{}, unreachable }
	})
	if !errors.Is(err, unreachable) || errors.Is(err, ErrKeyNotFound) {
		t.Errorf("resolver error = %v", err)
	}
	// A resolver handing back a key under another kid is not trusted.
	wantErr(t, verify(func(v *Verifier) {
		inner := v.Keys
		v.Keys = func(ctx context.Context, _ string) (PublicKey, error) { return inner(ctx, "k2") }
	}), ErrKeyNotFound)
}

// Expiry and the alg parameter outside the UCP profile.
func TestVerifierExpiresAndAlg(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	now := time.Unix(1767225600, 0)
	s := &Signer{Key: key, KeyID: "p384", Created: func() time.Time { return now }, Expires: time.Minute, IncludeAlg: true, Nonce: func() (string, error) { return "n-1", nil }, Tag: "t"}
	v := &Verifier{Keys: StaticKeys(mustPublicKey(t, "p384", key)), RequireCreated: true, RequireExpires: true, Now: func() time.Time { return now }}
	r, _ := http.NewRequest(http.MethodGet, "https://example.com/x", nil)
	if err := s.SignRequest(r, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Header.Get("Signature-Input"), `sig1=("@method" "@authority" "@path");created=1767225600;expires=1767225660;keyid="p384";alg="ecdsa-p384-sha384";nonce="n-1";tag="t"`; got != want {
		t.Fatalf("Signature-Input = %s\nwant %s", got, want)
	}
	res, err := v.VerifyRequest(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Nonce != "n-1" || res.Tag != "t" || res.Expires.Unix() != 1767225660 || res.Algorithm != ES384 {
		t.Errorf("result = %+v", res)
	}
	late := *v
	late.Now = func() time.Time { return now.Add(3 * time.Minute) }
	_, err = late.VerifyRequest(context.Background(), r, nil)
	wantErr(t, err, ErrSignatureInvalid)

	for alg, want := range map[string]error{"ecdsa-p256-sha256": ErrSignatureInvalid, "rsa-pss-sha512": ErrAlgorithmUnsupported} {
		c := r.Clone(context.Background())
		c.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), "ecdsa-p384-sha384", alg, 1))
		_, err := v.VerifyRequest(context.Background(), c, nil)
		wantErr(t, err, want)
	}
}

// Degenerate inputs fail cleanly instead of panicking.
func TestVerifyDegenerateInputs(t *testing.T) {
	v := &Verifier{Keys: StaticKeys()}
	ctx := context.Background()
	_, err := v.VerifyRequest(ctx, nil, nil)
	wantErr(t, err, ErrMalformed)
	_, err = v.VerifyRequest(ctx, &http.Request{}, nil)
	wantErr(t, err, ErrMalformed)
	_, err = v.VerifyRequest(ctx, &http.Request{URL: &url.URL{}}, nil)
	wantErr(t, err, ErrSignatureMissing)
	_, err = v.VerifyResponse(ctx, nil, 200, nil, nil)
	wantErr(t, err, ErrSignatureMissing)
	if _, err := (&Verifier{}).VerifyRequest(ctx, &http.Request{URL: &url.URL{}}, nil); err == nil {
		t.Error("verifier without Keys accepted")
	}
	_, err = NewPublicKey("k", (*ecdsa.PrivateKey)(nil))
	wantErr(t, err, ErrAlgorithmUnsupported)
	_, err = PublicJWK(ed25519.PrivateKey{1, 2}, "")
	wantErr(t, err, ErrAlgorithmUnsupported)
	_, err = (&KeySet{}).Lookup("x")
	wantErr(t, err, ErrKeyNotFound)
}
