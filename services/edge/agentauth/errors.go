package agentauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/apperr"
)

// JSON-RPC error codes of the BCP binding (ucp-digest §9), as this
// package uses them; the numbers live in internal/apperr.
const (
	CodeProtocol       = apperr.RPCProtocol      // authentication, signatures, unavailable
	CodeDiscovery      = apperr.RPCDiscovery     // agent profile errors
	CodeInvalidRequest = apperr.RPCInvalid       // digest_mismatch, algorithm_unsupported, unreadable request
	CodeInvalidParams  = apperr.RPCInvalidParams // a NUL or invalid UTF-8 in the agent profile URL
	CodeInternal       = apperr.RPCInternal
)

// data.code values this package answers with.
const (
	// No credentials of a kind the tenant accepts.
	ErrCodeUnauthenticated = "unauthenticated"
	// The tenant requires a signature and the request carries none.
	ErrCodeSignatureMissing = "signature_missing"
	// A signature does not verify, misses a required component, is
	// outside its created/expires window, lacks created or nonce where the
	// merchant requires them, or carries a nonce already used (replay.go).
	ErrCodeSignatureInvalid = "signature_invalid"
	// The keyid names no signing key of the agent profile (after one
	// forced profile refresh).
	ErrCodeKeyNotFound = "key_not_found"
	// The API key is unknown in this tenant or revoked.
	ErrCodeInvalidAPIKey = "invalid_api_key"
	// The agent profiles named by BCP-Agent, UCP-Agent, meta["ucp-agent"]
	// and the API key's binding do not all agree (HTTP 403).
	ErrCodeProfileMismatch = "profile_mismatch"
	// Content-Digest does not match the body bytes (HTTP 400, -32600).
	ErrCodeDigestMismatch = "digest_mismatch"
	// The key type/curve or alg parameter is not supported (400, -32600).
	ErrCodeAlgorithmUnsupported = "algorithm_unsupported"
	// The agent profile URL is missing or malformed (400, -32001).
	ErrCodeInvalidProfileURL = "invalid_profile_url"
	// The body cannot be inspected (400, -32600) or is too large (413).
	ErrCodeInvalidRequest  = "invalid_request"
	ErrCodeRequestTooLarge = "request_too_large"
	// A dependency (tenant registry, profile host) failed (503, -32000).
	ErrCodeUnavailable = "unavailable"
	// The arguments are invalid where authentication reads them (400,
	// -32602, with Paths).
	ErrCodeInvalidParams = "invalid_params"
	ErrCodeInternal      = "internal_error"
)

// Failure is an authentication failure as written to the agent. It is
// exported so the edge can render the same body for its own paths (e.g. a
// REST binding) with WriteFailure.
type Failure struct {
	Status  int    // HTTP status
	RPCCode int    // JSON-RPC error.code
	Code    string // error.data.code
	Message string // error.message
	Content string // error.data.content: a safe, human-readable detail
	// Paths are the JSONPaths of invalid arguments (error.data.paths).
	Paths []string
	// Challenge adds WWW-Authenticate / Accept-Signature.
	Challenge challenge
	// acceptParams are the signature parameters Accept-Signature asks for
	// (";created", ";created;nonce"): the tenant's requirements.
	acceptParams string
}

type challenge int

const (
	challengeNone challenge = iota
	challengeAPIKey
	challengeSignature
	challengeBoth
)

func (f *Failure) Error() string { return f.Code + ": " + f.Content }

func fail(status, rpc int, code, message, content string) *Failure {
	return &Failure{Status: status, RPCCode: rpc, Code: code, Message: message, Content: content}
}

func authFailure(code, content string) *Failure {
	return fail(http.StatusUnauthorized, CodeProtocol, code, "authentication failed", content)
}

// acceptSignature tells a client which components a signature must cover
// (RFC 9421 §5.1).
const acceptSignature = `sig1=("@method" "@authority" "@path" "bcp-agent" "content-digest" "content-type")`

