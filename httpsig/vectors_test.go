package httpsig

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shared test vectors, copied into testdata so the tests never depend
// on the checkout layout.
const vectorsFile = "rfc9421-9530-vectors.json"

type vectors struct {
	ContentDigest []struct {
		BodyUTF8 string `json:"body_utf8"`
		BodyLen  int    `json:"body_len"`
		Header   string `json:"header"`
		Ref      string `json:"ref"`
	} `json:"content_digest"`
	Ed25519B26 struct {
		JWKPublic            json.RawMessage `json:"jwk_public"`
		DB64URL              string          `json:"d_b64url"`
		SignatureInputMember string          `json:"signature_input_member"`
		SignatureBaseLines   []string        `json:"signature_base_lines"`
		SignatureB64         string          `json:"signature_b64"`
	} `json:"ed25519_rfc9421_b26"`
	UCPRules []string `json:"ucp_rules_exercised_by_sample_tests"`
}

func loadVectors(t testing.TB) vectors {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", vectorsFile))
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The testdata copy must stay byte-identical to the shared reference when
// the shared directory is laid out beside the checkout.
func TestVectorsCopyMatchesShared(t *testing.T) {
	shared, err := os.ReadFile(filepath.Join("..", "..", "shared", "reference", "test-vectors", vectorsFile))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("shared reference not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(filepath.Join("testdata", vectorsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shared, local) {
		t.Fatalf("testdata/%s differs from the shared reference; copy it again", vectorsFile)
	}
}

func TestVectorsContentDigest(t *testing.T) {
	v := loadVectors(t)
	if len(v.ContentDigest) == 0 {
		t.Fatal("no content_digest vectors")
	}
	for _, tc := range v.ContentDigest {
		body := []byte(tc.BodyUTF8)
		if len(body) != tc.BodyLen {
			t.Fatalf("%s: body is %d bytes, vector says %d", tc.Ref, len(body), tc.BodyLen)
		}
		if got := ContentDigest(body); got != tc.Header {
			t.Errorf("%s: ContentDigest = %s, want %s", tc.Ref, got, tc.Header)
		}
		if err := VerifyContentDigest([]string{tc.Header}, body); err != nil {
			t.Errorf("%s: %v", tc.Ref, err)
		}
		// One byte more or less (the trailing LF distinguishes the two
		// vectors) must not verify.
		err := VerifyContentDigest([]string{tc.Header}, append(body, '\n'))
		wantErr(t, err, ErrDigestMismatch)
	}
}

func TestVectorsEd25519B26(t *testing.T) {
	v := loadVectors(t).Ed25519B26
	jwk, err := ParseJWK(v.JWKPublic)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := jwk.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if pub.KeyID != "test-key-ed25519" || pub.Algorithm != EdDSA {
		t.Fatalf("public key = %+v", pub)
	}
	seed, err := base64.RawURLEncoding.DecodeString(v.DB64URL)
	if err != nil {
		t.Fatal(err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	if !priv.Public().(ed25519.PublicKey).Equal(pub.Key) {
		t.Fatal("d does not derive the published x")
	}

	// The base, built from the RFC test-request, matches the vector lines.
	r, body := parseRequest(t, rfcTestRequest)
	p := mustParseInput(t, v.SignatureInputMember)
	base, err := RequestSignatureBase(r, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(v.SignatureBaseLines, "\n"); string(base) != want {
		t.Fatalf("base mismatch\n got: %q\nwant: %q", base, want)
	}

	// Signing with d reproduces the signature byte for byte.
	s := &Signer{Key: priv, KeyID: p.KeyID, Label: p.Label, Components: p.Components, Created: at(p.Created.Unix())}
	if err := s.SignRequest(r, body); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("Signature-Input"); got != v.SignatureInputMember {
		t.Errorf("Signature-Input = %s, want %s", got, v.SignatureInputMember)
	}
	if got, want := r.Header.Get("Signature"), p.Label+"=:"+v.SignatureB64+":"; got != want {
		t.Errorf("Signature = %s, want %s", got, want)
	}

	verifier := &Verifier{Keys: StaticKeys(pub), Now: at(p.Created.Unix())}
	res, err := verifier.VerifyRequest(context.Background(), r, body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Label != "sig-b26" || res.Algorithm != EdDSA || res.Created.Unix() != 1618884473 {
		t.Errorf("result = %+v", res)
	}
}

// ucpFixture signs a POST the way a UCP platform does and returns what a
// business-side verifier needs.
type ucpFixture struct {
	key      *ecdsa.PrivateKey
	verifier *Verifier
}

func newUCPFixture(t testing.TB) ucpFixture {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return ucpFixture{
		key: key,
		verifier: &Verifier{
			Keys:               StaticKeys(mustPublicKey(t, "platform-2026", &key.PublicKey)),
			Requirements:       RequestRequirements("ucp-agent"),
			RejectAlgParameter: true,
		},
	}
}

func (f ucpFixture) request(t testing.TB, target string, body []byte) *http.Request {
	t.Helper()
	method := http.MethodGet
	if body != nil {
		method = http.MethodPost
	}
	r, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("UCP-Agent", `profile="https://platform.example/profile"`)
	r.Header.Set("Idempotency-Key", "550e8400-e29b-41d4-a716-446655440000")
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// signer covers exactly components, or with none given the defaults plus
// the UCP headers when present.
func (f ucpFixture) signer(components ...string) *Signer {
	s := &Signer{Key: f.key, KeyID: "platform-2026", Components: components}
	if components == nil {
		s.CoverIfPresent = []string{"ucp-agent", "idempotency-key"}
	}
	return s
}

// The UCP rules listed in the shared vectors file.
func TestVectorsUCPRules(t *testing.T) {
	if n := len(loadVectors(t).UCPRules); n == 0 {
		t.Fatal("no ucp rules in the vectors file")
	}
	ctx := context.Background()
	body := []byte(`{"hello": "world"}`)
	full := []string{"@method", "@authority", "@path", "@query", "ucp-agent", "idempotency-key", "content-digest", "content-type"}

	t.Run("ES256 raw r||s accepted, DER rejected", func(t *testing.T) {
		f := newUCPFixture(t)
		r := f.request(t, "https://business.example/checkout?x=1", body)
		if err := f.signer(full...).SignRequest(r, body); err != nil {
			t.Fatal(err)
		}
		s := wire(t, r, body)
		if _, err := f.verifier.VerifyRequest(ctx, s, body); err != nil {
			t.Fatal(err)
		}
		sigs, _ := ParseSignature(s.Header.Values("Signature"))
		if len(sigs["sig1"]) != 64 {
			t.Fatalf("ES256 signature is %d bytes, want 64", len(sigs["sig1"]))
		}
		der, _ := FormatSignature("sig1", rawToDER(sigs["sig1"]))
		s.Header.Set("Signature", der)
		_, err := f.verifier.VerifyRequest(ctx, s, body)
		wantErr(t, err, ErrSignatureInvalid)
	})

	t.Run("length other than 64 rejected before verification", func(t *testing.T) {
		f := newUCPFixture(t)
		r := f.request(t, "https://business.example/checkout", body)
		if err := f.signer().SignRequest(r, body); err != nil {
			t.Fatal(err)
		}
		sigs, _ := ParseSignature(r.Header.Values("Signature"))
		for _, n := range []int{0, 63, 65, 96} {
			sig := make([]byte, n)
			copy(sig, sigs["sig1"])
			v, _ := FormatSignature("sig1", sig)
			r.Header.Set("Signature", v)
			_, err := f.verifier.VerifyRequest(ctx, r, body)
			wantErr(t, err, ErrSignatureInvalid)
			if !strings.Contains(err.Error(), "raw bytes") {
				t.Errorf("length %d: error %q does not come from the length check", n, err)
			}
		}
	})

	t.Run("alg parameter rejected", func(t *testing.T) {
		f := newUCPFixture(t)
		r := f.request(t, "https://business.example/checkout", body)
		s := f.signer()
		s.IncludeAlg = true
		if err := s.SignRequest(r, body); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Header.Get("Signature-Input"), `alg="ecdsa-p256-sha256"`) {
			t.Fatalf("no alg in %s", r.Header.Get("Signature-Input"))
		}
		_, err := f.verifier.VerifyRequest(ctx, r, body)
		wantErr(t, err, ErrSignatureInvalid)
		// Outside the UCP profile a matching alg is fine.
		lax := *f.verifier
		lax.RejectAlgParameter = false
		if _, err := lax.VerifyRequest(ctx, r, body); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("required components", func(t *testing.T) {
		f := newUCPFixture(t)
		if r := f.request(t, "https://business.example/checkout?x=1", body); true {
			if err := f.signer(full...).SignRequest(r, body); err != nil {
				t.Fatal(err)
			}
			if _, err := f.verifier.VerifyRequest(ctx, r, body); err != nil {
				t.Fatalf("full coverage: %v", err)
			}
		}
		for i, missing := range full {
			rest := append(append([]string(nil), full[:i]...), full[i+1:]...)
			r := f.request(t, "https://business.example/checkout?x=1", body)
			if err := f.signer(rest...).SignRequest(r, body); err != nil {
				t.Fatal(err)
			}
			_, err := f.verifier.VerifyRequest(ctx, r, body)
			wantErr(t, err, ErrSignatureInvalid)
			if !strings.Contains(err.Error(), missing) {
				t.Errorf("without %s: %v", missing, err)
			}
		}
		// Conditional components are not required when their trigger is
		// absent: GET, no query, no agent or idempotency headers.
		r, _ := http.NewRequest(http.MethodGet, "https://business.example/checkout/1", nil)
		if err := f.signer("@method", "@authority", "@path").SignRequest(r, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.verifier.VerifyRequest(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	})
}
