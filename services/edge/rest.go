package edge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/bcpdev/bcp/internal/jsonmembers"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

// restEdge serves the BCP shopping service over REST at /bcp/rest: one
// route per operation (operations.go). Each handler turns the request into
// the tool arguments {meta, id, checkout} and runs them through the same
// executor as MCP; only the envelope differs: the payload is the body,
// business outcomes are 200 (201 for a created checkout or cart), protocol
// errors are HTTP statuses with a flat body.
type restEdge struct {
	m   *mcpEdge
	mux *http.ServeMux
	// routes are the operations' mux patterns, methods their methods.
	routes  map[string]bool
	methods []string
}

// restBase is where the REST binding is mounted on every merchant host.
const restBase = "/bcp/rest"

func newRESTEdge(m *mcpEdge) *restEdge {
	r := &restEdge{m: m, mux: http.NewServeMux(), routes: map[string]bool{}}
	for i := range operations {
		op := &operations[i]
		pattern := op.method + " " + restBase + op.path
		r.mux.Handle(pattern, r.handler(op))
		r.routes[pattern] = true
		if !slices.Contains(r.methods, op.method) {
			r.methods = append(r.methods, op.method)
		}
	}
	r.mux.HandleFunc(restBase+"/", func(w http.ResponseWriter, req *http.Request) {
		if r.routedOtherwise(req) {
			newProtoError(http.StatusMethodNotAllowed, codeProtocol, "method_not_allowed", "this method is not allowed on "+req.URL.Path).writeREST(w)
			return
		}
		newProtoError(http.StatusNotFound, codeProtocol, "not_found", "no such BCP REST operation").writeREST(w)
	})
	return r
}

func (r *restEdge) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.mux.ServeHTTP(w, req) }

// routedOtherwise reports whether req's path is an operation's route with
// another method.
func (r *restEdge) routedOtherwise(req *http.Request) bool {
	for _, method := range r.methods {
		if method == req.Method {
			continue
		}
		if _, pattern := r.mux.Handler(&http.Request{Method: method, URL: req.URL, Host: req.Host}); r.routes[pattern] {
			return true
		}
	}
	return false
}

// handler serves one operation.
func (r *restEdge) handler(op *operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				r.m.log.ErrorContext(req.Context(), "edge: panic in REST handler", "op", op.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				errInternal.writeREST(w)
			}
		}()
		args, perr := op.family.restArgs(req, op)
		if perr != nil {
			perr.writeREST(w)
			return
		}
		out, err := r.m.run(req.Context(), opRequest{binding: bindingREST, op: op, args: args})
		if err != nil {
			asProtoError(err).writeREST(w)
			return
		}
		status := http.StatusOK
		if op.op == bcpschema.OpCreate && !isErrorPayload(out) {
			status = http.StatusCreated
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_, _ = w.Write(out)
	})
}

// restArgs assembles the tool arguments of a checkout or cart operation
// from the request: meta from BCP-Agent (or UCP-Agent) and
// Idempotency-Key, id from the path, the payload (checkout or cart) from
// the body bytes as sent (so idempotency hashes cover the raw body).
func restArgs(req *http.Request, op *operation) (json.RawMessage, *protoError) {
	member := op.tool().Payload()
	profile, perr := restProfile(req.Header)
	if perr != nil {
		return nil, perr
	}
	meta := map[string]any{"ucp-agent": map[string]string{"profile": profile}}
	// Reads change nothing: a key sent with one is not recorded.
	if keys := req.Header.Values("Idempotency-Key"); len(keys) > 0 && req.Method != http.MethodGet {
		if len(keys) > 1 {
			return nil, newProtoError(http.StatusBadRequest, codeInvalidParams, "invalid_params", "send one Idempotency-Key")
		}
		meta["idempotency-key"] = strings.TrimSpace(keys[0])
	}
	if op.requireKey && meta["idempotency-key"] == nil {
		return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidParams, code: "invalid_params",
			content:    "the Idempotency-Key header is required for " + op.name,
			violations: []violation{{Path: "$.meta['idempotency-key']", Message: "Idempotency-Key header is required"}}}
	}
	var b bytes.Buffer
	b.WriteString(`{"meta":`)
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, errInternal
	}
	b.Write(mj)
	if id := req.PathValue("id"); id != "" {
		b.WriteString(`,"id":`)
		writeRawString(&b, id)
	}
	if member != "" {
		body, err := io.ReadAll(io.LimitReader(req.Body, maxMCPBody+1))
		if err != nil || len(body) > maxMCPBody {
			return nil, newProtoError(http.StatusBadRequest, codeInvalidParams, "invalid_params", "the request body could not be read")
		}
		body = bytes.TrimSpace(body)
		if len(body) == 0 || !json.Valid(body) {
			return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidParams, code: "invalid_params",
				content: "the body must be the " + member + " as a JSON object", violations: []violation{{Path: "$." + member, Message: "not a JSON object"}}}
		}
		// A body the input guard refuses goes to it as sent, so that it
		// names what it found there (dropBodyID re-encodes the body, and
		// encoding/json would make invalid UTF-8 in member names valid).
		if bcpschema.CheckInput(body) == nil {
			var perr *protoError
			if body, perr = dropBodyID(body, req.PathValue("id"), member); perr != nil {
				return nil, perr
			}
		}
		b.WriteString(`,"` + member + `":`)
		b.Write(body)
	}
	b.WriteByte('}')
	return json.RawMessage(b.Bytes()), nil
}

