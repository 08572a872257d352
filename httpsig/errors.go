package httpsig

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the verifier reports about a message wraps
// exactly one of them, so the edge can map it to a protocol code with
// errors.Is (signature_missing, signature_invalid, key_not_found,
// digest_mismatch, algorithm_unsupported; ErrMalformed is an unparsable
// signature or digest field, which UCP reports as signature_invalid or a
// 400). Configuration errors and resolver errors that carry no sentinel
// (for example a profile fetch failure) wrap none of them.
var (
	// ErrSignatureMissing: the message carries no (applicable) signature.
	ErrSignatureMissing = errors.New("httpsig: signature missing")
	// ErrSignatureInvalid: a signature is present but does not verify, does
	// not cover the required components, or is outside its validity window.
	ErrSignatureInvalid = errors.New("httpsig: signature invalid")
	// ErrKeyNotFound: the keyid is absent or names no known signing key.
	ErrKeyNotFound = errors.New("httpsig: key not found")
	// ErrDigestMismatch: the Content-Digest does not match the body bytes.
	ErrDigestMismatch = errors.New("httpsig: content digest mismatch")
	// ErrAlgorithmUnsupported: the key type, curve or algorithm is not
	// supported or not allowed by the verifier.
	ErrAlgorithmUnsupported = errors.New("httpsig: algorithm unsupported")
	// ErrMalformed: a Signature-Input, Signature or Content-Digest field, a
	// component identifier or a JWK cannot be parsed or breaks a syntax rule.
	ErrMalformed = errors.New("httpsig: malformed input")
)

// ErrComponentMissing reports a covered component that the message does not
// have. While verifying it always comes together with ErrSignatureInvalid.
var ErrComponentMissing = errors.New("httpsig: covered component not present in message")

// Error carries a sentinel (Kind) plus context. errors.Is matches both Kind
// and the wrapped cause.
type Error struct {
	Kind   error  // one of the sentinels above
	Label  string // signature label, when the error concerns one signature
	Detail string // human-readable explanation; never contains key material
	Err    error  // underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	} else {
		b.WriteString("httpsig: error")
	}
	if e.Label != "" {
		fmt.Fprintf(&b, " (label %q)", e.Label)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes both the sentinel and the cause to errors.Is / errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

func wrapError(kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...), Err: cause}
}

// withLabel attaches a signature label to err without losing its identity.
func withLabel(err error, label string) error {
	var e *Error
	if errors.As(err, &e) && e.Label == "" {
		c := *e
		c.Label = label
		return &c
	}
	return err
}

// asKind re-labels err with kind unless it already carries one of the
// protocol sentinels (which take precedence because they are more specific).
func asKind(err error, kind error) error {
	if isProtocolError(err) {
		return err
	}
	return &Error{Kind: kind, Err: err}
}

// isProtocolError reports whether err already carries a protocol sentinel.
func isProtocolError(err error) bool {
	for _, s := range []error{ErrSignatureMissing, ErrSignatureInvalid, ErrKeyNotFound, ErrDigestMismatch, ErrAlgorithmUnsupported, ErrMalformed} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
