package httpsig

import (
	"context"
	"net/http"
	"testing"
)

// benchRequest signs a UCP-shaped POST and returns what verification needs.
func benchRequest(b *testing.B, alg Algorithm) (*http.Request, []byte, *Verifier) {
	b.Helper()
	key := genKey(b, alg)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"complete_checkout","arguments":{"id":"checkout_abc123"}}}`)
	r, _ := http.NewRequest(http.MethodPost, "https://business.example/mcp?tenant=1", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("UCP-Agent", `profile="https://platform.example/.well-known/ucp"`)
	r.Header.Set("Idempotency-Key", "550e8400-e29b-41d4-a716-446655440000")
	s := &Signer{Key: key, KeyID: "k", CoverIfPresent: []string{"ucp-agent", "idempotency-key"}}
	if err := s.SignRequest(r, body); err != nil {
		b.Fatal(err)
	}
	v := &Verifier{
		Keys:               StaticKeys(mustPublicKey(b, "k", key.Public())),
		Requirements:       RequestRequirements("ucp-agent"),
		RejectAlgParameter: true,
	}
	return r, body, v
}

func benchmarkVerify(b *testing.B, alg Algorithm) {
	r, body, v := benchRequest(b, alg)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyRequest(ctx, r, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyES256(b *testing.B)   { benchmarkVerify(b, ES256) }
func BenchmarkVerifyEd25519(b *testing.B) { benchmarkVerify(b, EdDSA) }

func BenchmarkSignES256(b *testing.B) {
	key := genKey(b, ES256)
	body := []byte(`{"id":"checkout_abc123"}`)
	s := &Signer{Key: key, KeyID: "k"}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := http.NewRequest(http.MethodPost, "https://business.example/mcp", nil)
		r.Header.Set("Content-Type", "application/json")
		if err := s.SignRequest(r, body); err != nil {
			b.Fatal(err)
		}
	}
}
