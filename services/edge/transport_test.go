package edge

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// testEdge is an edge with no services behind it: enough for what is
// answered before any service call (the transport, the input guard).
// Calls that get further fail (no profile fetcher, no clients): a
// refusal the edge should have made shows up as another answer.
type testEdge struct {
	m    *mcpEdge
	rest *restEdge
	t    *tenantsv1.Tenant
}

func newTestEdge(t *testing.T) *testEdge {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	e := &Edge{log: log, usage: newUsageCounter(nil, 0, log), limits: newRateLimiter(nil, nil, log)}
	e.mcp = newMCPEdge(e, Clients{}, nil, log)
	return &testEdge{m: e.mcp, rest: newRESTEdge(e.mcp), t: &tenantsv1.Tenant{
		Id:           uuid.NewString(),
		Capabilities: []string{bcpnames.Checkout, bcpnames.Fulfillment, bcpnames.Discount, bcpnames.Cart, bcpnames.CatalogSearch, bcpnames.CatalogLookup, bcpnames.Order},
	}}
}

// withTenant is r as Host routing hands it over (the tenant in its
// context; no tenancy id, so no rate limits apply).
func (te *testEdge) withTenant(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), edgeRequestKey{}, &edgeRequest{tenant: te.t, host: "loja.localhost"}))
}

// rpcReply is a JSON-RPC answer over HTTP.
type rpcReply struct {
	status int
	header http.Header
	raw    string
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code    string   `json:"code"`
			Content string   `json:"content"`
			Paths   []string `json:"paths"`
		} `json:"data"`
	} `json:"error"`
}

