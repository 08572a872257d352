package keyring

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/sealer"
)

// RFC 7638 §3.1 gives an RSA example; for EC we check against the member
// order and encoding directly with a fixed key.
func TestPublicJWKThumbprint(t *testing.T) {
	point, _ := hex.DecodeString("04" + "60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6" +
		"7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299")
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		t.Fatal(err)
	}
	j, err := PublicJWK(pub)
	if err != nil {
		t.Fatal(err)
	}
	if j.X != "YP7UuiVanTHJYet0xjVtaMBJuJI7Yfps5mliLmDyn7Y" || j.Y != "eQP-EAi4vJmkGunpVii8ZPLxsgwtfp9Rd6PClNRGIpk" {
		t.Fatalf("coordinates = %s %s", j.X, j.Y)
	}
	sum := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"YP7UuiVanTHJYet0xjVtaMBJuJI7Yfps5mliLmDyn7Y","y":"eQP-EAi4vJmkGunpVii8ZPLxsgwtfp9Rd6PClNRGIpk"}`))
	if want := base64.RawURLEncoding.EncodeToString(sum[:]); j.Kid != want {
		t.Fatalf("kid = %s, want %s", j.Kid, want)
	}
	var m map[string]any
	if err := json.Unmarshal(j.JSON(), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["d"]; ok || m["alg"] != "ES256" || m["use"] != "sig" || len(m) != 7 {
		t.Fatalf("JWK JSON has unexpected members: %v", m)
	}
}

func TestGenerateSealsAndOpens(t *testing.T) {
	s, _ := sealer.NewAESGCM(bytes.Repeat([]byte{1}, 32))
	tenant := uuid.New()
	g, err := GenerateES256(s, tenant)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := OpenES256(s, tenant, g.JWK.Kid, g.Sealed)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := PublicJWK(&priv.PublicKey)
	if !bytes.Equal(again.JSON(), g.JWK.JSON()) {
		t.Fatalf("opened key does not match its JWK")
	}
	if _, err := OpenES256(s, uuid.New(), g.JWK.Kid, g.Sealed); err == nil {
		t.Fatal("a key sealed for one tenant opened for another")
	}
	if _, err := OpenES256(s, tenant, "another-kid", g.Sealed); err == nil {
		t.Fatal("a key sealed under one kid opened under another")
	}
}

// SignES256 must produce the raw r||s form that httpsig (and every UCP
// verifier) accepts for the published JWK.
func TestSignES256VerifiesWithPublishedJWK(t *testing.T) {
	s, _ := sealer.NewAESGCM(bytes.Repeat([]byte{2}, 32))
	tenant := uuid.New()
	g, err := GenerateES256(s, tenant)
	if err != nil {
		t.Fatal(err)
	}
	base := []byte("\"@status\": 200\n\"@signature-params\": (\"@status\");keyid=\"" + g.JWK.Kid + "\"")
	sig, err := SignES256(s, tenant, g.JWK.Kid, g.Sealed, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(sig) != 64 {
		t.Fatalf("signature is %d bytes, want raw r||s of 64", len(sig))
	}
	parsed, err := httpsig.ParseJWK(g.JWK.JSON())
	if err != nil {
		t.Fatal(err)
	}
	pk, err := parsed.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	ec := pk.Key.(*ecdsa.PublicKey)
	digest := sha256.Sum256(base)
	if !ecdsa.Verify(ec, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("signature does not verify with the published JWK")
	}
	if tp, _ := httpsig.Thumbprint(parsed); tp != g.JWK.Kid {
		t.Fatalf("kid %s is not the RFC 7638 thumbprint %s", g.JWK.Kid, tp)
	}
}
