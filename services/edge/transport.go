package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

// The MCP transport's errors, from one place.
//
// Whatever is wrong with an MCP request before a method runs is answered
// here as a JSON-RPC error with the HTTP status that says the same (the
// MCP SDK answers these in plain text): a body that is not JSON -32700
// (400); a batch, an empty batch or anything but one JSON-RPC 2.0 request
// object -32600 (400; MCP 2025-06-18 removed batching, and one message per
// POST is what the edge authenticates, rate-limits and counts); a method
// /bcp/mcp does not serve -32601 (404, as the SDK answers it from
// protocol 2026-07-28 on); a request without the params its method needs
// -32602 (400); a Content-Type other than application/json -32600 (415);
// an Accept without application/json and text/event-stream -32600 (406);
// any method but POST -32600 (405, Allow: POST). checkTransport runs first
// in mcpEdge.ServeHTTP, behind authentication (which reads the body once
// and answers its own failures as JSON-RPC errors); whatever the SDK still
// answers in plain text is rewritten as a JSON-RPC error too
// (transportWriter), so no plain-text answer leaves /bcp/mcp.

// mcpMethod is how the transport accepts one method.
type mcpMethod struct {
	notification bool // sent without an id
	params       bool // params are required
}

// mcpMethods are the methods the MCP SDK serves (its serverMethodInfos,
// go-sdk v1.8.0), with the same rules; anything else is -32601. The
// server declares the tools capability only, and the SDK answers the
// others as it always did (empty lists, its own JSON-RPC errors).
var mcpMethods = map[string]mcpMethod{
	"initialize":                       {params: true},
	"ping":                             {},
	"server/discover":                  {},
	"tools/list":                       {},
	"tools/call":                       {params: true},
	"prompts/list":                     {},
	"prompts/get":                      {params: true},
	"resources/list":                   {},
	"resources/templates/list":         {},
	"resources/read":                   {params: true},
	"resources/subscribe":              {params: true},
	"resources/unsubscribe":            {params: true},
	"subscriptions/listen":             {params: true},
	"completion/complete":              {params: true},
	"logging/setLevel":                 {params: true},
	"notifications/initialized":        {notification: true},
	"notifications/cancelled":          {notification: true},
	"notifications/progress":           {notification: true, params: true},
	"notifications/roots/list_changed": {notification: true},
}

// JSON-RPC codes of the transport (internal/apperr holds them all).
const (
	codeParseError     = apperr.RPCParseError
	codeInvalidRequest = apperr.RPCInvalid
	codeMethodNotFound = apperr.RPCMethodNotFound
)

// The transport's refusals are protoErrors (executor.go) answering id
// (null when the request has none to answer), written by writeTransport.

// writeTransport writes a refusal of the transport as the JSON-RPC error
// response every edge layer writes (agentauth.WriteFailure), with the
// JSON-RPC 2.0 wording of its code as error.message.
func (e *protoError) writeTransport(w http.ResponseWriter) {
	if e.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	agentauth.WriteFailure(w, e.id, &agentauth.Failure{Status: e.status, RPCCode: int(e.rpcCode), Code: e.code, Message: rpcMessage(e.rpcCode), Content: e.content})
}

// rpcMessage is error.message for a code: the JSON-RPC 2.0 wording.
func rpcMessage(code int64) string {
	switch code {
	case codeParseError:
		return "Parse error"
	case codeInvalidRequest:
		return "Invalid Request"
	case codeMethodNotFound:
		return "Method not found"
	case codeInvalidParams:
		return "Invalid params"
	}
	return "Internal error"
}

func invalidRequest(status int, code, content string) *protoError {
	return &protoError{status: status, rpcCode: codeInvalidRequest, code: code, content: content}
}

