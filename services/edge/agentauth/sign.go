package agentauth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// RemoteSigner signs HTTP messages with a merchant's current signing key.
// The key lives in the tenants service (SignWithCurrentKey); this side
// builds the RFC 9421 signature base and writes the fields. The keyid is
// the key's JWK kid as published in the merchant's /.well-known/bcp
// signing_keys, so agents verify with nothing but that profile.
type RemoteSigner struct {
	Tenants tenantsv1connect.TenantServiceClient
	// Now gives the created parameter (default time.Now).
	Now func() time.Time
	// Label defaults to httpsig.DefaultLabel ("sig1").
	Label string
}

func (s *RemoteSigner) label() string {
	if s.Label != "" {
		return s.Label
	}
	return httpsig.DefaultLabel
}

func (s *RemoteSigner) created() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// SignResponse signs a response whose header is h (before WriteHeader),
// with status and body: Content-Digest (sha-256 over body) is set and the
// signature covers @status, content-digest and content-type (the latter
// two when there is a body), with created and keyid. It returns the kid.
func (s *RemoteSigner) SignResponse(ctx context.Context, tenantID uuid.UUID, h http.Header, status int, body []byte) (string, error) {
	comps := []string{"@status"}
	if len(body) > 0 {
		if h.Get("Content-Type") == "" {
			return "", errors.New("agentauth: a signed response needs a Content-Type")
		}
		h.Set(httpsig.ContentDigestHeader, httpsig.ContentDigest(body))
		comps = append(comps, "content-digest", "content-type")
	}
	p := httpsig.SignatureParams{Label: s.label(), Components: comps, Created: s.created()}
	base, err := httpsig.ResponseSignatureBase(h, status, nil, p)
	if err != nil {
		return "", err
	}
	return s.sign(ctx, tenantID, base, h)
}

// SignRequest signs an outgoing request with the merchant key (order
// webhooks). body must be the exact bytes that will be sent. Covered:
// @method @authority @path (@query when there is one), content-digest and
// content-type when there is a body (Content-Digest is set, Content-Type
// defaults to application/json), and bcp-agent, idempotency-key,
// webhook-id and webhook-timestamp when the request carries them.
func (s *RemoteSigner) SignRequest(ctx context.Context, tenantID uuid.UUID, r *http.Request, body []byte) (string, error) {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	comps := []string{"@method", "@authority", "@path"}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		comps = append(comps, "@query")
	}
	if len(body) > 0 {
		if r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Header.Set(httpsig.ContentDigestHeader, httpsig.ContentDigest(body))
		comps = append(comps, "content-digest", "content-type")
	}
	for _, f := range []string{"bcp-agent", "idempotency-key", "webhook-id", "webhook-timestamp"} {
		if len(r.Header.Values(f)) > 0 {
			comps = append(comps, f)
		}
	}
	p := httpsig.SignatureParams{Label: s.label(), Components: comps, Created: s.created()}
	base, err := httpsig.RequestSignatureBase(r, p)
	if err != nil {
		return "", err
	}
	return s.sign(ctx, tenantID, base, r.Header)
}

// SignWebhook prepares and signs an order webhook from the merchant:
// Content-Type application/json, BCP-Agent naming the merchant's own
// profile (https://{merchant-host}/.well-known/bcp, whose signing_keys
// verify the signature), then SignRequest. The orders service calls it
// with the request it is about to send.
func (s *RemoteSigner) SignWebhook(ctx context.Context, tenantID uuid.UUID, r *http.Request, body []byte, businessProfileURL string) (string, error) {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("Content-Type", "application/json")
	if businessProfileURL != "" {
		v, err := FormatAgentHeader(businessProfileURL)
		if err != nil {
			return "", err
		}
		r.Header.Set("BCP-Agent", v)
	}
	return s.SignRequest(ctx, tenantID, r, body)
}

// sign sends the component lines and the parameters to the tenants
// service, which picks the key, adds its keyid and signs; then it writes
// Signature-Input and Signature into h.
func (s *RemoteSigner) sign(ctx context.Context, tenantID uuid.UUID, base []byte, h http.Header) (string, error) {
	i := bytes.LastIndexByte(base, '\n')
	params, ok := strings.CutPrefix(string(base[i+1:]), `"@signature-params": `)
	if i < 0 || !ok {
		return "", errors.New("agentauth: unexpected signature base shape")
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := s.Tenants.SignWithCurrentKey(ctx, connect.NewRequest(&tenantsv1.SignWithCurrentKeyRequest{
		TenantId: tenantID.String(), SignatureBase: base[:i+1], SignatureParams: params,
	}))
	if err != nil {
		return "", err
	}
	sig, err := httpsig.FormatSignature(s.label(), resp.Msg.GetSignature())
	if err != nil {
		return "", err
	}
	h.Set(httpsig.SignatureInputHeader, s.label()+"="+resp.Msg.GetSignatureParams())
	h.Set(httpsig.SignatureHeader, sig)
	return resp.Msg.GetKid(), nil
}

// FormatAgentHeader renders a BCP-Agent value: profile="<url>".
func FormatAgentHeader(profileURL string) (string, error) {
	if strings.ContainsAny(profileURL, "\"\\") {
		return "", errors.New("agentauth: profile URL cannot contain quotes or backslashes")
	}
	for _, c := range []byte(profileURL) {
		if c < 0x20 || c > 0x7e {
			return "", errors.New("agentauth: profile URL must be printable ASCII")
		}
	}
	return `profile="` + profileURL + `"`, nil
}

// SignResponses signs, with the merchant's current key, the responses to
// tools/call requests for complete_checkout, and to any tool when the
// tenant's SignAllResponses is on. It buffers such a response (JSON
// bodies only: an SSE stream passes through unsigned), adds
// Content-Digest, Signature-Input and Signature, and sends it. When
// signing fails the response still goes out, unsigned, and the failure is
// logged: the order it confirms exists either way, and losing the response
// would only make the agent retry. Mount it behind Middleware, which
// already parsed the request; alone it parses the body itself.
func (a *Authenticator) SignResponses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rpc, ok := r.Context().Value(requestKey{}).(*rpcRequest)
		if !ok {
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
				parsed = restRequest(r)
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
		if t == "complete_checkout" {
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
