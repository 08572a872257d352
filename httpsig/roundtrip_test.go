package httpsig

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func genKey(t testing.TB, alg Algorithm) crypto.Signer {
	t.Helper()
	var (
		k   crypto.Signer
		err error
	)
	switch alg {
	case ES256:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case ES384:
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case EdDSA:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Client signs, net/http serialises, server verifies; for every algorithm.
func TestRequestRoundTrip(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"complete_checkout"}}`)
	for _, alg := range Algorithms() {
		t.Run(string(alg), func(t *testing.T) {
			key := genKey(t, alg)
			s := &Signer{Key: key, KeyID: "kid-" + string(alg), CoverIfPresent: []string{"bcp-agent", "idempotency-key"}}
			r, _ := http.NewRequest(http.MethodPost, "https://Business.Example:443/mcp", nil)
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("BCP-Agent", `profile="https://platform.example/.well-known/bcp"`)
			if err := s.SignRequest(r, body); err != nil {
				t.Fatal(err)
			}
			if got := r.Header.Get("Content-Digest"); got != ContentDigest(body) {
				t.Errorf("Content-Digest = %s", got)
			}
			want := `sig1=("@method" "@authority" "@path" "content-digest" "content-type" "bcp-agent");created=`
			if got := r.Header.Get("Signature-Input"); !strings.HasPrefix(got, want) {
				t.Errorf("Signature-Input = %s, want prefix %s", got, want)
			}
			sigs, _ := ParseSignature(r.Header.Values("Signature"))
			if len(sigs["sig1"]) != alg.signatureSize() {
				t.Errorf("signature is %d bytes, want %d", len(sigs["sig1"]), alg.signatureSize())
			}
			v := &Verifier{
				Keys:               StaticKeys(mustPublicKey(t, "kid-"+string(alg), key.Public())),
				Requirements:       RequestRequirements("bcp-agent"),
				RejectAlgParameter: true,
				RequireCreated:     true,
				Scheme:             "https", // the server side of wire() saw no TLS
			}
			server := wire(t, r, body)
			res, err := v.VerifyRequest(context.Background(), server, body)
			if err != nil {
				t.Fatal(err)
			}
			if res.Algorithm != alg || res.Key.Algorithm != alg {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

// A handler signs its response over @status, content-digest and
// content-type; the client verifies it.
func TestResponseRoundTrip(t *testing.T) {
	key := genKey(t, ES256)
	signer := &Signer{Key: key, KeyID: "business-2026"}
	body := []byte(`{"id":"checkout_abc123","status":"completed"}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := signer.SignResponse(w.Header(), http.StatusCreated, body, r); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	req := httptest.NewRequest(http.MethodPost, "https://business.example/checkout-sessions/abc/complete", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	got, _ := io.ReadAll(resp.Body)

	if in := resp.Header.Get("Signature-Input"); !strings.HasPrefix(in, `sig1=("@status" "content-digest" "content-type");created=`) {
		t.Fatalf("Signature-Input = %s", in)
	}
	v := &Verifier{
		Keys:               StaticKeys(mustPublicKey(t, "business-2026", key.Public())),
		Requirements:       ResponseRequirements(),
		RejectAlgParameter: true,
	}
	ctx := context.Background()
	if _, err := v.VerifyResponse(ctx, resp.Header, resp.StatusCode, got, nil); err != nil {
		t.Fatal(err)
	}
	_, err := v.VerifyResponse(ctx, resp.Header, http.StatusOK, got, nil)
	wantErr(t, err, ErrSignatureInvalid)
	_, err = v.VerifyResponse(ctx, resp.Header, resp.StatusCode, []byte(`{"status":"canceled"}`), nil)
	wantErr(t, err, ErrDigestMismatch)
	_, err = v.VerifyResponse(ctx, resp.Header, 0, got, nil)
	wantErr(t, err, ErrMalformed)

	// Signing the request components too (req parameter) ties the
	// response to the request it answers.
	bound := &Signer{Key: key, KeyID: "business-2026", Components: []string{"@status", "content-digest", "content-type", "@method;req", "@path;req", `"@authority";req`}}
	hdr := http.Header{"Content-Type": {"application/json"}}
	if err := bound.SignResponse(hdr, http.StatusOK, body, req); err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyResponse(ctx, hdr, http.StatusOK, body, req); err != nil {
		t.Fatal(err)
	}
	other := httptest.NewRequest(http.MethodPost, "https://business.example/checkout-sessions/zzz/complete", nil)
	_, err = v.VerifyResponse(ctx, hdr, http.StatusOK, body, other)
	wantErr(t, err, ErrSignatureInvalid)
	if err := bound.SignResponse(hdr, http.StatusOK, body, nil); err == nil {
		t.Error("req components signed without a request")
	}
}

// Several signatures: one verifying signature is enough, existing ones are
// kept, and re-signing a label replaces it.
func TestMultipleSignatures(t *testing.T) {
	a, b := genKey(t, EdDSA), genKey(t, ES256)
	r, _ := http.NewRequest(http.MethodGet, "https://example.com/orders/1?expand=lines", nil)
	for _, s := range []*Signer{
		{Key: a, KeyID: "a", Label: "first"},
		{Key: b, KeyID: "b", Label: "second", Tag: "web-bot-auth"},
		{Key: a, KeyID: "a", Label: "first"}, // replaces, does not duplicate
	} {
		if err := s.SignRequest(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := ParseSignatureInput(r.Header.Values("Signature-Input"))
	if err != nil || len(ps) != 2 || ps[0].Label != "first" || ps[1].Label != "second" {
		t.Fatalf("Signature-Input = %v (%v)", r.Header.Values("Signature-Input"), err)
	}
	ctx := context.Background()
	onlyB := &Verifier{Keys: StaticKeys(mustPublicKey(t, "b", b.Public()))}
	res, err := onlyB.VerifyRequest(ctx, r, nil)
	if err != nil || res.Label != "second" || res.Tag != "web-bot-auth" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	// No signature verifies: the first applicable signature's error wins.
	none := &Verifier{Keys: StaticKeys()}
	_, err = none.VerifyRequest(ctx, r, nil)
	wantErr(t, err, ErrKeyNotFound)
	if !strings.Contains(err.Error(), `"first"`) {
		t.Errorf("error %q does not name the label", err)
	}
	onlyB.Label = "first"
	_, err = onlyB.VerifyRequest(ctx, r, nil)
	wantErr(t, err, ErrKeyNotFound)
}

// opaqueSigner hides the concrete key type, like an HSM or KMS client, so
// the DER-to-raw conversion path is exercised.
type opaqueSigner struct{ k *ecdsa.PrivateKey }

func (o opaqueSigner) Public() crypto.PublicKey { return o.k.Public() }
func (o opaqueSigner) Sign(r io.Reader, d []byte, opts crypto.SignerOpts) ([]byte, error) {
	return o.k.Sign(r, d, opts)
}

func TestGenericCryptoSigner(t *testing.T) {
	for _, curve := range []elliptic.Curve{elliptic.P256(), elliptic.P384()} {
		k, _ := ecdsa.GenerateKey(curve, rand.Reader)
		s := &Signer{Key: opaqueSigner{k}, KeyID: "hsm"}
		v := &Verifier{Keys: StaticKeys(mustPublicKey(t, "hsm", &k.PublicKey))}
		for i := 0; i < 20; i++ { // vary r and s lengths (leading zero bytes)
			r, _ := http.NewRequest(http.MethodGet, "https://example.com/", nil)
			if err := s.SignRequest(r, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := v.VerifyRequest(context.Background(), r, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestSignerErrors(t *testing.T) {
	key := genKey(t, ES256)
	body := []byte("{}")
	for _, tc := range []struct {
		name string
		s    *Signer
		want error
	}{
		{"no key", &Signer{KeyID: "k"}, ErrMalformed},
		{"no keyid", &Signer{Key: key}, ErrMalformed},
		{"alg mismatch", &Signer{Key: key, KeyID: "k", Alg: EdDSA}, ErrAlgorithmUnsupported},
		{"bad label", &Signer{Key: key, KeyID: "k", Label: "Sig1"}, ErrMalformed},
		{"bad component", &Signer{Key: key, KeyID: "k", Components: []string{"@nope"}}, ErrMalformed},
		{"duplicate component", &Signer{Key: key, KeyID: "k", Components: []string{"@method", `"@method"`}}, ErrMalformed},
		{"missing header", &Signer{Key: key, KeyID: "k"}, ErrComponentMissing}, // body but no Content-Type
		{"short ed25519 key", &Signer{Key: ed25519.PrivateKey(make([]byte, 10)), KeyID: "k"}, ErrMalformed},
		{"typed nil key", &Signer{Key: (*ecdsa.PrivateKey)(nil), KeyID: "k"}, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "https://example.com/", nil)
			err := tc.s.SignRequest(r, body)
			wantErr(t, err, tc.want)
			if r.Header.Get("Signature") != "" {
				t.Error("Signature set despite the error")
			}
		})
	}
	// Existing garbage in Signature fields is not silently discarded.
	r, _ := http.NewRequest(http.MethodGet, "https://example.com/", nil)
	r.Header.Set("Signature-Input", "((")
	wantErr(t, (&Signer{Key: key, KeyID: "k"}).SignRequest(r, nil), ErrMalformed)
}

// Default components follow the message: no query, no body → the three
// mandatory request components only.
func TestSignerDefaults(t *testing.T) {
	key := genKey(t, EdDSA)
	r, _ := http.NewRequest(http.MethodGet, "https://example.com/a", nil)
	if err := (&Signer{Key: key, KeyID: "k"}).SignRequest(r, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("Signature-Input"); !strings.HasPrefix(got, `sig1=("@method" "@authority" "@path");created=`) {
		t.Errorf("Signature-Input = %s", got)
	}
	if r.Header.Get("Content-Digest") != "" {
		t.Error("Content-Digest set for a bodiless GET")
	}
	// An explicitly covered content-digest is computed even for an empty body.
	r, _ = http.NewRequest(http.MethodDelete, "https://example.com/a", nil)
	if err := (&Signer{Key: key, KeyID: "k", Components: []string{"@method", "content-digest"}}).SignRequest(r, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("Content-Digest"); got != ContentDigest(nil) {
		t.Errorf("Content-Digest = %q", got)
	}
}
