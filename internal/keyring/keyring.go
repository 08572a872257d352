// Package keyring generates merchant signing keys, renders their public
// halves as JWKs and signs with them. Private keys leave this package only
// sealed (sealer.Sealer: AES-256-GCM under the platform master key, or a
// KMS-backed implementation of the same interface).
package keyring

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/sealer"
)

// AlgES256 is the only algorithm generated: UCP makes ES256 mandatory for
// every verifier.
const AlgES256 = "ES256"

// JWK is a public signing key in RFC 7517 form. It is httpsig's JWK (kty,
// kid, use, alg, crv, x, y; private members can never be marshalled), so
// what the platform publishes is exactly what verifiers parse.
type JWK struct{ httpsig.JWK }

// JSON returns the JWK's JSON encoding.
func (j JWK) JSON() json.RawMessage {
	b, _ := json.Marshal(j.JWK) // plain strings cannot fail to marshal
	return b
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
	defer clear(der)
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
	defer clear(der)
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("keyring: sealed key is %T, not ECDSA P-256", k)
	}
	return ec, nil
}

// SignES256 unseals the key and signs message (an RFC 9421 signature
// base) with ECDSA P-256 and SHA-256, returning the raw 64-byte r||s form
// RFC 9421 §3.3.4 requires (not ASN.1 DER).
func SignES256(s sealer.Sealer, tenant uuid.UUID, kid string, sealed, message []byte) ([]byte, error) {
	priv, err := OpenES256(s, tenant, kid, sealed)
	if err != nil {
		return nil, err
	}
	return SignES256Key(priv, message)
}

// SignES256Key is SignES256 with a key already unsealed (the tenants
// service keeps the live ones in memory).
func SignES256Key(priv *ecdsa.PrivateKey, message []byte) ([]byte, error) {
	digest := sha256.Sum256(message)
	r, ss, err := ecdsa.Sign(rand.Reader, priv, digest[:])
	if err != nil {
		return nil, err
	}
	if r.BitLen() > 256 || ss.BitLen() > 256 {
		return nil, errors.New("keyring: ECDSA signature out of range")
	}
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	ss.FillBytes(out[32:])
	return out, nil
}

// PublicJWK renders a P-256 public key as a signing JWK whose kid is its
// RFC 7638 thumbprint.
func PublicJWK(pub *ecdsa.PublicKey) (JWK, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return JWK{}, errors.New("keyring: only P-256 keys are generated")
	}
	j, err := httpsig.PublicJWK(pub, "") // "" → kid = RFC 7638 thumbprint
	if err != nil {
		return JWK{}, err
	}
	return JWK{j}, nil
}
