package httpsig

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// DefaultClockSkew is the tolerance applied to created and expires when
// Verifier.ClockSkew is zero.
const DefaultClockSkew = time.Minute

// Verifier checks RFC 9421 signatures against a key resolver and a policy.
// Its fields are only read, so one Verifier may be shared across goroutines.
type Verifier struct {
	// Keys resolves keyids; required.
	Keys KeyResolver
	// Algorithms allowed; nil allows every supported one (ES256, ES384,
	// EdDSA).
	Algorithms []Algorithm
	// Requirements a signature must meet to be accepted; see
	// RequestRequirements and ResponseRequirements.
	Requirements []Requirement
	// Label, when set, restricts verification to that signature label.
	Label string
	// Tag, when set, only considers signatures whose tag parameter equals it.
	Tag string

	// RequireCreated, RequireExpires and RequireNonce make those
	// parameters mandatory (RFC 9421 §3.2.1: which parameters a signature
	// must carry is the application's call). A nonce must not be empty;
	// whether it was seen before is the caller's check (Result.Nonce).
	RequireCreated bool
	RequireExpires bool
	RequireNonce   bool
	// MaxAge, when positive, rejects signatures created longer ago (plus
	// ClockSkew): the window within which a signature is accepted.
	MaxAge time.Duration
	// ClockSkew tolerates clock differences when checking created (not in
	// the future) and expires (not in the past). Zero means
	// DefaultClockSkew; a negative value means no tolerance.
	ClockSkew time.Duration
	// RejectAlgParameter rejects signatures that carry an alg parameter,
	// as UCP requires (the algorithm comes from the key only).
	RejectAlgParameter bool
	// KeyIDIsThumbprint requires keyid to equal the RFC 7638 thumbprint of
	// the resolved key, as Web Bot Auth signatures do.
	KeyIDIsThumbprint bool

	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Scheme, when set, replaces the scheme the request arrived with when
	// deriving @scheme, @target-uri and the default port of @authority
	// (for a server behind a TLS-terminating proxy).
	Scheme string
}

// Result describes the signature that verified.
type Result struct {
	Label      string
	KeyID      string
	Algorithm  Algorithm
	Components []string  // covered component identifiers, in order
	Created    time.Time // zero when absent
	Expires    time.Time // zero when absent
	Nonce      string
	Tag        string
	Key        PublicKey
}

// VerifyRequest verifies the signatures on r; body must be the raw request
// body bytes as received (the caller reads r.Body). The request is accepted
// when at least one applicable signature verifies; otherwise the error of
// the first applicable signature, in Signature-Input order, is returned.
//
// A Content-Digest field, covered or not, is always recomputed over body;
// a mismatch fails with ErrDigestMismatch.
func (v *Verifier) VerifyRequest(ctx context.Context, r *http.Request, body []byte) (*Result, error) {
	m, err := requestMessage(r, v.Scheme)
	if err != nil {
		return nil, err
	}
	return v.verify(ctx, m, MessageInfo{Request: r, Header: r.Header, Body: body}, body)
}

// VerifyResponse verifies a response with header h, status and raw body.
// req is the request the response answers; it is needed for components with
// the req parameter and by RequireIfQuery-style conditions.
func (v *Verifier) VerifyResponse(ctx context.Context, h http.Header, status int, body []byte, req *http.Request) (*Result, error) {
	if status <= 0 {
		return nil, errorf(ErrMalformed, "response status %d", status)
	}
	m, err := responseWithRequest(h, status, req, v.Scheme)
	if err != nil {
		return nil, err
	}
	return v.verify(ctx, m, MessageInfo{Request: req, Header: h, Status: status, Body: body}, body)
}

func (v *Verifier) verify(ctx context.Context, m *message, mi MessageInfo, body []byte) (*Result, error) {
	if v.Keys == nil {
		return nil, errors.New("httpsig: Verifier.Keys is nil")
	}
	required, err := v.required(mi)
	if err != nil {
		return nil, err
	}
	inputs, values := m.header.Values(SignatureInputHeader), m.header.Values(SignatureHeader)
	if len(inputs) == 0 || len(values) == 0 {
		return nil, errorf(ErrSignatureMissing, "no Signature-Input and Signature fields")
	}
	params, err := ParseSignatureInput(inputs)
	if err != nil {
		return nil, err
	}
	sigs, err := ParseSignature(values)
	if err != nil {
		return nil, err
	}

	// The digest does not depend on the signature: check it at most once.
	var (
		digestDone bool
		digestErr  error
	)
	checkDigest := func() error {
		if !digestDone {
			digestDone = true
			if cd := m.header.Values(ContentDigestHeader); len(cd) > 0 {
				digestErr = VerifyContentDigest(cd, body)
			}
		}
		return digestErr
	}

	var first error
	for _, p := range params {
		if (v.Label != "" && p.Label != v.Label) || (v.Tag != "" && p.Tag != v.Tag) {
			continue
		}
		res, err := v.verifyOne(ctx, m, p, sigs, required, checkDigest)
		if err == nil {
			return res, nil
		}
		if first == nil {
			first = withLabel(err, p.Label)
		}
	}
	if first == nil {
		return nil, errorf(ErrSignatureMissing, "no signature with label %q and tag %q", v.Label, v.Tag)
	}
	return nil, first
}

