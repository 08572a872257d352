package apperr

import "net/http"

// Wire is how one kind of error reaches a caller outside the services:
// the HTTP status (REST, the hosted pages, the admin, and the transport
// status of an MCP protocol error), the JSON-RPC code of an MCP protocol
// error, and the data.code to show when the error's own code must not be
// (InternalCode: internal details never leave the platform).
type Wire struct {
	HTTPStatus int
	RPCCode    int
	Retry      bool // the caller may retry as is (Retry-After is sent with a 503)
}

// JSON-RPC codes of the BCP MCP binding (architecture §2).
const (
	RPCProtocol      = -32000 // auth, signature, rate limit, idempotency conflict, unavailable
	RPCDiscovery     = -32001 // profile, discovery, version
	RPCInvalidParams = -32602
	RPCInvalid       = -32600 // invalid request: a batch, not a request object, digest mismatch, unsupported algorithm
	RPCInternal      = -32603
	// The MCP transport's own (services/edge/transport.go).
	RPCParseError     = -32700 // the body is not JSON
	RPCMethodNotFound = -32601
)

// InternalCode is the data.code of an internal error.
const InternalCode = "internal_error"

// wires is the one table from a kind to its wire form. Every binding and
// page renders service errors through it (WireOf), so a kind means the
// same everywhere: a concurrent update (Aborted) is a 409 to retry, never
// a 503 on one path and a 500 on another.
var wires = map[Kind]Wire{
	KindInvalidArgument:    {HTTPStatus: http.StatusBadRequest, RPCCode: RPCInvalidParams},
	KindNotFound:           {HTTPStatus: http.StatusNotFound, RPCCode: RPCProtocol},
	KindAlreadyExists:      {HTTPStatus: http.StatusConflict, RPCCode: RPCProtocol},
	KindFailedPrecondition: {HTTPStatus: http.StatusConflict, RPCCode: RPCProtocol},
	KindAborted:            {HTTPStatus: http.StatusConflict, RPCCode: RPCProtocol, Retry: true},
	KindPermissionDenied:   {HTTPStatus: http.StatusForbidden, RPCCode: RPCProtocol},
	KindUnauthenticated:    {HTTPStatus: http.StatusUnauthorized, RPCCode: RPCProtocol},
	KindUnavailable:        {HTTPStatus: http.StatusServiceUnavailable, RPCCode: RPCProtocol, Retry: true},
	KindUnimplemented:      {HTTPStatus: http.StatusNotImplemented, RPCCode: RPCInternal},
	KindInternal:           {HTTPStatus: http.StatusInternalServerError, RPCCode: RPCInternal},
}

// WireOf classifies err and returns its wire form.
func WireOf(err error) (Wire, *Error) {
	e := As(err)
	w, ok := wires[e.Kind]
	if !ok {
		w = wires[KindInternal]
	}
	return w, e
}
