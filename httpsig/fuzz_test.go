package httpsig

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"slices"
	"testing"
)

// fuzzSeedInputs are Signature-Input values from the vectors and RFC 9421.
func fuzzSeedInputs(t testing.TB) []string {
	return []string{
		loadVectors(t).Ed25519B26.SignatureInputMember,
		`sig-b21=();created=1618884473;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd"`,
		`sig-b22=("@authority" "content-digest" "@query-param";name="Pet");created=1618884473;keyid="test-key-rsa-pss";tag="header-example"`,
		`reqres=("@status" "content-digest" "content-type" "@authority";req "@method";req "@path";req "content-digest";req);created=1618884479;keyid="test-key-ecc-p256"`,
		`sig1=("@method" "@target-uri" "@scheme" "@request-target" "@query" "x-fuzz";bs "example-dict";sf "example-dict";key="a");expires=1;alg="ed25519"`,
		`sig1=("@method" "@authority" "@path" "ucp-agent" "idempotency-key" "content-digest" "content-type");keyid="platform-2026", sig2=();x=?0;y=1.5`,
	}
}

var fuzzKey = PublicKey{Algorithm: EdDSA, Key: ed25519.PublicKey(make([]byte, ed25519.PublicKeySize))}

// Parsing never panics, fails only with ErrMalformed, and what parses
// round-trips through FormatSignatureInput with identical
// @signature-params values. Each parsed signature is also pushed through
// base construction and verification against a fixed request.
func FuzzParseSignatureInput(f *testing.F) {
	for _, s := range fuzzSeedInputs(f) {
		f.Add(s, "a=1, b=(x y);q")
	}
	f.Add("sig1=(\"a\" \"b\";key=\"\");created=-1", "\r\n ")
	f.Fuzz(func(t *testing.T, input, field string) {
		ps, err := ParseSignatureInput([]string{input})
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		out, err := FormatSignatureInput(ps...)
		if err != nil {
			t.Fatalf("FormatSignatureInput of parsed input: %v", err)
		}
		again, err := ParseSignatureInput([]string{out})
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if len(again) != len(ps) {
			t.Fatalf("%d members became %d", len(ps), len(again))
		}
		for i := range ps {
			a, _ := ps[i].Value()
			b, _ := again[i].Value()
			if a != b || ps[i].Label != again[i].Label || !slices.Equal(ps[i].Components, again[i].Components) {
				t.Fatalf("round trip changed member %d: %q -> %q", i, a, b)
			}
		}

		r, _ := http.NewRequest(http.MethodPost, "https://example.com/p?a=1&b=%20", nil)
		r.Header["X-Fuzz"] = []string{field}
		r.Header["Example-Dict"] = []string{field}
		r.Header.Set("Signature-Input", input)
		r.Header.Set("Signature", "sig1=:AAAA:")
		for _, p := range ps {
			_, _ = RequestSignatureBase(r, p)
			_, _ = ResponseSignatureBase(r.Header, 200, r, p)
		}
		// Any keyid resolves, so verification runs to the signature check.
		v := &Verifier{
			Keys:         func(context.Context, string) (PublicKey, error) { return fuzzKey, nil },
			Requirements: RequestRequirements("ucp-agent"),
		}
		if res, err := v.VerifyRequest(context.Background(), r, []byte(field)); err == nil {
			t.Fatalf("verified a forged signature: %+v", res)
		}
	})
}

// Signature members are byte sequences; whatever parses re-serialises.
func FuzzParseSignature(f *testing.F) {
	f.Add("sig-b26=:" + loadVectors(f).Ed25519B26.SignatureB64 + ":")
	f.Add(`sig-b24=:wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NKocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==:, sig1=::`)
	f.Add(`sig1="not bytes"`)
	f.Fuzz(func(t *testing.T, input string) {
		sigs, err := ParseSignature([]string{input})
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		for label, sig := range sigs {
			out, err := FormatSignature(label, sig)
			if err != nil {
				t.Fatalf("FormatSignature(%q): %v", label, err)
			}
			back, err := ParseSignature([]string{out})
			if err != nil || !bytes.Equal(back[label], sig) {
				t.Fatalf("round trip of %q: %v", out, err)
			}
		}
	})
}

// Content-Digest parsing and verification never panic, and verification
// only ever reports a mismatch or a malformed field.
func FuzzParseContentDigest(f *testing.F) {
	for _, v := range loadVectors(f).ContentDigest {
		f.Add(v.Header, []byte(v.BodyUTF8))
	}
	f.Add("sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:, md5=:AA==:", []byte(`{"hello": "world"}`))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		_, perr := ParseContentDigest([]string{header})
		err := VerifyContentDigest([]string{header}, body)
		switch {
		case err == nil:
			if perr != nil {
				t.Fatalf("verified a field that does not parse: %v", perr)
			}
		case errors.Is(err, ErrMalformed):
			if perr == nil {
				t.Fatalf("parsed but verification says malformed: %v", err)
			}
		case !errors.Is(err, ErrDigestMismatch):
			t.Fatalf("unexpected error: %v", err)
		}
	})
}

// JWK Set parsing and key conversion never panic and never accept private
// material.
func FuzzParseJWKSet(f *testing.F) {
	f.Add([]byte(`{"keys":[` + string(loadVectors(f).Ed25519B26.JWKPublic) + `]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"qIVYZVLCrPZHGHjP17CTW0_-D9Lfw0EkjqF7xB4FivA","y":"Mc4nN9LTDOBhfoUeg8Ye9WedFRhnZXZJA12Qp0zZ6F0","d":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseJWKSet(data)
		if err != nil {
			return
		}
		for _, kid := range s.KeyIDs() {
			k, err := s.Lookup(kid)
			if err != nil {
				continue
			}
			j, err := PublicJWK(k.Key, kid)
			if err != nil {
				t.Fatalf("PublicJWK of an accepted key: %v", err)
			}
			if _, err := Thumbprint(j); err != nil {
				t.Fatal(err)
			}
		}
	})
}
