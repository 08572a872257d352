package ap2

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// A mandate is an SD-JWT with key binding (RFC 9901) whose claims are
// AP2's (docs: checkout_mandate.md, payment_mandate.md; schemas/):
//
//	<issuer JWT>~<disclosure>~…~<key-binding JWT>
//
// The issuer JWT is signed by the agent platform with a key of its profile
// (signing_keys, by kid), has exp and cnf.jwk (the holder's key) and lists
// the disclosures' digests in _sd (_sd_alg, default sha-256), at any
// depth. Its claims, disclosed (or the one object of delegate_payload, as
// AP2's examples carry them), are one AP2 mandate: a closed checkout
// mandate (vct mandate.checkout.1: checkout_jwt, checkout_hash), an open
// one (mandate.checkout.open.1: constraints; the closed mandate's claims
// are then in the key-binding JWT, signed by the agent key cnf names) or
// a payment mandate (mandate.payment.1). The key-binding JWT (typ kb+jwt,
// or AP2's kb+sd-jwt) is signed with the cnf key and binds the
// presentation to this merchant and checkout: aud is the merchant's
// origin (the service endpoint's scheme://host[:port]), nonce the
// checkout id, sd_hash the digest of everything before it, iat recent.

// Limits: a mandate embeds one checkout; these bound what a parser holds.
const (
	MaxMandate     = 256 << 10
	maxDisclosures = 64
)

// Header types of the two JWTs.
const (
	TypeIssuer     = "dc+sd-jwt"
	TypeKeyBinding = "kb+jwt"
	// TypeKeyBindingSD is AP2's typ for a key binding that is itself a
	// mandate (the closed mandate an agent signs under an open one).
	TypeKeyBindingSD = "kb+sd-jwt"
)

// clockSkew is how far in the future an iat may be; KeyBindingMaxAge how
// old a key-binding JWT may be (a presentation is made just before
// complete_checkout).
const (
	clockSkew        = 2 * time.Minute
	KeyBindingMaxAge = 15 * time.Minute
)

// Mandate is a parsed, not yet verified, checkout mandate.
type Mandate struct {
	issuerJWT   string
	disclosures []string
	keyBinding  string // "" when the mandate has none
	issuer      *jose.JSONWebSignature
	raw         string
}

// Parse splits a mandate and parses its issuer JWT. It checks syntax only;
// every failure is mandate_invalid_signature (nothing in it can be trusted).
func Parse(s string) (*Mandate, error) {
	if s == "" {
		return nil, fail(CodeMandateRequired, "ap2.checkout_mandate is empty")
	}
	if len(s) > MaxMandate {
		return nil, fail(CodeMandateInvalidSignature, "the mandate is larger than %d bytes", MaxMandate)
	}
	parts := strings.Split(s, "~")
	if len(parts) > maxDisclosures+2 {
		return nil, fail(CodeMandateInvalidSignature, "the mandate has more than %d disclosures", maxDisclosures)
	}
	m := &Mandate{issuerJWT: parts[0], raw: s}
	rest := parts[1:]
	// A key-binding JWT has dots; a disclosure (base64url) has none. An
	// SD-JWT without key binding ends in "~" (an empty last part).
	if n := len(rest); n > 0 {
		if last := rest[n-1]; strings.Contains(last, ".") {
			m.keyBinding, rest = last, rest[:n-1]
		} else if last == "" {
			rest = rest[:n-1]
		}
	}
	for _, d := range rest {
		if d == "" || strings.Contains(d, ".") {
			return nil, fail(CodeMandateInvalidSignature, "the mandate is not an SD-JWT (empty or malformed disclosure)")
		}
	}
	m.disclosures = rest
	obj, err := jose.ParseSignedCompact(m.issuerJWT, Algorithms)
	if err != nil || len(obj.Signatures) != 1 {
		return nil, fail(CodeMandateInvalidSignature, "the mandate's issuer JWT is not a compact JWS signed with ES256, ES384 or ES512")
	}
	m.issuer = obj
	return m, nil
}

// Digest is the mandate's SHA-256 (hex): what is recorded and logged
// instead of the mandate.
func (m *Mandate) Digest() string {
	sum := sha256.Sum256([]byte(m.raw))
	return hex.EncodeToString(sum[:])
}

// KeyID is the issuer JWT's kid.
func (m *Mandate) KeyID() string { return m.issuer.Signatures[0].Protected.KeyID }

// VerifyOptions say whom the mandate must be for.
type VerifyOptions struct {
	// IssuerKeys are the agent profile's signing_keys (JWK JSON).
	IssuerKeys []json.RawMessage
	// Audience is the merchant's origin; Nonce the checkout id.
	Audience, Nonce string
	Now             time.Time
}

