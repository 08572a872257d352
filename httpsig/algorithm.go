package httpsig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"math/big"
)

// Algorithm is a signature algorithm, named by its JWA identifier (RFC 7518,
// RFC 8037) because keys arrive as JWKs. HTTPSigName gives the RFC 9421 name.
type Algorithm string

// Supported algorithms. ES256 is mandatory for UCP/BCP verifiers.
const (
	ES256 Algorithm = "ES256" // ECDSA P-256 + SHA-256, raw r||s (64 bytes)
	ES384 Algorithm = "ES384" // ECDSA P-384 + SHA-384, raw r||s (96 bytes)
	EdDSA Algorithm = "EdDSA" // Ed25519 (RFC 8032), 64 bytes
)

// Algorithms lists every supported algorithm, strongest-mandatory first.
func Algorithms() []Algorithm { return []Algorithm{ES256, ES384, EdDSA} }

// HTTPSigName returns the RFC 9421 §6.2 registry name used in the alg
// signature parameter, or "" for an unknown algorithm.
func (a Algorithm) HTTPSigName() string {
	switch a {
	case ES256:
		return "ecdsa-p256-sha256"
	case ES384:
		return "ecdsa-p384-sha384"
	case EdDSA:
		return "ed25519"
	}
	return ""
}

// AlgorithmFromHTTPSig maps an RFC 9421 alg parameter value to an Algorithm.
func AlgorithmFromHTTPSig(name string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if a.HTTPSigName() == name {
			return a, nil
		}
	}
	return "", errorf(ErrAlgorithmUnsupported, "signature algorithm %q", name)
}

// JWK returns the JWK kty and crv that carry keys for this algorithm.
func (a Algorithm) JWK() (kty, crv string) {
	switch a {
	case ES256:
		return "EC", "P-256"
	case ES384:
		return "EC", "P-384"
	case EdDSA:
		return "OKP", "Ed25519"
	}
	return "", ""
}

// algorithmForJWK derives the algorithm from a JWK's kty and crv; the JWK
// alg member is only checked against it, never trusted on its own.
func algorithmForJWK(kty, crv string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if k, c := a.JWK(); k == kty && c == crv {
			return a, nil
		}
	}
	return "", errorf(ErrAlgorithmUnsupported, "key type %q curve %q", kty, crv)
}

// signatureSize is the exact length of a signature value; anything else
// (notably a DER-encoded ECDSA signature) is rejected before verification.
func (a Algorithm) signatureSize() int {
	switch a {
	case ES256, EdDSA:
		return 64
	case ES384:
		return 96
	}
	return 0
}

func (a Algorithm) curve() elliptic.Curve {
	switch a {
	case ES256:
		return elliptic.P256()
	case ES384:
		return elliptic.P384()
	}
	return nil
}

func (a Algorithm) digest(msg []byte) []byte {
	switch a {
	case ES256:
		h := sha256.Sum256(msg)
		return h[:]
	case ES384:
		h := sha512.Sum384(msg)
		return h[:]
	}
	return nil
}

func (a Algorithm) hash() crypto.Hash {
	switch a {
	case ES256:
		return crypto.SHA256
	case ES384:
		return crypto.SHA384
	}
	return 0
}

// algorithmOf derives the algorithm from a public key and validates the key.
func algorithmOf(pub crypto.PublicKey) (Algorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return "", errorf(ErrAlgorithmUnsupported, "nil ECDSA key")
		}
		var alg Algorithm
		switch k.Curve {
		case elliptic.P256():
			alg = ES256
		case elliptic.P384():
			alg = ES384
		default:
			return "", errorf(ErrAlgorithmUnsupported, "ECDSA curve %s", k.Curve.Params().Name)
		}
		// ECDH conversion rejects points that are not on the curve.
		if _, err := k.ECDH(); err != nil {
			return "", wrapError(ErrMalformed, err, "invalid ECDSA public key")
		}
		return alg, nil
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return "", errorf(ErrMalformed, "Ed25519 public key of %d bytes", len(k))
		}
		return EdDSA, nil
	}
	return "", errorf(ErrAlgorithmUnsupported, "public key type %T", pub)
}

// sign produces the RFC 9421 §3.3 signature value over base.
func sign(key crypto.Signer, alg Algorithm, base []byte) ([]byte, error) {
	switch alg {
	case ES256, ES384:
		size := alg.signatureSize() / 2
		h := alg.digest(base)
		var r, s *big.Int
		if k, ok := key.(*ecdsa.PrivateKey); ok {
			var err error
			if r, s, err = ecdsa.Sign(rand.Reader, k, h); err != nil {
				return nil, err
			}
		} else {
			// Generic crypto.Signer (HSM, KMS) returns ASN.1 DER; convert
			// to the raw fixed-width form RFC 9421 requires.
			der, err := key.Sign(rand.Reader, h, alg.hash())
			if err != nil {
				return nil, err
			}
			var sig struct{ R, S *big.Int }
			rest, err := asn1.Unmarshal(der, &sig)
			if err != nil || len(rest) != 0 || sig.R == nil || sig.S == nil {
				return nil, errorf(ErrMalformed, "signer returned an invalid ECDSA signature")
			}
			r, s = sig.R, sig.S
		}
		if r.Sign() <= 0 || s.Sign() <= 0 || r.BitLen() > size*8 || s.BitLen() > size*8 {
			return nil, errorf(ErrMalformed, "ECDSA signature out of range")
		}
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out, nil
	case EdDSA:
		// Ed25519 signs the message itself (no prehash): crypto.Hash(0).
		return key.Sign(rand.Reader, base, crypto.Hash(0))
	}
	return nil, errorf(ErrAlgorithmUnsupported, "algorithm %q", alg)
}

// verify checks sig over base. The key must already be validated for alg.
func verify(pub crypto.PublicKey, alg Algorithm, base, sig []byte) error {
	if n := alg.signatureSize(); n == 0 {
		return errorf(ErrAlgorithmUnsupported, "algorithm %q", alg)
	} else if len(sig) != n {
		return errorf(ErrSignatureInvalid, "%s signature must be %d raw bytes, got %d (DER is not accepted)", alg, n, len(sig))
	}
	switch alg {
	case ES256, ES384:
		k, ok := pub.(*ecdsa.PublicKey)
		if !ok || k == nil || k.Curve != alg.curve() {
			return errorf(ErrAlgorithmUnsupported, "key does not match algorithm %s", alg)
		}
		half := len(sig) / 2
		r := new(big.Int).SetBytes(sig[:half])
		s := new(big.Int).SetBytes(sig[half:])
		if !ecdsa.Verify(k, alg.digest(base), r, s) {
			return errorf(ErrSignatureInvalid, "signature does not verify")
		}
		return nil
	case EdDSA:
		k, ok := pub.(ed25519.PublicKey)
		// ed25519.Verify panics on a wrong-length key; check first.
		if !ok || len(k) != ed25519.PublicKeySize {
			return errorf(ErrAlgorithmUnsupported, "key does not match algorithm %s", alg)
		}
		if !ed25519.Verify(k, base, sig) {
			return errorf(ErrSignatureInvalid, "signature does not verify")
		}
		return nil
	}
	return errorf(ErrAlgorithmUnsupported, "algorithm %q", alg)
}
