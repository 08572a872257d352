package agentauth

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/merchantsign"
	"github.com/bcpdev/bcp/internal/tenancy"
)

// RemoteSigner is merchantsign.Signer (the signer moved below the services,
// so the orders service can use it without importing the edge).
type RemoteSigner = merchantsign.Signer

// FormatAgentHeader renders a BCP-Agent value: profile="<url>".
func FormatAgentHeader(profileURL string) (string, error) {
	return merchantsign.FormatAgentHeader(profileURL)
}

// SignResponses signs, with the merchant's current key, the responses to
// tools/call requests for the operations that are always signed
// (Options.Operations: complete_checkout), and to any tool when the
// tenant's SignAllResponses is on. It buffers such a response (JSON
// bodies only: an SSE stream passes through unsigned), adds
// Content-Digest, Signature-Input and Signature, and sends it. When
// signing fails the response still goes out, unsigned, and the failure is
// logged: the order it confirms exists either way, and losing the response
// would only make the agent retry. Mount it behind Middleware, which
// already parsed the request; alone it parses the body itself.
func (a *Authenticator) SignResponses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rpc *rpcRequest
		if ar, ok := r.Context().Value(requestKey{}).(*authRequest); ok {
			rpc = &ar.rpc
		} else {
			body, f := readBody(r, a.opts.MaxBodyBytes)
			if f != nil {
				if isREST(r.Context()) {
					WriteRESTFailure(w, f)
				} else {
					WriteFailure(w, nil, f)
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			parsed, _ := parseRPC(body)
			if isREST(r.Context()) {
				parsed = a.restRequest(r)
			}
			rpc = &parsed
		}
		tid, err := tenancy.From(r.Context())
		if err != nil || !a.wantsSignature(r.Context(), tid, rpc) {
			next.ServeHTTP(w, r)
			return
		}
		bw := &bufferedResponse{w: w, status: http.StatusOK}
		next.ServeHTTP(bw, r)
		if bw.passthrough {
			return
		}
		h, body := w.Header(), bw.buf.Bytes()
		if len(body) > 0 && isJSON(h.Get("Content-Type")) {
			if kid, err := a.signer.SignResponse(r.Context(), tid, h, bw.status, body); err != nil {
				h.Del(httpsig.SignatureInputHeader)
				h.Del(httpsig.SignatureHeader)
				a.log.ErrorContext(r.Context(), "agentauth: response not signed", "tenant_id", tid, "err", err)
			} else {
				a.log.DebugContext(r.Context(), "response signed", "tenant_id", tid, "kid", kid)
			}
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(bw.status)
		_, _ = w.Write(body)
	})
}

func (a *Authenticator) wantsSignature(ctx context.Context, tid uuid.UUID, rpc *rpcRequest) bool {
	tools := rpc.toolCalls()
	if len(tools) == 0 {
		return false
	}
	for _, t := range tools {
		if a.ops.signed[t] {
			return true
		}
	}
	p, err := a.tenantPolicy(ctx, tid)
	if err != nil {
		a.log.WarnContext(ctx, "agentauth: policy lookup failed; response not signed", "tenant_id", tid, "err", err)
		return false
	}
	return p.SignAllResponses
}

func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true // what the MCP SDK and REST write: no parsing
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// bufferedResponse holds a JSON response until it is complete so it can be
// signed; anything else (an SSE stream) is switched to pass-through when
// its header is written.
type bufferedResponse struct {
	w           http.ResponseWriter
	status      int
	wrote       bool
	passthrough bool
	buf         bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.w.Header() }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.wrote {
		return
	}
	if code >= 100 && code < 200 {
		b.w.WriteHeader(code) // informational: not the response
		return
	}
	b.wrote, b.status = true, code
	if !isJSON(b.w.Header().Get("Content-Type")) {
		b.passthrough = true
		b.w.WriteHeader(code)
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if !b.wrote {
		if b.w.Header().Get("Content-Type") == "" {
			b.w.Header().Set("Content-Type", http.DetectContentType(p))
		}
		b.WriteHeader(http.StatusOK)
	}
	if b.passthrough {
		return b.w.Write(p)
	}
	return b.buf.Write(p)
}

// Flush forwards only in pass-through mode: a buffered response is sent
// whole, once signed.
func (b *bufferedResponse) Flush() {
	if b.passthrough {
		_ = http.NewResponseController(b.w).Flush()
	}
}