// verifyOne follows the UCP verification order: key by keyid, algorithm,
// coverage, validity window, digest, signature base, signature.
func (v *Verifier) verifyOne(ctx context.Context, m *message, p SignatureParams, sigs map[string][]byte, required []component, checkDigest func() error) (*Result, error) {
	sig, ok := sigs[p.Label]
	if !ok {
		return nil, errorf(ErrMalformed, "Signature-Input member has no Signature member")
	}
	if !p.has("keyid") || p.KeyID == "" {
		return nil, errorf(ErrKeyNotFound, "signature has no keyid parameter")
	}
	var declared Algorithm
	if p.has("alg") {
		if v.RejectAlgParameter {
			return nil, errorf(ErrSignatureInvalid, "the alg parameter is not allowed; the algorithm comes from the key")
		}
		var err error
		if declared, err = AlgorithmFromHTTPSig(p.Alg); err != nil {
			return nil, err
		}
	}

	key, err := v.Keys(ctx, p.KeyID)
	if err != nil {
		if isProtocolError(err) {
			return nil, err
		}
		return nil, fmt.Errorf("httpsig: resolving keyid %q: %w", p.KeyID, err)
	}
	if key.KeyID != "" && key.KeyID != p.KeyID {
		return nil, errorf(ErrKeyNotFound, "resolver returned key %q for keyid %q", key.KeyID, p.KeyID)
	}
	alg, err := algorithmOf(key.Key)
	if err != nil || (key.Algorithm != "" && key.Algorithm != alg) {
		return nil, errorf(ErrAlgorithmUnsupported, "keyid %q resolves to an unusable key", p.KeyID)
	}
	if v.Algorithms != nil && !slices.Contains(v.Algorithms, alg) {
		return nil, errorf(ErrAlgorithmUnsupported, "algorithm %s is not allowed", alg)
	}
	if declared != "" && declared != alg {
		return nil, errorf(ErrSignatureInvalid, "alg parameter %q does not match the %s key", p.Alg, alg)
	}
	if v.KeyIDIsThumbprint {
		j, err := PublicJWK(key.Key, "-")
		if err != nil {
			return nil, err
		}
		if tp, err := Thumbprint(j); err != nil || tp != p.KeyID {
			return nil, errorf(ErrSignatureInvalid, "keyid is not the JWK thumbprint of the key")
		}
	}

	for _, r := range required {
		if !slices.ContainsFunc(p.comps, func(c component) bool { return c.satisfies(r) }) {
			return nil, errorf(ErrSignatureInvalid, "required component %s is not covered", r.id)
		}
	}
	if err := v.checkTimes(p); err != nil {
		return nil, err
	}
	if err := checkDigest(); err != nil {
		return nil, err
	}

	base, err := buildBase(m, p)
	if err != nil {
		// The message cannot reproduce what was signed: the signature is
		// invalid for this message whatever the underlying reason.
		e := &Error{Kind: ErrSignatureInvalid, Detail: err.Error()}
		if errors.Is(err, ErrComponentMissing) {
			e.Err = ErrComponentMissing
		}
		return nil, e
	}
	if err := verify(key.Key, alg, base, sig); err != nil {
		return nil, err
	}
	return &Result{
		Label:      p.Label,
		KeyID:      p.KeyID,
		Algorithm:  alg,
		Components: slices.Clone(p.Components),
		Created:    p.Created,
		Expires:    p.Expires,
		Nonce:      p.Nonce,
		Tag:        p.Tag,
		Key:        PublicKey{KeyID: p.KeyID, Algorithm: alg, Key: key.Key},
	}, nil
}

func (v *Verifier) checkTimes(p SignatureParams) error {
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	skew := v.ClockSkew
	if skew == 0 {
		skew = DefaultClockSkew
	} else if skew < 0 {
		skew = 0
	}
	hasCreated, hasExpires := p.has("created"), p.has("expires")
	switch {
	case v.RequireCreated && !hasCreated:
		return errorf(ErrSignatureInvalid, "the created parameter is required")
	case v.RequireExpires && !hasExpires:
		return errorf(ErrSignatureInvalid, "the expires parameter is required")
	case v.RequireNonce && p.Nonce == "":
		return errorf(ErrSignatureInvalid, "the nonce parameter is required")
	case hasCreated && p.Created.After(now.Add(skew)):
		return errorf(ErrSignatureInvalid, "created is in the future, beyond the %s s of clock skew allowed", seconds(skew))
	case hasCreated && v.MaxAge > 0 && now.Sub(p.Created) > v.MaxAge+skew:
		return errorf(ErrSignatureInvalid, "created is older than the %s s window (%s s of clock skew allowed)", seconds(v.MaxAge), seconds(skew))
	case hasExpires && now.After(p.Expires.Add(skew)):
		return errorf(ErrSignatureInvalid, "the signature expired: expires is past, beyond the %s s of clock skew allowed", seconds(skew))
	case hasCreated && hasExpires && p.Expires.Before(p.Created):
		return errorf(ErrSignatureInvalid, "expires is before created")
	}
	return nil
}

// seconds renders d in seconds for an error detail: "300", "0.5".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// required parses the components demanded by the requirements that apply.
func (v *Verifier) required(mi MessageInfo) ([]component, error) {
	var out []component
	for _, r := range v.Requirements {
		if r.When != nil && !r.When(mi) {
			continue
		}
		for _, s := range r.Components {
			c, err := parseComponentString(s)
			if err != nil {
				// A configuration error, not a property of the message.
				return nil, fmt.Errorf("httpsig: verifier requirement %q: %v", s, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// has reports whether a signature parameter is present.
func (p SignatureParams) has(name string) bool {
	if !p.parsed || p.inner.Params == nil {
		return false
	}
	_, ok := p.inner.Params.Get(name)
	return ok
}
