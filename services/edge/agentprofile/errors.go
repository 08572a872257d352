package agentprofile

import "net/http"

// Error codes (digest §9). All are protocol errors: REST status per
// HTTPStatus, JSON-RPC error apperr.RPCDiscovery (-32001) with data.code =
// Code.
// capabilities_incompatible is not among them: it is a business outcome
// (Result.Incompatible), answered with a UCP error body, not a protocol error.
const (
	CodeInvalidProfileURL  = "invalid_profile_url"
	CodeProfileUnreachable = "profile_unreachable"
	CodeProfileMalformed   = "profile_malformed"
	CodeVersionUnsupported = "version_unsupported"
)

// Error is a profile resolution or negotiation failure. Message is safe to
// return to the agent: it never holds more than a short, quoted excerpt of
// what the agent's server sent, and no detail of our own network; Err keeps
// the underlying cause for logs.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// HTTPStatus is the REST status for the code (digest §9).
func (e *Error) HTTPStatus() int {
	switch e.Code {
	case CodeInvalidProfileURL:
		return http.StatusBadRequest
	case CodeProfileUnreachable:
		return http.StatusFailedDependency
	case CodeProfileMalformed, CodeVersionUnsupported:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}
