// Package sealer encrypts secrets at rest (merchant signing keys, PSP
// credentials) under the platform master key with AES-256-GCM. The Sealer
// interface is where a KMS would plug in instead.
package sealer

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Sealer seals and opens secrets. aad binds a sealed blob to its context
// (tenant, purpose, key id) so a blob copied elsewhere does not open.
type Sealer interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

const version byte = 1

// ErrOpen is returned for any blob that does not authenticate.
var ErrOpen = errors.New("sealer: cannot open sealed data")

type aesGCM struct{ aead cipher.AEAD }

// NewAESGCM returns a Sealer under a 32-byte master key.
func NewAESGCM(key []byte) (Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("sealer: master key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &aesGCM{aead: aead}, nil
}

// Seal returns version ‖ nonce ‖ ciphertext.
func (s *aesGCM) Seal(plaintext, aad []byte) ([]byte, error) {
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return s.aead.Seal(out, out[1:], plaintext, aad), nil
}

func (s *aesGCM) Open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	pt, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// ParseKey decodes a base64 (standard or URL, padded or not) 32-byte key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == 32 {
			return k, nil
		}
	}
	return nil, errors.New("sealer: master key must be 32 bytes, base64-encoded")
}

// LoadOrCreateKeyFile reads the key in path, creating it (0600) with a
// fresh random key when it does not exist. Used by `bcpd dev` only.
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return ParseKey(string(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return k, nil
}
