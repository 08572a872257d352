package httpsig

import (
	"crypto/sha256"
	"encoding/base64"

	"github.com/bcpdev/bcp/internal/jsonstr"
)

// Thumbprint returns the RFC 7638 SHA-256 JWK thumbprint, base64url without
// padding. Only the required members take part (EC: crv, kty, x, y; OKP per
// RFC 8037 §2: crv, kty, x), in lexicographic order, with no whitespace and
// only the escapes JSON requires (§3), so kid, alg and use never change the
// result.
func Thumbprint(j JWK) (string, error) {
	var b []byte
	switch j.Kty {
	case "EC":
		if j.Crv == "" || j.X == "" || j.Y == "" {
			return "", errorf(ErrMalformed, "EC JWK needs crv, x and y for a thumbprint")
		}
		b = jsonstr.Append(append(b, `{"crv":`...), j.Crv)
		b = jsonstr.Append(append(b, `,"kty":"EC","x":`...), j.X)
		b = append(jsonstr.Append(append(b, `,"y":`...), j.Y), '}')
	case "OKP":
		if j.Crv == "" || j.X == "" {
			return "", errorf(ErrMalformed, "OKP JWK needs crv and x for a thumbprint")
		}
		b = jsonstr.Append(append(b, `{"crv":`...), j.Crv)
		b = append(jsonstr.Append(append(b, `,"kty":"OKP","x":`...), j.X), '}')
	default:
		return "", errorf(ErrAlgorithmUnsupported, "thumbprint for key type %q", j.Kty)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