// WriteFailure writes f as a JSON-RPC error response answering id (null
// when unknown).
func WriteFailure(w http.ResponseWriter, id json.RawMessage, f *Failure) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	h := w.Header()
	failureHeaders(h, f)
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{Code: f.RPCCode, Message: f.Message, Data: rpcErrorData{Code: f.Code, Content: f.Content, Paths: f.Paths}}})
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(f.Status)
	_, _ = w.Write(body)
}

// failureHeaders sets the headers every failure carries, whatever the
// binding: JSON, no-store, the authentication challenges, Retry-After.
func failureHeaders(h http.Header, f *Failure) {
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	switch f.Challenge {
	case challengeAPIKey:
		h.Set("WWW-Authenticate", `Bearer realm="bcp"`)
	case challengeSignature:
		h.Set("Accept-Signature", acceptSignature+f.acceptParams)
	case challengeBoth:
		h.Set("WWW-Authenticate", `Bearer realm="bcp"`)
		h.Set("Accept-Signature", acceptSignature+f.acceptParams)
	}
	if f.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
}

type rpcError struct {
	Code    int          `json:"code"`
	Message string       `json:"message"`
	Data    rpcErrorData `json:"data"`
}

type rpcErrorData struct {
	Code    string   `json:"code"`
	Content string   `json:"content"`
	Paths   []string `json:"paths,omitempty"`
}

// ProfileError is how a KeySource reports that the agent profile cannot
// be used (fetch failed, malformed, URL refused). Code is a UCP code
// (invalid_profile_url, profile_unreachable, profile_malformed, ...) and
// Status its HTTP status; the agent gets JSON-RPC -32001 with that code.
// Message must be safe to show to the agent.
type ProfileError struct {
	Code    string
	Message string
	Status  int
	Err     error
}

func (e *ProfileError) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

func (e *ProfileError) Unwrap() error { return e.Err }

func profileFailure(pe *ProfileError) *Failure {
	status := pe.Status
	if status == 0 {
		switch pe.Code {
		case ErrCodeInvalidProfileURL:
			status = http.StatusBadRequest
		case "profile_unreachable":
			status = http.StatusFailedDependency
		default:
			status = http.StatusUnprocessableEntity
		}
	}
	msg := pe.Message
	if msg == "" {
		msg = "the agent profile cannot be used"
	}
	return fail(status, CodeDiscovery, pe.Code, "agent profile error", msg)
}

// signatureFailure maps a verification error to the protocol code
// (ucp-digest §9). The *httpsig.Error kind decides; errors our resolver
// wraps around a sentinel are matched with errors.Is.
func signatureFailure(err error) *Failure {
	var pe *ProfileError
	if errors.As(err, &pe) {
		return profileFailure(pe)
	}
	detail := err.Error()
	kind := err
	var he *httpsig.Error
	if errors.As(err, &he) {
		kind, detail = he.Kind, he.Detail
		if he.Label != "" {
			detail = "signature " + he.Label + ": " + detail
		}
	}
	switch {
	case errors.Is(kind, httpsig.ErrDigestMismatch):
		return fail(http.StatusBadRequest, CodeInvalidRequest, ErrCodeDigestMismatch, "content digest mismatch", detail)
	case errors.Is(kind, httpsig.ErrAlgorithmUnsupported):
		return fail(http.StatusBadRequest, CodeInvalidRequest, ErrCodeAlgorithmUnsupported, "signature algorithm unsupported", detail)
	case errors.Is(kind, httpsig.ErrKeyNotFound):
		return authFailure(ErrCodeKeyNotFound, detail)
	case errors.Is(kind, httpsig.ErrSignatureMissing):
		return authFailure(ErrCodeSignatureMissing, detail)
	case errors.Is(kind, httpsig.ErrSignatureInvalid), errors.Is(kind, httpsig.ErrMalformed):
		return authFailure(ErrCodeSignatureInvalid, detail)
	}
	return nil
}
