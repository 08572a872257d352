package agentclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/bcpdev/bcp/httpsig"
)

// GenerateES256 makes a new P-256 signing key (ES256, the algorithm every
// BCP merchant must verify).
func GenerateES256() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// ParsePrivateKeyPEM reads a signing key from PEM: PKCS#8 ("PRIVATE KEY",
// EC or Ed25519) or SEC 1 ("EC PRIVATE KEY").
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("agentclient: no private key PEM block")
		}
		switch block.Type {
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("agentclient: PKCS#8 key: %w", err)
			}
			switch k := k.(type) {
			case *ecdsa.PrivateKey:
				return k, nil
			case ed25519.PrivateKey:
				return k, nil
			}
			return nil, fmt.Errorf("agentclient: unsupported key type %T (use EC P-256 or Ed25519)", k)
		case "EC PRIVATE KEY":
			k, err := x509.ParseECPrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("agentclient: EC key: %w", err)
			}
			return k, nil
		}
	}
}

// MarshalPrivateKeyPEM encodes a key as PKCS#8 PEM.
func MarshalPrivateKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// PublicJWK is the JWK to publish in the agent profile's signing_keys for
// key; an empty kid becomes the key's RFC 7638 thumbprint (what Transport
// uses when its KeyID is empty).
func PublicJWK(key crypto.Signer, kid string) (json.RawMessage, error) {
	j, err := httpsig.PublicJWK(key.Public(), kid)
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}
