// Package ap2 holds the AP2 mandates extension's formats
// (br.dev.bcp.shopping.ap2_mandate, upstream docs/specification/ap2-mandates.md):
// the merchant authorization (a detached JWS over the JCS form of a
// checkout without "ap2") and the mandates, in the AP2 specification's
// layout (schemas/, validated with santhosh-tekuri/jsonschema): checkout
// mandates (closed and open, whose checkout_jwt is the merchant
// authorization with its payload re-attached) and payment mandates, each
// an SD-JWT with key binding. JWS and JWK are go-jose's and RFC 8785 is
// gowebpki/jcs's; this package is only the protocol around them: what is
// signed, which claims must be there and which error code each failure is.
package ap2

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"
)

// Error codes of the extension (ap2_mandate.json#/$defs/error_code).
const (
	CodeMandateRequired              = "mandate_required"
	CodeAgentMissingKey              = "agent_missing_key"
	CodeMandateInvalidSignature      = "mandate_invalid_signature"
	CodeMandateExpired               = "mandate_expired"
	CodeMandateScopeMismatch         = "mandate_scope_mismatch"
	CodeMerchantAuthorizationInvalid = "merchant_authorization_invalid"
	CodeMerchantAuthorizationMissing = "merchant_authorization_missing"
)

// VPFormat is the one verifiable presentation format verified here.
const VPFormat = "dc+sd-jwt"

// Config is the capability's config in a merchant's profile.
var Config = json.RawMessage(`{"vp_formats_supported":{"` + VPFormat + `":{}}}`)

// Error is a verification failure: one of the extension's codes and a
// reason safe to show the agent (never key material or the mandate).
type Error struct {
	Code   string
	Reason string
}

func (e *Error) Error() string { return e.Code + ": " + e.Reason }

func fail(code, format string, args ...any) *Error {
	return &Error{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// CodeOf returns the extension code of err, or "" when it is not an *Error.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Algorithms AP2 v0.2 accepts (ECDSA only); the platform signs ES256.
var Algorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512}

// maxCheckout bounds a checkout's JSON here (BCP payloads are small; the
// MCP body limit is 1 MiB).
const maxCheckout = 1 << 20

// Payload is the merchant authorization's signed content: the RFC 8785
// canonical form of checkout (a JSON object) without its "ap2" member.
// Every other member, "ucp" included, is covered.
func Payload(checkout []byte) ([]byte, error) {
	if len(checkout) > maxCheckout {
		return nil, errors.New("ap2: checkout too large")
	}
	checkout, _, err := withoutAP2(checkout)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(checkout)
}

// Canonical is the RFC 8785 form of any JSON value (terms are compared in
// this form, so member order and spacing never matter).
func Canonical(v []byte) ([]byte, error) { return jcs.Transform(v) }

// AuthorizationKID returns the kid in a merchant authorization's header,
// checking its shape (<header>..<signature>) and algorithm.
func AuthorizationKID(auth string) (string, error) {
	h, rest, ok := strings.Cut(auth, "..")
	if !ok || h == "" || rest == "" || strings.Contains(rest, ".") {
		return "", errors.New("ap2: a merchant authorization is <header>..<signature>")
	}
	raw, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return "", errors.New("ap2: the authorization header is not base64url")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &hdr); err != nil {
		return "", errors.New("ap2: the authorization header is not JSON")
	}
	if !acceptedAlg(hdr.Alg) {
		return "", fmt.Errorf("ap2: algorithm %q is not accepted", hdr.Alg)
	}
	if hdr.Kid == "" {
		return "", errors.New("ap2: the authorization header has no kid")
	}
	return hdr.Kid, nil
}

func acceptedAlg(alg string) bool {
	for _, a := range Algorithms {
		if string(a) == alg {
			return true
		}
	}
	return false
}

// VerifyAuthorization checks that auth is a detached JWS over checkout's
// Payload by one of keys (JWKs as profiles publish them, picked by kid).
// It returns the kid that verified.
func VerifyAuthorization(checkout []byte, auth string, keys []json.RawMessage) (string, error) {
	kid, err := AuthorizationKID(auth)
	if err != nil {
		return "", err
	}
	payload, err := Payload(checkout)
	if err != nil {
		return "", err
	}
	key, ok := findKey(publicKeys(keys), kid)
	if !ok {
		return "", fmt.Errorf("ap2: no published key %q", kid)
	}
	obj, err := jose.ParseDetached(auth, payload, Algorithms)
	if err != nil {
		return "", errors.New("ap2: malformed merchant authorization")
	}
	if err := obj.DetachedVerify(payload, key); err != nil {
		return "", errors.New("ap2: the merchant authorization does not verify")
	}
	return kid, nil
}

// publicKeys parses profile keys, keeping the valid public EC keys (the
// algorithms AP2 accepts); anything else is skipped, never an error.
func publicKeys(raw []json.RawMessage) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, r := range raw {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(r); err != nil || !k.Valid() || !k.IsPublic() || k.KeyID == "" {
			continue
		}
		if _, ok := ecPublic(k); !ok {
			continue
		}
		out = append(out, k)
	}
	return out
}

func findKey(keys []jose.JSONWebKey, kid string) (jose.JSONWebKey, bool) {
	for _, k := range keys {
		if k.KeyID == kid {
			return k, true
		}
	}
	return jose.JSONWebKey{}, false
}

// Sign makes a detached JWS over payload (already Payload's output) with
// signer; the tenants service uses it with the merchant's current key.
func Sign(signer jose.Signer, payload []byte) (string, error) {
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return obj.DetachedCompactSerialize()
}

// Insert sets checkout's "ap2" member to {"merchant_authorization": auth},
// replacing any "ap2" it had; the other members keep their bytes and order.
func Insert(checkout []byte, auth string) ([]byte, error) {
	checkout, n, err := withoutAP2(bytes.TrimSpace(checkout))
	if err != nil {
		return nil, err
	}
	ap2, err := json.Marshal(map[string]string{"merchant_authorization": auth})
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(checkout)+len(ap2)+8)
	out = append(out, checkout[:len(checkout)-1]...)
	if n > 0 {
		out = append(out, ',')
	}
	out = append(out, `"ap2":`...)
	out = append(out, ap2...)
	return append(out, '}'), nil
}

// withoutAP2 is checkout (a JSON object) without its "ap2" member, and
// how many members it has left; without one it keeps its bytes.
func withoutAP2(checkout []byte) ([]byte, int, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(checkout, &members); err != nil || members == nil {
		return nil, 0, errors.New("ap2: checkout is not a JSON object")
	}
	if _, ok := members["ap2"]; !ok {
		return checkout, len(members), nil
	}
	delete(members, "ap2")
	out, err := json.Marshal(members)
	return out, len(members), err
}
