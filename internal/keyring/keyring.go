// Package keyring generates merchant signing keys and renders their public
// halves as JWKs. Private keys leave this package only sealed.
package keyring

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/sealer"
)

// JWK is a public EC key in RFC 7517 form, with exactly the members a
// verifier needs.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// Generated is a new key: its public JWK and the sealed PKCS#8 private key.
type Generated struct {
	JWK    JWK
	Sealed []byte
}

// GenerateES256 makes a P-256 key for tenant, with kid = its RFC 7638
// thumbprint, and seals the private key bound to tenant and kid.
func GenerateES256(s sealer.Sealer, tenant uuid.UUID) (Generated, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Generated{}, err
	}
	jwk, err := PublicJWK(&priv.PublicKey)
	if err != nil {
		return Generated{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return Generated{}, err
	}
	sealed, err := s.Seal(der, AAD(tenant, jwk.Kid))
	if err != nil {
		return Generated{}, err
	}
	return Generated{JWK: jwk, Sealed: sealed}, nil
}

// AAD binds a sealed signing key to its tenant and kid.
func AAD(tenant uuid.UUID, kid string) []byte {
	return []byte("bcp/signing-key/" + tenant.String() + "/" + kid)
}

// OpenES256 unseals a private key made by GenerateES256.
func OpenES256(s sealer.Sealer, tenant uuid.UUID, kid string, sealed []byte) (*ecdsa.PrivateKey, error) {
	der, err := s.Open(sealed, AAD(tenant, kid))
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("keyring: sealed key is %T, not ECDSA", k)
	}
	return ec, nil
}

// PublicJWK renders a P-256 public key as a signing JWK whose kid is its
// RFC 7638 thumbprint.
func PublicJWK(pub *ecdsa.PublicKey) (JWK, error) {
	if pub.Curve != elliptic.P256() {
		return JWK{}, fmt.Errorf("keyring: only P-256 keys are generated")
	}
	raw, err := pub.Bytes() // 0x04 ‖ X ‖ Y, fixed 32-byte coordinates
	if err != nil {
		return JWK{}, err
	}
	enc := base64.RawURLEncoding
	j := JWK{Kty: "EC", Crv: "P-256", X: enc.EncodeToString(raw[1:33]), Y: enc.EncodeToString(raw[33:65]), Use: "sig", Alg: "ES256"}
	// RFC 7638: the required members in lexicographic order, no spaces.
	canon := fmt.Sprintf(`{"crv":"%s","kty":"%s","x":"%s","y":"%s"}`, j.Crv, j.Kty, j.X, j.Y)
	sum := sha256.Sum256([]byte(canon))
	j.Kid = enc.EncodeToString(sum[:])
	return j, nil
}

// JSON returns the JWK's JSON encoding.
func (j JWK) JSON() json.RawMessage {
	b, _ := json.Marshal(j) // plain strings cannot fail to marshal
	return b
}
