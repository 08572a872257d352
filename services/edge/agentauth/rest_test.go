package agentauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// testOperations are some of the edge's routes (its own tests check the
// whole table against the REST mux).
var testOperations = []Operation{
	{Tool: "create_checkout", Method: "POST", Path: "/bcp/rest/checkout-sessions"},
	{Tool: "get_checkout", Method: "GET", Path: "/bcp/rest/checkout-sessions/{id}"},
	{Tool: "complete_checkout", Method: "POST", Path: "/bcp/rest/checkout-sessions/{id}/complete", Signed: true},
	{Tool: "get_product", Method: "POST", Path: "/bcp/rest/catalog/product"},
	{Tool: "mcp_only"},
}

func TestRESTOperationIndex(t *testing.T) {
	ops := newOperations(testOperations)
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/bcp/rest/checkout-sessions", "create_checkout"},
		{"GET", "/bcp/rest/checkout-sessions/chk_1", "get_checkout"},
		{"POST", "/bcp/rest/checkout-sessions/chk_1/complete", "complete_checkout"},
		// One path segment, as the mux routes it.
		{"POST", "/bcp/rest/checkout-sessions/chk%2F1/complete", "complete_checkout"},
		{"POST", "/bcp/rest/catalog/product", "get_product"},
		{"PUT", "/bcp/rest/checkout-sessions/chk_1", ""},
		{"POST", "/bcp/rest/checkout-sessions/chk_1/refund", ""},
		{"POST", "/bcp/rest/checkout-sessions/", ""},
		{"GET", "/checkout-sessions/chk_1", ""},
		{"GET", "/bcp/rest/catalog/product", ""},
	} {
		if got := ops.restTool(tc.method, tc.path); got != tc.want {
			t.Errorf("restTool(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
	if !ops.signed["complete_checkout"] || ops.signed["get_checkout"] || ops.signed["mcp_only"] {
		t.Errorf("signed = %v", ops.signed)
	}
	if got := newOperations(nil).restTool("POST", "/bcp/rest/checkout-sessions"); got != "" {
		t.Errorf("no operations: %q", got)
	}
}

func TestWriteRESTFailure(t *testing.T) {
	w := httptest.NewRecorder()
	f := authFailure(ErrCodeSignatureMissing, "sign it")
	f.Challenge = challengeBoth
	WriteRESTFailure(w, f)
	if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" || w.Header().Get("Accept-Signature") == "" {
		t.Fatalf("status %d headers %v", w.Code, w.Header())
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body) != 2 || body["code"] != "signature_missing" || body["content"] != "sign it" {
		t.Fatalf("body %s", w.Body.Bytes())
	}
	w = httptest.NewRecorder()
	WriteRESTFailure(w, fail(http.StatusServiceUnavailable, CodeProtocol, ErrCodeUnavailable, "x", "retry"))
	if w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("503: %d %v", w.Code, w.Header())
	}
}

// A complete response over REST is one the signer must sign.
func TestRESTWantsSignature(t *testing.T) {
	a := New(Options{Operations: testOperations})
	r := httptest.NewRequest("POST", "/bcp/rest/checkout-sessions/chk_1/complete", nil)
	rpc := a.restRequest(r)
	if tools := rpc.toolCalls(); len(tools) != 1 || tools[0] != "complete_checkout" {
		t.Fatalf("toolCalls = %v", tools)
	}
	if rpc.isPublic(DefaultPublicMethods) {
		t.Fatal("a REST request is never public")
	}
	if !a.ops.signed[rpc.toolCalls()[0]] {
		t.Fatal("complete_checkout is not signed")
	}
}
