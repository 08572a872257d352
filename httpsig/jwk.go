package httpsig

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"slices"
)

// JWK is a public JSON Web Key (RFC 7517) for EC (RFC 7518 §6.2) and OKP
// (RFC 8037) keys. It marshals to exactly the standard public members; any
// other member read by UnmarshalJSON is dropped, so re-publishing a parsed
// key can never leak private material.
type JWK struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid,omitempty"`
	Use    string   `json:"use,omitempty"`
	KeyOps []string `json:"key_ops,omitempty"`
	Alg    string   `json:"alg,omitempty"`
	Crv    string   `json:"crv,omitempty"`
	X      string   `json:"x,omitempty"`
	Y      string   `json:"y,omitempty"`

	private bool // a private member (d, p, q, dp, dq, qi, oth, k) was present
}

// privateMembers are the JWK members that carry private or symmetric key
// material (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// UnmarshalJSON decodes the standard members and records whether private
// members were present; their values are never retained.
func (j *JWK) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return wrapError(ErrMalformed, err, "JWK")
	}
	if raw == nil {
		return errorf(ErrMalformed, "JWK is null")
	}
	var k JWK
	for name, dst := range map[string]*string{"kty": &k.Kty, "kid": &k.Kid, "use": &k.Use, "alg": &k.Alg, "crv": &k.Crv, "x": &k.X, "y": &k.Y} {
		if v, ok := raw[name]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return wrapError(ErrMalformed, err, "JWK member %q", name)
			}
		}
	}
	if v, ok := raw["key_ops"]; ok {
		if err := json.Unmarshal(v, &k.KeyOps); err != nil {
			return wrapError(ErrMalformed, err, "JWK member \"key_ops\"")
		}
	}
	for _, name := range privateMembers {
		if _, ok := raw[name]; ok {
			k.private = true
		}
	}
	*j = k
	return nil
}

// ParseJWK decodes a single JWK.
func ParseJWK(data []byte) (JWK, error) {
	var j JWK
	if err := json.Unmarshal(data, &j); err != nil {
		return JWK{}, asKind(err, ErrMalformed)
	}
	return j, nil
}

// IsPrivate reports whether the decoded JSON carried private key members.
func (j JWK) IsPrivate() bool { return j.private }

// forSigning reports whether the key may verify signatures per its use and
// key_ops members (RFC 7517 §4.2, §4.3).
func (j JWK) forSigning() bool {
	if j.Use != "" && j.Use != "sig" {
		return false
	}
	if j.KeyOps != nil && !slices.Contains(j.KeyOps, "verify") {
		return false
	}
	return true
}

// PublicKey converts the JWK into a verification key. It fails with
// ErrMalformed for private material, bad coordinates, an alg that does not
// pair with crv, or a key not meant for signatures, and with
// ErrAlgorithmUnsupported for key types or curves this package cannot use.
func (j JWK) PublicKey() (PublicKey, error) {
	if j.private {
		return PublicKey{}, errorf(ErrMalformed, "JWK %q contains private key material", j.Kid)
	}
	if !j.forSigning() {
		return PublicKey{}, errorf(ErrMalformed, "JWK %q is not a signature key (use %q, key_ops %q)", j.Kid, j.Use, j.KeyOps)
	}
	alg, err := algorithmForJWK(j.Kty, j.Crv)
	if err != nil {
		return PublicKey{}, err
	}
	if j.Alg != "" && j.Alg != string(alg) && !(alg == EdDSA && j.Alg == "Ed25519") {
		// "Ed25519" is the fully-specified JOSE name (RFC 9864) for the same
		// algorithm; any other mismatch is a malformed key.
		return PublicKey{}, errorf(ErrMalformed, "JWK %q: alg %q does not pair with crv %q", j.Kid, j.Alg, j.Crv)
	}
	var pub crypto.PublicKey
	switch alg {
	case ES256, ES384:
		size := alg.signatureSize() / 2
		x, errX := decodeB64URL(j.X)
		y, errY := decodeB64URL(j.Y)
		if errX != nil || errY != nil || len(x) != size || len(y) != size {
			return PublicKey{}, errorf(ErrMalformed, "JWK %q: x and y must be %d-byte base64url values", j.Kid, size)
		}
		point := append(append([]byte{4}, x...), y...)
		k, err := ecdsa.ParseUncompressedPublicKey(alg.curve(), point)
		if err != nil {
			return PublicKey{}, wrapError(ErrMalformed, err, "JWK %q", j.Kid)
		}
		pub = k
	case EdDSA:
		x, err := decodeB64URL(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize || j.Y != "" {
			return PublicKey{}, errorf(ErrMalformed, "JWK %q: x must be a 32-byte base64url value", j.Kid)
		}
		pub = ed25519.PublicKey(x)
	}
	return PublicKey{KeyID: j.Kid, Algorithm: alg, Key: pub}, nil
}

// PublicJWK encodes a public key (or the public half of a private key) as a
// JWK with kty, crv, x, y, alg and use "sig". An empty kid is replaced by the
// key's RFC 7638 thumbprint, the form Web Bot Auth requires.
func PublicJWK(pub crypto.PublicKey, kid string) (JWK, error) {
	pub = publicOf(pub)
	alg, err := algorithmOf(pub)
	if err != nil {
		return JWK{}, err
	}
	kty, crv := alg.JWK()
	j := JWK{Kty: kty, Crv: crv, Alg: string(alg), Use: "sig"}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		point, err := k.Bytes() // 0x04 || X || Y, fixed width
		if err != nil {
			return JWK{}, wrapError(ErrMalformed, err, "ECDSA public key")
		}
		size := (len(point) - 1) / 2
		j.X = base64.RawURLEncoding.EncodeToString(point[1 : 1+size])
		j.Y = base64.RawURLEncoding.EncodeToString(point[1+size:])
	case ed25519.PublicKey:
		j.X = base64.RawURLEncoding.EncodeToString(k)
	}
	if kid == "" {
		if kid, err = Thumbprint(j); err != nil {
			return JWK{}, err
		}
	}
	j.Kid = kid
	return j, nil
}

// decodeB64URL decodes unpadded base64url strictly (RFC 7515 §2), so that a
// key has exactly one accepted encoding.
func decodeB64URL(s string) ([]byte, error) {
	if s == "" || bytes.ContainsAny([]byte(s), "=\r\n") {
		return nil, errorf(ErrMalformed, "invalid base64url")
	}
	return base64.RawURLEncoding.Strict().DecodeString(s)
}
