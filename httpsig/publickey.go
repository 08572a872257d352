package httpsig

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
)

// PublicKey is a verification key as returned by a KeyResolver.
type PublicKey struct {
	// KeyID is the key identifier (JWK kid). When set it must equal the
	// keyid the signature names.
	KeyID string
	// Algorithm is derived from the key type; see NewPublicKey.
	Algorithm Algorithm
	// Key is an *ecdsa.PublicKey (P-256 or P-384) or an ed25519.PublicKey.
	Key crypto.PublicKey
}

// NewPublicKey wraps pub, deriving and validating its algorithm. A private
// key (anything with a Public method) is reduced to its public half.
func NewPublicKey(keyID string, pub crypto.PublicKey) (PublicKey, error) {
	pub = publicOf(pub)
	alg, err := algorithmOf(pub)
	if err != nil {
		return PublicKey{}, err
	}
	return PublicKey{KeyID: keyID, Algorithm: alg, Key: pub}, nil
}

// KeyResolver finds the verification key for a keyid. It should return an
// error wrapping ErrKeyNotFound for an unknown keyid and ErrAlgorithmUnsupported
// for a known key of an unsupported type. Any other error (for example a
// profile fetch failure) is passed through to the caller unchanged in
// identity, so the edge can map it separately.
type KeyResolver func(ctx context.Context, keyID string) (PublicKey, error)

// StaticKeys resolves from a fixed list of keys; handy for tests and for
// pre-provisioned partners.
func StaticKeys(keys ...PublicKey) KeyResolver {
	m := make(map[string]PublicKey, len(keys))
	for _, k := range keys {
		m[k.KeyID] = k
	}
	return func(_ context.Context, keyID string) (PublicKey, error) {
		k, ok := m[keyID]
		if !ok {
			return PublicKey{}, errorf(ErrKeyNotFound, "keyid %q", keyID)
		}
		return k, nil
	}
}

// publicOf returns the public half of a private key, or k itself. It
// guards the typed-nil and short-key cases in which the standard library's
// Public methods would panic.
func publicOf(k crypto.PublicKey) crypto.PublicKey {
	switch v := k.(type) {
	case *ecdsa.PrivateKey:
		if v == nil {
			return nil
		}
		return &v.PublicKey
	case ed25519.PrivateKey:
		if len(v) != ed25519.PrivateKeySize {
			return nil
		}
		return v.Public()
	case interface{ Public() crypto.PublicKey }:
		return v.Public()
	}
	return k
}