// writeRawString writes s as a JSON string with its bytes as they are:
// unlike json.Marshal, invalid UTF-8 is kept (not turned into U+FFFD) for
// the input guard to refuse at its path.
func writeRawString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// dropBodyID removes the checkout's own "id" from a REST body. The
// upstream REST binding declares the checkout object as the body, so
// clients send back what they received, id included; the MCP tools forbid
// checkout.id because they name the checkout in their own id argument,
// and here the URL does. On create there is no checkout yet: the id is
// ignored. On update and complete an id equal to the URL's is ignored; a
// different one is refused (400 at $.checkout.id) rather than ignored: it
// means the body was meant for another checkout, and applying it to the
// URL's would replace that checkout's items with another's. Other
// response-only members (status, totals, messages, links, ucp,
// continue_url, ...) pass through: the schema allows them and the checkout
// service builds the session from the request members only, as it does
// for MCP.
func dropBodyID(body []byte, pathID, member string) ([]byte, *protoError) {
	if !bytes.Contains(body, []byte(`"id"`)) {
		return body, nil // fast path: no member named id anywhere
	}
	members, err := jsonmembers.Of(body)
	if err != nil {
		return body, nil //nolint:nilerr // not an object, or repeats a member: the schema reports it
	}
	raw, ok := members["id"]
	if !ok {
		return body, nil
	}
	if pathID != "" {
		var id string
		if json.Unmarshal(raw, &id) != nil || id != pathID {
			return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidParams, code: "invalid_params",
				content:    "the body's id differs from the " + member + " id in the URL",
				violations: []violation{{Path: "$." + member + ".id", Message: "must be " + strconv.Quote(pathID) + ", the " + member + " id in the URL, or be left out"}}}
		}
	}
	delete(members, "id")
	out, err := json.Marshal(members)
	if err != nil {
		return nil, errInternal
	}
	return out, nil
}

// restProfile reads the agent profile URL from BCP-Agent or its alias
// UCP-Agent (authentication already checked that they agree). REST
// requires it: there is no other place to name the agent.
func restProfile(h http.Header) (string, *protoError) {
	// By canonical key (another spelling allocates the canonical one) and
	// name.
	for _, f := range [...]struct{ key, name string }{{"Bcp-Agent", "BCP-Agent"}, {"Ucp-Agent", "UCP-Agent"}} {
		name := f.name
		if vals := h[f.key]; len(vals) > 0 {
			p, err := agentauth.ParseAgentHeader(vals)
			if err != nil {
				return "", newProtoError(http.StatusBadRequest, codeDiscovery, "invalid_profile_url", name+` must be a structured-field dictionary with profile="<url>"`)
			}
			return p, nil
		}
	}
	return "", newProtoError(http.StatusBadRequest, codeDiscovery, "invalid_profile_url", `the BCP-Agent header (profile="<url>") is required`)
}

// isErrorPayload reports whether a payload is an error_response (no
// resource: "ucp".status is "error").
func isErrorPayload(out json.RawMessage) bool {
	var p struct {
		UCP struct {
			Status string `json:"status"`
		} `json:"ucp"`
	}
	return json.Unmarshal(out, &p) == nil && p.UCP.Status == "error"
}