// mcpPost sends body to /bcp/mcp as an MCP client does, with header
// changes (a value "" deletes the header).
func (te *testEdge) mcpPost(t *testing.T, method, body string, header map[string]string) rpcReply {
	t.Helper()
	r := httptest.NewRequest(method, "/bcp/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	te.m.ServeHTTP(w, te.withTenant(r))
	a := rpcReply{status: w.Code, header: w.Header(), raw: w.Body.String()}
	_ = json.Unmarshal(w.Body.Bytes(), &a)
	return a
}

// Every MCP transport error is a JSON-RPC error with its code and an HTTP
// status saying the same, never the SDK's plain text; batches are refused.
func TestMCPTransportErrors(t *testing.T) {
	te := newTestEdge(t)
	call := `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"get_cart","arguments":{"meta":{"ucp-agent":{"profile":"https://agent.example/p.json"}},"id":"cart_1"}}}`
	one := strings.Replace(call, "%s", "1", 1)
	two := strings.Replace(call, "%s", "2", 1)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	deepObject := strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)
	for _, tc := range []struct {
		name   string
		method string
		body   string
		header map[string]string
		status int
		code   int64
		data   string // error.data.code
		id     string // the id answered
	}{
		{"invalid JSON", "POST", `{"jsonrpc":"2.0","id":1,"method":`, nil, 400, -32700, "parse_error", "null"},
		{"empty body", "POST", ``, nil, 400, -32700, "parse_error", "null"},
		// Form feed and NBSP are spaces to bytes.TrimSpace, not to JSON.
		{"form feed before the request", "POST", "\f" + one, nil, 400, -32700, "parse_error", "null"},
		{"NBSP after the request", "POST", one + "\u00a0", nil, 400, -32700, "parse_error", "null"},
		{"unfinished batch", "POST", `[` + one + `,`, nil, 400, -32700, "parse_error", "null"},
		{"100 000-deep array", "POST", deep, nil, 400, -32700, "parse_error", "null"},
		{"100 000-deep object", "POST", deepObject, nil, 400, -32700, "parse_error", "null"},
		{"unknown method", "POST", `{"jsonrpc":"2.0","id":"u1","method":"checkout/steal"}`, nil, 404, -32601, "method_not_found", `"u1"`},
		{"unknown notification", "POST", `{"jsonrpc":"2.0","method":"notifications/nope"}`, nil, 404, -32601, "method_not_found", "null"},
		{"empty batch", "POST", ` [] `, nil, 400, -32600, "invalid_request", "null"},
		{"batch of two tools/call", "POST", "[" + one + "," + two + "]", nil, 400, -32600, "invalid_request", "null"},
		{"batch of one", "POST", "[" + one + "]", map[string]string{"MCP-Protocol-Version": "2025-03-26"}, 400, -32600, "invalid_request", "null"},
		{"not an object", "POST", `"tools/list"`, nil, 400, -32600, "invalid_request", "null"},
		{"null", "POST", `null`, nil, 400, -32600, "invalid_request", "null"},
		{"jsonrpc 1.0", "POST", `{"jsonrpc":"1.0","id":3,"method":"tools/list"}`, nil, 400, -32600, "invalid_request", "3"},
		{"no jsonrpc", "POST", `{"id":3,"method":"tools/list"}`, nil, 400, -32600, "invalid_request", "3"},
		{"numeric method", "POST", `{"jsonrpc":"2.0","id":3,"method":7}`, nil, 400, -32600, "invalid_request", "null"},
		{"object id", "POST", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, nil, 400, -32600, "invalid_request", "null"},
		{"request without id", "POST", `{"jsonrpc":"2.0","method":"tools/list"}`, nil, 400, -32600, "invalid_request", "null"},
		{"notification with id", "POST", `{"jsonrpc":"2.0","id":4,"method":"notifications/initialized"}`, nil, 400, -32600, "invalid_request", "4"},
		{"tools/call without params", "POST", `{"jsonrpc":"2.0","id":5,"method":"tools/call"}`, nil, 400, -32602, "invalid_params", "5"},
		{"neither request nor response", "POST", `{"jsonrpc":"2.0","id":6}`, nil, 400, -32600, "invalid_request", "6"},
		{"wrong Content-Type", "POST", one, map[string]string{"Content-Type": "text/plain"}, 415, -32600, "unsupported_media_type", "null"},
		{"no Content-Type", "POST", one, map[string]string{"Content-Type": ""}, 415, -32600, "unsupported_media_type", "null"},
		{"Accept without the event stream", "POST", one, map[string]string{"Accept": "application/json"}, 406, -32600, "not_acceptable", "null"},
		{"no Accept", "POST", one, map[string]string{"Accept": ""}, 406, -32600, "not_acceptable", "null"},
		{"GET", "GET", ``, map[string]string{"Accept": "text/event-stream"}, 405, -32600, "method_not_allowed", "null"},
		{"DELETE", "DELETE", ``, nil, 405, -32600, "method_not_allowed", "null"},
		{"unsupported protocol version", "POST", one, map[string]string{"MCP-Protocol-Version": "2020-01-01"}, 400, -32600, "unsupported_protocol_version", "null"},
		{"Last-Event-ID on a POST", "POST", one, map[string]string{"Last-Event-ID": "1"}, 400, -32600, "invalid_request", "null"},
		{"too large", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", maxMCPBody) + `"}}`, nil, 413, -32600, "request_too_large", "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := te.mcpPost(t, tc.method, tc.body, tc.header)
			if a.status != tc.status || a.Error == nil || a.Error.Code != tc.code || a.Error.Data.Code != tc.data || string(a.ID) != tc.id ||
				!strings.HasPrefix(a.header.Get("Content-Type"), "application/json") || a.Result != nil {
				t.Fatalf("HTTP %d %s %.300s\nwant %d, JSON-RPC %d %s answering id %s", a.status, a.header.Get("Content-Type"), a.raw, tc.status, tc.code, tc.data, tc.id)
			}
			if tc.status == http.StatusMethodNotAllowed && a.header.Get("Allow") != "POST" {
				t.Errorf("405 without Allow: POST: %v", a.header)
			}
		})
	}
}

// What the transport lets through is served as before: requests get the
// SDK's answers, notifications 202, and a tools/call reaches the tool
// (here: the input guard answers it).
func TestMCPTransportServesValidRequests(t *testing.T) {
	te := newTestEdge(t)
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, 200, `"serverInfo"`},
		{"ping", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, 200, `"result":{}`},
		{"tools/list", `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`, 200, `"create_cart"`},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202, ``},
		{"tools/call", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_cart","arguments":{"meta":{"ucp-agent":{"profile":"https://agent.example/p.json"}},"id":"cart_\u0000"}}}`, 200, `"paths":["$.id"]`},
		{"unknown tool: the SDK's own JSON-RPC error", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, 200, `"code":-32602`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := te.mcpPost(t, "POST", tc.body, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
			if a.status != tc.status || !strings.Contains(a.raw, tc.want) {
				t.Fatalf("HTTP %d %.400s\nwant %d with %s", a.status, a.raw, tc.status, tc.want)
			}
		})
	}
}

// Whatever the SDK still answers in plain text reaches the agent as a
// JSON-RPC error: here the SDK's "no server available" (a request that
// Host routing did not give a merchant).
func TestMCPPlainTextBecomesJSONRPC(t *testing.T) {
	te := newTestEdge(t)
	r := httptest.NewRequest("POST", "/bcp/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	te.m.ServeHTTP(w, r) // no tenant
	var a rpcReply
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || w.Code != http.StatusBadRequest || a.Error == nil || a.Error.Code != -32600 ||
		string(a.ID) != `"x"` || !strings.Contains(a.Error.Data.Content, "no server available") || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("HTTP %d %v %s", w.Code, w.Header(), w.Body.String())
	}
}