// checkTransport reads the request and refuses what the transport cannot
// serve. On success the body is restored for the SDK and id is the
// request's id (null for a notification).
func checkTransport(r *http.Request) (id json.RawMessage, _ *protoError) {
	if r.Method != http.MethodPost {
		return nil, invalidRequest(http.StatusMethodNotAllowed, "method_not_allowed", "/bcp/mcp serves POST only (stateless streamable HTTP, no SSE stream to GET)")
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !isMediaType(ct, "application/json") {
		return nil, invalidRequest(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
	}
	if jsonOK, streamOK := acceptsMCP(r.Header.Values("Accept")); !jsonOK || !streamOK {
		return nil, invalidRequest(http.StatusNotAcceptable, "not_acceptable", "Accept must list both application/json and text/event-stream")
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(mcp.SupportedProtocolVersions(), v) && v < "2026-07-28" {
		return nil, invalidRequest(http.StatusBadRequest, "unsupported_protocol_version",
			"MCP-Protocol-Version "+v+" is not supported (supported: "+strings.Join(mcp.SupportedProtocolVersions(), ", ")+")")
	}
	if len(r.Header.Values("Last-Event-Id")) > 0 {
		return nil, invalidRequest(http.StatusBadRequest, "invalid_request", "a POST cannot resume a stream (Last-Event-ID)")
	}
	var body []byte
	if ab, ok := r.Body.(*agentauth.Body); ok {
		// As authentication read it: the bytes, not a copy.
		if body = ab.Unread(); len(body) > maxMCPBody {
			return nil, invalidRequest(http.StatusRequestEntityTooLarge, "request_too_large", "the request body exceeds the limit")
		}
		return checkMessage(body)
	}
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, maxMCPBody+1))
		_ = r.Body.Close()
		switch {
		case err != nil:
			return nil, invalidRequest(http.StatusBadRequest, "invalid_request", "the request body could not be read")
		case len(body) > maxMCPBody:
			return nil, invalidRequest(http.StatusRequestEntityTooLarge, "request_too_large", "the request body exceeds the limit")
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return checkMessage(body)
}

// checkMessage checks that body is one JSON-RPC 2.0 request (or a
// response) the server serves.
func checkMessage(body []byte) (json.RawMessage, *protoError) {
	var msg struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  presence        `json:"params"`
		Result  presence        `json:"result"`
		Error   presence        `json:"error"`
	}
	// JSON first, even for what turns out to be a batch: "[1," is a parse
	// error. encoding/json refuses nesting beyond 10 000 levels as invalid.
	// Unmarshal checks the whole body as json.Valid does before it decodes
	// anything, and a *json.SyntaxError is exactly its "not valid" (one
	// scan of the body instead of two).
	err := json.Unmarshal(body, &msg)
	if _, invalid := errors.AsType[*json.SyntaxError](err); invalid {
		content := "the body is not JSON"
		if len(bytes.TrimSpace(body)) == 0 {
			content = "the body is empty; send one JSON-RPC request"
		}
		return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeParseError, code: "parse_error", content: content}
	}
	trimmed := bytes.TrimSpace(body)
	switch trimmed[0] {
	case '[':
		return nil, invalidRequest(http.StatusBadRequest, "invalid_request", "JSON-RPC batches are not supported (MCP 2025-06-18 and later): send one request per POST")
	case '{':
	default:
		return nil, invalidRequest(http.StatusBadRequest, "invalid_request", "the body must be a JSON-RPC request object")
	}
	if err != nil {
		// A member of the wrong type (a numeric method, a string jsonrpc).
		return nil, invalidRequest(http.StatusBadRequest, "invalid_request", "the body is not a JSON-RPC 2.0 request")
	}
	id := answerableID(msg.ID)
	if msg.JSONRPC == nil || *msg.JSONRPC != "2.0" {
		return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidRequest, code: "invalid_request", content: `"jsonrpc" must be "2.0"`, id: id}
	}
	if msg.ID != nil && id == nil {
		return nil, invalidRequest(http.StatusBadRequest, "invalid_request", "id must be a string or a number")
	}
	if msg.Method == nil {
		if id != nil && bool(msg.Result || msg.Error) {
			return id, nil // a response: the SDK takes it
		}
		return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidRequest, code: "invalid_request", content: `a request needs a "method"`, id: id}
	}
	method, ok := mcpMethods[*msg.Method]
	switch {
	case !ok:
		return nil, &protoError{status: http.StatusNotFound, rpcCode: codeMethodNotFound, code: "method_not_found", content: "/bcp/mcp does not serve the method " + strconv.Quote(*msg.Method), id: id}
	case method.notification && id != nil:
		return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidRequest, code: "invalid_request", content: *msg.Method + " is a notification: send it without an id", id: id}
	case !method.notification && id == nil:
		return nil, invalidRequest(http.StatusBadRequest, "invalid_request", *msg.Method+" is a request: send it with an id")
	case method.params && !bool(msg.Params):
		return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidParams, code: "invalid_params", content: *msg.Method + " needs params", id: id}
	}
	return id, nil
}

// presence records that a member is there and not null.
type presence bool

func (p *presence) UnmarshalJSON(b []byte) error {
	*p = presence(string(b) != "null")
	return nil
}

// answerableID is a request's id as an answer repeats it: a string or a
// number; nil for none (absent or null) and for ids of other types.
func answerableID(id json.RawMessage) json.RawMessage {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return nil
	}
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return id
	}
	return nil
}

// isMediaType reports whether the Content-Type value ct names the media
// type mt (lower case), whatever its parameters and spelling.
func isMediaType(ct, mt string) bool {
	got, _, err := mime.ParseMediaType(ct)
	return err == nil && got == mt
}

// acceptsMCP reports whether an Accept header lists JSON and an event
// stream (wildcards count), as the SDK reads it.
func acceptsMCP(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// transportWriter turns an answer the SDK writes in plain text (http.Error:
// an error status, text/plain) into a JSON-RPC error with the same status,
// answering id. checkTransport leaves the SDK few of them; this keeps any
// that remain, or a newer SDK adds, from reaching agents as text.
type transportWriter struct {
	http.ResponseWriter
	id       json.RawMessage
	captured int // the SDK's status, once it started a plain-text error
	text     bytes.Buffer
}

func (w *transportWriter) WriteHeader(code int) {
	if w.captured == 0 && code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.captured = code
		return
	}
	if w.captured == 0 {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *transportWriter) Write(p []byte) (int, error) {
	if w.captured != 0 {
		if w.text.Len() < 1024 {
			w.text.Write(p)
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *transportWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.captured == 0 {
		f.Flush()
	}
}

func (w *transportWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the JSON-RPC error for a captured plain-text answer.
func (w *transportWriter) finish() {
	if w.captured == 0 {
		return
	}
	h := w.Header()
	h.Del("X-Content-Type-Options")
	e := &protoError{status: w.captured, rpcCode: codeInvalidRequest, code: "invalid_request", content: strings.TrimSpace(w.text.String()), id: w.id}
	switch {
	case w.captured == http.StatusNotFound:
		e.rpcCode, e.code = codeMethodNotFound, "method_not_found"
	case w.captured == http.StatusRequestEntityTooLarge:
		e.code = "request_too_large"
	case w.captured >= 500:
		e.rpcCode, e.code, e.content = codeInternal, apperr.InternalCode, "internal error"
	}
	e.writeTransport(w.ResponseWriter)
}
