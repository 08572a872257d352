// Package card is the delegated card side of the payments service: the
// CardProcessor boundary (charge, refund, void, idempotent by keys we
// choose) and the verification of delegated tokens signed as compact JWS
// (ES256).
//
// We verify JWS with the standard library (crypto/ecdsa) and the JWK
// parser of package httpsig instead of a JOSE module: one algorithm
// (ES256, raw r‖s as RFC 7518 §3.4 requires), no "crit", no unencoded
// payloads, no key embedded in the header — the small, closed subset a
// delegated token needs, with nothing negotiable by the token itself.
package card

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Processor charges delegated card tokens. Every call is idempotent by a
// key we choose and store before calling: a retry after a timeout gets the
// same result and never a second charge.
type Processor interface {
	Charge(ctx context.Context, req ChargeRequest) (Charge, error)
	Refund(ctx context.Context, chargeID, refundID string, cents int64) (Refund, error)
	// Cancel stops the sale under an idempotency key for good: a sale not
	// made yet never will be (the key answers voided from now on, so a
	// Charge racing this one charges nothing), one waiting for 3-D Secure
	// is voided, and one already approved (or declined) is returned as it
	// is: an approved answer means the money moved. Processors that offer
	// a cancel or reversal by merchant reference implement it with that.
	Cancel(ctx context.Context, req CancelRequest) (Charge, error)
}

// CancelRequest names the sale to stop. Amount and Currency are what it
// was for (a processor may record the voided key with them).
type CancelRequest struct {
	IdempotencyKey string
	Amount         int64
	Currency       string
}

// Lookuper is implemented by processors that can find a charge by its
// idempotency key (ErrNotFound when none): the payments service uses it to
// settle an attempt whose charge call never returned.
type Lookuper interface {
	Lookup(ctx context.Context, idempotencyKey string) (Charge, error)
}

// ChargeRequest is a sale (authorisation and capture).
type ChargeRequest struct {
	// IdempotencyKey is the attempt id.
	IdempotencyKey string
	// Token is an opaque processor token ("tok_…"); empty when a verified
	// JWS is the authorisation.
	Token string
	// TokenHash identifies the credential (SHA-256 of the token string):
	// processors see single use without us storing the token.
	TokenHash [32]byte
	// Scenario forces a sandbox outcome ("approve", "decline",
	// "requires_3ds", "insufficient_funds"); real processors ignore it.
	Scenario string
	Amount   int64
	Currency string
	// ReturnURL is where the buyer comes back to after a 3-D Secure
	// challenge (the checkout's continue_url).
	ReturnURL string
	// CheckoutID is the merchant reference processors keep with the sale.
	CheckoutID string
}

// Charge outcomes.
const (
	StatusApproved       = "approved"
	StatusDeclined       = "declined"
	StatusRequiresAction = "requires_action"
	StatusVoided         = "voided"
)

// Decline codes.
const (
	DeclineCardDeclined      = "card_declined"
	DeclineInsufficientFunds = "insufficient_funds"
	DeclineInvalidToken      = "invalid_token"
	DeclineTokenUsed         = "token_already_used"
	// DeclineExpiredCard: the issuer says the card has expired (the buyer
	// needs another card, unlike a plain card_declined).
	DeclineExpiredCard = "expired_card"
)

// Charge is a processor charge.
type Charge struct {
	ID          string
	Status      string
	DeclineCode string
	Amount      int64
	// ActionURL is the processor's page for the buyer's challenge
	// (StatusRequiresAction), when it has one.
	ActionURL string
}

// Refund is a processor refund (card refunds settle at once here).
type Refund struct {
	ID     string
	Amount int64
}

// ErrConflict: an idempotency key reused with a different request.
var ErrConflict = errors.New("card: idempotency key reused with a different request")

// ErrNotFound: no charge under that idempotency key (Lookup).
var ErrNotFound = errors.New("card: no charge with that idempotency key")

// ErrRefundExceeds: refunds would exceed the charge.
var ErrRefundExceeds = errors.New("card: refunds exceed the charged amount")

// ErrCredentials: the processor refused the merchant's credentials (a
// wrong or revoked API key): a configuration error, never retried.
var ErrCredentials = errors.New("card: the processor refused the merchant's credentials")

