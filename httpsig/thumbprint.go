package httpsig

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Thumbprint returns the RFC 7638 SHA-256 JWK thumbprint, base64url without
// padding. Only the required members take part (EC: crv, kty, x, y; OKP per
// RFC 8037 §2: crv, kty, x), in lexicographic order, with no whitespace, so
// kid, alg and use never change the result.
func Thumbprint(j JWK) (string, error) {
	var b strings.Builder
	switch j.Kty {
	case "EC":
		if j.Crv == "" || j.X == "" || j.Y == "" {
			return "", errorf(ErrMalformed, "EC JWK needs crv, x and y for a thumbprint")
		}
		b.WriteString(`{"crv":` + jsonString(j.Crv) + `,"kty":"EC","x":` + jsonString(j.X) + `,"y":` + jsonString(j.Y) + `}`)
	case "OKP":
		if j.Crv == "" || j.X == "" {
			return "", errorf(ErrMalformed, "OKP JWK needs crv and x for a thumbprint")
		}
		b.WriteString(`{"crv":` + jsonString(j.Crv) + `,"kty":"OKP","x":` + jsonString(j.X) + `}`)
	default:
		return "", errorf(ErrAlgorithmUnsupported, "thumbprint for key type %q", j.Kty)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// jsonString quotes s as a JSON string with only the escapes JSON requires,
// matching RFC 7638 §3's "no additional escaping" rule.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
