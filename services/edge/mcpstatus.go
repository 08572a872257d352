package edge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/bcpdev/bcp/services/edge/agentauth"
)

// The go-sdk answers every JSON-RPC error with HTTP 200. BCP wants the
// transport to say "retry later" too when the platform cannot serve the
// call: HTTP 503 (unavailable) or 429 (rate limited) with Retry-After, as
// REST answers and as authentication already does for MCP. A tool handler
// whose protocol error is one of those records its status in the request
// context; the response writer then sends it instead of the 200.

type rpcStatusKey struct{}

// rpcStatus is the HTTP status one MCP request's answer must carry (0: the
// SDK's own). Stateless MCP runs one tool call per request (batches are
// refused), so one slot suffices; the SDK writes the answer only after the
// handler returned.
type rpcStatus struct {
	status     int
	retryAfter string // the Retry-After value
}

// carriesHTTPStatus reports whether a protocol error's HTTP status is sent
// on MCP too.
func carriesHTTPStatus(status int) bool {
	return status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests
}

// noteRPCStatus records pe's status for the transport, when it is one MCP
// carries. request_in_flight keeps HTTP 200 (nothing was refused: the
// first request with the key is still running) but carries Retry-After,
// as on REST.
func noteRPCStatus(ctx context.Context, pe *protoError) {
	var s *rpcStatus
	ok := false
	if er := requestFrom(ctx); er != nil && er.statusOn {
		s, ok = &er.status, true
	} else {
		s, ok = ctx.Value(rpcStatusKey{}).(*rpcStatus)
	}
	switch {
	case !ok:
	case carriesHTTPStatus(pe.status):
		s.status, s.retryAfter = pe.status, pe.retryAfterHeader()
	case pe.code == codeRequestInFlight:
		s.retryAfter = pe.retryAfterHeader()
	}
}

// withRPCStatus gives the request a status slot and a writer honouring it.
func withRPCStatus(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	if er := requestFrom(r.Context()); er != nil && !er.statusOn {
		er.statusOn = true // the slot in the request's edgeRequest: no new context
		return &rpcStatusWriter{ResponseWriter: w, s: &er.status}, r
	}
	s := &rpcStatus{}
	return &rpcStatusWriter{ResponseWriter: w, s: s}, r.WithContext(context.WithValue(r.Context(), rpcStatusKey{}, s))
}

type rpcStatusWriter struct {
	http.ResponseWriter
	s     *rpcStatus
	wrote bool
}

func (w *rpcStatusWriter) WriteHeader(code int) {
	if code >= 200 && !w.wrote {
		w.wrote = true
		if code == http.StatusOK && w.s.status != 0 {
			code = w.s.status
		}
		if code == http.StatusOK || code == w.s.status {
			if w.s.retryAfter != "" {
				w.Header().Set("Retry-After", w.s.retryAfter)
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcStatusWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *rpcStatusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *rpcStatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isMCPPath reports whether a request is for the MCP endpoint, whose
// errors are JSON-RPC responses whatever layer writes them.
func isMCPPath(r *http.Request) bool { return strings.TrimRight(r.URL.Path, "/") == "/bcp/mcp" }

// writeMCPError answers an MCP request the edge refuses before the MCP
// handler (Host routing) as a JSON-RPC error answering the request's id
// (null when the body has none or is not JSON).
func writeMCPError(w http.ResponseWriter, r *http.Request, status int, rpcCode int, code, content string) {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxMCPBody))
		if err == nil {
			_ = json.Unmarshal(body, &msg)
		}
	}
	agentauth.WriteFailure(w, msg.ID, &agentauth.Failure{Status: status, RPCCode: rpcCode, Code: code, Message: content, Content: content})
}
