package agentauth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// # REST mode
//
// The REST binding (/bcp/rest) runs the same checks as the MCP endpoint:
// the tenant policy, API keys, RFC 9421 signatures over the same closed set
// of components, profile binding and Content-Digest. What differs is where
// the request names its agent and operation, and how a failure is written:
//
//   - the agent profile comes only from BCP-Agent (or UCP-Agent); there is
//     no meta;
//   - the operation is the one Options.Operations routes the method and
//     path to, so SignResponses signs the responses of the signed ones
//     (POST …/checkout-sessions/{id}/complete) and every response when the
//     tenant signs all;
//   - no request is public: every REST request needs credentials;
//   - failures are the flat REST error body {"code": …, "content": …} with
//     the same HTTP status and challenge headers as over MCP.

type restKey struct{}

// RESTHandler is Handler for the REST binding: authenticate every request
// (credentials always required), then sign the responses that must be
// signed; failures are written as flat REST errors.
func (a *Authenticator) RESTHandler(next http.Handler) http.Handler {
	h := a.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), restKey{}, true)))
	})
}

func isREST(ctx context.Context) bool {
	v, _ := ctx.Value(restKey{}).(bool)
	return v
}

// restMiddleware authenticates a REST request. The request is described to
// the rest of the package as one tools/call of the equivalent tool, without
// meta (the profile comes from the headers only).
func (a *Authenticator) restMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, f := readBody(r, a.opts.MaxBodyBytes)
		if f != nil {
			WriteRESTFailure(w, f)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		ar := &authRequest{rpc: a.restRequest(r)}
		ctx := context.WithValue(r.Context(), requestKey{}, ar)
		p, f := a.authenticate(ctx, r, body, ar.rpc)
		if f != nil {
			a.log.DebugContext(ctx, "agent authentication failed", "code", f.Code, "status", f.Status, "detail", f.Content, "binding", "rest")
			WriteRESTFailure(w, f)
			return
		}
		ar.principal = p
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (a *Authenticator) restRequest(r *http.Request) rpcRequest {
	op := a.ops.restTool(r.Method, r.URL.Path)
	if op == "" {
		return rpcRequest{}
	}
	return rpcRequest{messages: []rpcMessage{{method: "tools/call", tool: op}}, valid: true}
}

// WriteRESTFailure writes f as a REST protocol error: its HTTP status, the
// challenge headers, and the flat body {"code": …, "content": …}.
func WriteRESTFailure(w http.ResponseWriter, f *Failure) {
	failureHeaders(w.Header(), f)
	body, _ := json.Marshal(rpcErrorData{Code: f.Code, Content: f.Content, Paths: f.Paths})
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(f.Status)
	_, _ = w.Write(body)
}

// ParseAgentHeader reads profile="<url>" from BCP-Agent/UCP-Agent field
// values (an RFC 8941 dictionary), as authentication does.
func ParseAgentHeader(values []string) (string, error) { return parseAgentHeader(values) }