// Verified is what a verified mandate says: the envelope's facts, kept
// with the order, and the mandate's claims (AP2's layout, after its
// disclosures), which VerifyCheckout and VerifyPayment read.
type Verified struct {
	Digest     string `json:"digest"`
	IssuerKID  string `json:"issuer_kid"`
	Issuer     string `json:"iss,omitempty"`
	IssuedAt   int64  `json:"iat,omitempty"`
	Expires    int64  `json:"exp"`
	KeyBoundAt int64  `json:"kb_iat"`
	Audience   string `json:"aud"`
	Nonce      string `json:"nonce"`
	// VCT is the mandate type (AP2's vct claim).
	VCT string `json:"vct"`
	// SDAlg is the SD-JWT's _sd_alg (sha-256 when absent).
	SDAlg  string         `json:"-"`
	claims map[string]any // the mandate's claims, disclosed
	kb     map[string]any // the key-binding JWT's claims
}

// Verify checks the mandate's envelope fully: the issuer signature with
// the agent's key (agent_missing_key when the profile has none), the
// disclosures against their digests, expiry (mandate_expired), and the
// key binding: present, signed by cnf.jwk, for this audience and nonce
// (mandate_scope_mismatch otherwise), over exactly this SD-JWT (sd_hash)
// and recent. What the claims authorize is VerifyCheckout's and
// VerifyPayment's.
func (m *Mandate) Verify(o VerifyOptions) (*Verified, error) {
	keys := publicKeys(o.IssuerKeys)
	if len(keys) == 0 {
		return nil, fail(CodeAgentMissingKey, "the agent profile publishes no usable signing key (signing_keys) to verify mandates with")
	}
	sig := m.issuer.Signatures[0]
	if typ, _ := sig.Protected.ExtraHeaders[jose.HeaderType].(string); typ != TypeIssuer && typ != "vc+sd-jwt" {
		return nil, fail(CodeMandateInvalidSignature, "the issuer JWT's typ must be %s", TypeIssuer)
	}
	key, ok := findKey(keys, sig.Protected.KeyID)
	if !ok {
		return nil, fail(CodeMandateInvalidSignature, "the mandate is signed with a key the agent profile does not publish")
	}
	payload, err := m.issuer.Verify(key)
	if err != nil {
		return nil, fail(CodeMandateInvalidSignature, "the mandate's signature does not verify with the agent profile's key")
	}
	claims, alg, err := m.resolve(payload)
	if err != nil {
		return nil, err
	}
	v := &Verified{Digest: m.Digest(), IssuerKID: key.KeyID, SDAlg: alg, claims: claims}
	v.VCT, _ = claims["vct"].(string)
	var std struct {
		Iss string       `json:"iss"`
		Iat *json.Number `json:"iat"`
		Exp *json.Number `json:"exp"`
		Nbf *json.Number `json:"nbf"`
		Cnf *struct {
			JWK json.RawMessage `json:"jwk"`
		} `json:"cnf"`
	}
	if err := unmarshalNumbers(marshalClaims(claims), &std); err != nil {
		return nil, fail(CodeMandateInvalidSignature, "the mandate's claims are malformed (iss, iat, exp, nbf, cnf)")
	}
	now := o.Now.Unix()
	exp, ok := seconds(std.Exp)
	if !ok {
		return nil, fail(CodeMandateExpired, "the mandate has no exp")
	}
	if now >= exp {
		return nil, fail(CodeMandateExpired, "the mandate expired at %s", time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	if nbf, ok := seconds(std.Nbf); ok && nbf > now+int64(clockSkew/time.Second) {
		return nil, fail(CodeMandateInvalidSignature, "the mandate is not valid yet (nbf)")
	}
	v.Issuer, v.Expires = std.Iss, exp
	v.IssuedAt, _ = seconds(std.Iat)

	// Key binding.
	if m.keyBinding == "" {
		return nil, fail(CodeMandateInvalidSignature, "the mandate has no key-binding JWT (SD-JWT+kb is required)")
	}
	if std.Cnf == nil || len(std.Cnf.JWK) == 0 {
		return nil, fail(CodeMandateInvalidSignature, "the mandate has no cnf.jwk to verify its key binding with")
	}
	var holder jose.JSONWebKey
	if err := holder.UnmarshalJSON(std.Cnf.JWK); err != nil || !holder.Valid() || !holder.IsPublic() {
		return nil, fail(CodeMandateInvalidSignature, "the mandate's cnf.jwk is not a public key")
	}
	if _, ok := ecPublic(holder); !ok {
		return nil, fail(CodeMandateInvalidSignature, "the mandate's cnf.jwk is not an EC key")
	}
	kb, err := jose.ParseSignedCompact(m.keyBinding, Algorithms)
	if err != nil || len(kb.Signatures) != 1 {
		return nil, fail(CodeMandateInvalidSignature, "the key-binding JWT is not a compact JWS")
	}
	if typ, _ := kb.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string); typ != TypeKeyBinding && typ != TypeKeyBindingSD {
		return nil, fail(CodeMandateInvalidSignature, "the key-binding JWT's typ must be %s", TypeKeyBinding)
	}
	kbPayload, err := kb.Verify(holder)
	if err != nil {
		return nil, fail(CodeMandateInvalidSignature, "the key-binding JWT does not verify with cnf.jwk")
	}
	var kbc struct {
		Iat    *json.Number    `json:"iat"`
		Aud    json.RawMessage `json:"aud"`
		Nonce  string          `json:"nonce"`
		SDHash string          `json:"sd_hash"`
	}
	if err := unmarshalNumbers(kbPayload, &kbc); err != nil {
		return nil, fail(CodeMandateInvalidSignature, "the key-binding JWT's claims are malformed")
	}
	if err := unmarshalNumbers(kbPayload, &v.kb); err != nil || v.kb == nil {
		return nil, fail(CodeMandateInvalidSignature, "the key-binding JWT's claims are malformed")
	}
	if kbc.SDHash != hashB64(alg, m.presented()) {
		return nil, fail(CodeMandateInvalidSignature, "the key binding's sd_hash does not match the mandate")
	}
	iat, ok := seconds(kbc.Iat)
	switch {
	case !ok:
		return nil, fail(CodeMandateInvalidSignature, "the key-binding JWT has no iat")
	case iat > now+int64(clockSkew/time.Second):
		return nil, fail(CodeMandateInvalidSignature, "the key-binding JWT is issued in the future")
	case iat < now-int64(KeyBindingMaxAge/time.Second):
		return nil, fail(CodeMandateExpired, "the key-binding JWT is older than %s", KeyBindingMaxAge)
	}
	if !audienceIs(kbc.Aud, o.Audience) {
		return nil, fail(CodeMandateScopeMismatch, "the key binding is for another audience, not %s", o.Audience)
	}
	if kbc.Nonce != o.Nonce {
		return nil, fail(CodeMandateScopeMismatch, "the key binding's nonce is not this checkout's id")
	}
	v.KeyBoundAt, v.Audience, v.Nonce = iat, o.Audience, kbc.Nonce
	return v, nil
}

// presented is the SD-JWT the key binding covers: everything up to and
// including the "~" before the key-binding JWT.
func (m *Mandate) presented() string {
	var b strings.Builder
	b.WriteString(m.issuerJWT)
	b.WriteByte('~')
	for _, d := range m.disclosures {
		b.WriteString(d)
		b.WriteByte('~')
	}
	return b.String()
}

// hashB64 is the base64url digest of s with an SD-JWT hash algorithm
// (_sd_alg: sha-256, sha-384 or sha-512; resolve refuses others).
func hashB64(alg, s string) string {
	var sum []byte
	switch alg {
	case "sha-384":
		h := sha512.Sum384([]byte(s))
		sum = h[:]
	case "sha-512":
		h := sha512.Sum512([]byte(s))
		sum = h[:]
	default:
		h := sha256.Sum256([]byte(s))
		sum = h[:]
	}
	return base64.RawURLEncoding.EncodeToString(sum)
}

func sdHash(s string) string { return hashB64("sha-256", s) }

// maxDepth bounds how deeply disclosed claims nest.
const maxDepth = 16

// resolve returns the issuer claims with every disclosure applied (RFC
// 9901 §7.1): object-property disclosures [salt, name, value] replace
// their digests in an object's _sd, array-element disclosures [salt,
// value] their {"...": digest} elements, at any depth (AP2 discloses
// checkout_jwt, allowed merchants and acceptable items so); undisclosed
// digests drop out. Each disclosure must be referenced exactly once. An
// AP2 mandate carried as the one element of delegate_payload (AP2's
// examples) is unwrapped: its claims, over the envelope's.
func (m *Mandate) resolve(payload []byte) (map[string]any, string, error) {
	var claims map[string]any
	if err := unmarshalNumbers(payload, &claims); err != nil || claims == nil {
		return nil, "", fail(CodeMandateInvalidSignature, "the mandate's payload is not a JSON object")
	}
	alg := "sha-256"
	if a, ok := claims["_sd_alg"]; ok {
		s, _ := a.(string)
		switch s {
		case "sha-256", "sha-384", "sha-512":
			alg = s
		default:
			return nil, "", fail(CodeMandateInvalidSignature, "_sd_alg must be sha-256, sha-384 or sha-512")
		}
		delete(claims, "_sd_alg")
	}
	type disclosure struct {
		name  string // "" for an array element
		value any
		used  bool
	}
	byDigest := map[string]*disclosure{}
	for _, d := range m.disclosures {
		raw, err := base64.RawURLEncoding.DecodeString(d)
		if err != nil {
			return nil, "", fail(CodeMandateInvalidSignature, "a disclosure is not base64url")
		}
		var arr []any
		if unmarshalNumbers(raw, &arr) != nil || (len(arr) != 2 && len(arr) != 3) {
			return nil, "", fail(CodeMandateInvalidSignature, "a disclosure is not [salt, name, value] or [salt, value]")
		}
		dd := &disclosure{value: arr[len(arr)-1]}
		if len(arr) == 3 {
			name, _ := arr[1].(string)
			if name == "" || name == "_sd" || name == "..." || name == "_sd_alg" {
				return nil, "", fail(CodeMandateInvalidSignature, "a disclosure names no valid claim")
			}
			dd.name = name
		}
		dg := hashB64(alg, d)
		if byDigest[dg] != nil {
			return nil, "", fail(CodeMandateInvalidSignature, "a disclosure is repeated")
		}
		byDigest[dg] = dd
	}
	var walk func(v any, depth int) (any, error)
	walk = func(v any, depth int) (any, error) {
		if depth > maxDepth {
			return nil, fail(CodeMandateInvalidSignature, "the mandate's claims nest deeper than %d levels", maxDepth)
		}
		switch x := v.(type) {
		case map[string]any:
			if raw, ok := x["_sd"]; ok {
				list, ok := raw.([]any)
				if !ok {
					return nil, fail(CodeMandateInvalidSignature, "_sd must be an array of digests")
				}
				delete(x, "_sd")
				for _, e := range list {
					dg, _ := e.(string)
					dd := byDigest[dg]
					if dd == nil {
						continue // not disclosed (or a decoy)
					}
					if dd.used || dd.name == "" {
						return nil, fail(CodeMandateInvalidSignature, "a disclosure is referenced twice or in the wrong place")
					}
					if _, dup := x[dd.name]; dup {
						return nil, fail(CodeMandateInvalidSignature, "a disclosure repeats the claim %q", dd.name)
					}
					dd.used = true
					x[dd.name] = dd.value
				}
			}
			for k, e := range x {
				w, err := walk(e, depth+1)
				if err != nil {
					return nil, err
				}
				x[k] = w
			}
			return x, nil
		case []any:
			out := make([]any, 0, len(x))
			for _, e := range x {
				if obj, ok := e.(map[string]any); ok && len(obj) == 1 {
					if dg, ok := obj["..."].(string); ok {
						dd := byDigest[dg]
						if dd == nil {
							continue // an element not disclosed
						}
						if dd.used || dd.name != "" {
							return nil, fail(CodeMandateInvalidSignature, "a disclosure is referenced twice or in the wrong place")
						}
						dd.used = true
						e = dd.value
					}
				}
				w, err := walk(e, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, w)
			}
			return out, nil
		}
		return v, nil
	}
	resolved, err := walk(claims, 0)
	if err != nil {
		return nil, "", err
	}
	for _, dd := range byDigest {
		if !dd.used {
			return nil, "", fail(CodeMandateInvalidSignature, "a disclosure is not covered by the mandate's signature")
		}
	}
	claims = resolved.(map[string]any)
	if _, has := claims["vct"]; !has {
		if dp, ok := claims["delegate_payload"].([]any); ok && len(dp) == 1 {
			if inner, ok := dp[0].(map[string]any); ok {
				delete(claims, "delegate_payload")
				for k, e := range inner {
					claims[k] = e
				}
			}
		}
	}
	return claims, alg, nil
}

func unmarshalNumbers(b []byte, out any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	return d.Decode(out)
}

// seconds reads a NumericDate (integer seconds; a fraction is dropped).
func seconds(n *json.Number) (int64, bool) {
	if n == nil {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// audienceIs accepts aud as a string or an array holding want.
func audienceIs(aud json.RawMessage, want string) bool {
	if want == "" {
		return false
	}
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == want
	}
	var many []string
	if json.Unmarshal(aud, &many) == nil {
		for _, a := range many {
			if a == want {
				return true
			}
		}
	}
	return false
}

func ecPublic(k jose.JSONWebKey) (*ecdsa.PublicKey, bool) {
	p, ok := k.Key.(*ecdsa.PublicKey)
	return p, ok
}