// TokenHash hashes a token for single-use checks and logs.
func TokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// JWS is a parsed, not yet verified, compact JWS.
type JWS struct {
	Header       Header
	Payload      []byte
	signingInput []byte
	signature    []byte
}

// Header is the protected header.
type Header struct {
	Alg  string `json:"alg"`
	Kid  string `json:"kid"`
	Typ  string `json:"typ,omitempty"`
	Crit any    `json:"crit,omitempty"`
	B64  any    `json:"b64,omitempty"`
	JWK  any    `json:"jwk,omitempty"`
	JKU  any    `json:"jku,omitempty"`
	X5U  any    `json:"x5u,omitempty"`
	X5C  any    `json:"x5c,omitempty"`
}

// LooksLikeJWS reports whether s has the compact serialisation's shape.
func LooksLikeJWS(s string) bool {
	return strings.Count(s, ".") == 2 && !strings.ContainsAny(s, " \t\r\n=+/")
}

var b64 = base64.RawURLEncoding.Strict()

// ParseJWS splits and decodes a compact JWS and checks its header: alg
// ES256 only, a kid, and none of the members that would let the token pick
// its own key or change how it is verified (jwk, jku, x5u, x5c, crit, b64).
func ParseJWS(s string) (*JWS, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a compact JWS")
	}
	hb, err1 := b64.DecodeString(parts[0])
	pb, err2 := b64.DecodeString(parts[1])
	sig, err3 := b64.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, errors.New("JWS parts are not base64url")
	}
	var h Header
	if err := json.Unmarshal(hb, &h); err != nil {
		return nil, fmt.Errorf("JWS header: %w", err)
	}
	if h.Alg != "ES256" {
		return nil, fmt.Errorf("JWS alg %q is not accepted (ES256 only)", h.Alg)
	}
	if h.Kid == "" {
		return nil, errors.New("JWS header has no kid")
	}
	if h.Crit != nil || h.B64 != nil || h.JWK != nil || h.JKU != nil || h.X5U != nil || h.X5C != nil {
		return nil, errors.New("JWS header carries crit, b64 or an embedded key reference")
	}
	return &JWS{Header: h, Payload: pb, signingInput: []byte(parts[0] + "." + parts[1]), signature: sig}, nil
}

// Verify checks the ES256 signature (raw 64-byte r‖s) with pub.
func (j *JWS) Verify(pub *ecdsa.PublicKey) error {
	if pub == nil || pub.Curve == nil || pub.Curve.Params().Name != "P-256" {
		return errors.New("key is not a P-256 key")
	}
	if len(j.signature) != 64 {
		return errors.New("ES256 signature must be 64 bytes (r‖s)")
	}
	d := sha256.Sum256(j.signingInput)
	r, s := new(big.Int).SetBytes(j.signature[:32]), new(big.Int).SetBytes(j.signature[32:])
	if !ecdsa.Verify(pub, d[:], r, s) {
		return errors.New("signature does not verify")
	}
	return nil
}

// Claims are the delegated token's claims we use.
type Claims struct {
	Iss        string   `json:"iss"`
	Aud        Audience `json:"aud"`
	Exp        *int64   `json:"exp"`
	Nbf        *int64   `json:"nbf"`
	Iat        *int64   `json:"iat"`
	Jti        string   `json:"jti"`
	CheckoutID string   `json:"checkout_id"`
	// MaxAmount is the allowance in centavos (an integer).
	MaxAmount *int64 `json:"max_amount"`
	Currency  string `json:"currency"`
	// Card display, when the platform tells it.
	Brand      string `json:"brand"`
	LastDigits string `json:"last_digits"`
	// Scenario forces a sandbox processor outcome.
	Scenario string `json:"scenario"`
	// Token is an optional processor token wrapped by the JWS.
	Token string `json:"token"`
}

// Audience is "aud": a string or an array of strings (RFC 7519 §4.1.3).
type Audience []string

// UnmarshalJSON accepts both forms.
func (a *Audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = Audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud must be a string or an array of strings")
	}
	*a = many
	return nil
}

// ParseClaims decodes the payload. Numbers must be integers (a fractional
// max_amount or exp is rejected, never rounded).
func ParseClaims(payload []byte) (Claims, error) {
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Claims{}, fmt.Errorf("JWS claims: %w", err)
	}
	return c, nil
}
