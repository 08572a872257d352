package agentauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRESTOperation(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/bcp/rest/checkout-sessions", "create_checkout"},
		{"GET", "/bcp/rest/checkout-sessions/chk_1", "get_checkout"},
		{"PUT", "/bcp/rest/checkout-sessions/chk_1", "update_checkout"},
		{"POST", "/bcp/rest/checkout-sessions/chk_1/complete", "complete_checkout"},
		{"POST", "/bcp/rest/checkout-sessions/chk_1/cancel", "cancel_checkout"},
		{"GET", "/bcp/rest/orders/ord_1", "get_order"},
		{"GET", "/checkout-sessions/chk_1", "get_checkout"},
		{"DELETE", "/bcp/rest/checkout-sessions/chk_1", ""},
		{"POST", "/bcp/rest/checkout-sessions/chk_1/refund", ""},
		{"POST", "/bcp/rest/carts", "create_cart"},
		{"GET", "/bcp/rest/carts/cart_1", "get_cart"},
		{"PUT", "/bcp/rest/carts/cart_1", "update_cart"},
		{"POST", "/bcp/rest/carts/cart_1/cancel", "cancel_cart"},
		{"DELETE", "/bcp/rest/carts/cart_1", ""},
		{"POST", "/bcp/rest/wishlists", ""},
		{"GET", "/bcp/rest/orders", ""},
		{"POST", "/bcp/rest/catalog/search", "search_catalog"},
		{"POST", "/bcp/rest/catalog/lookup", "lookup_catalog"},
		{"POST", "/bcp/rest/catalog/product", "get_product"},
		{"GET", "/bcp/rest/catalog/search", ""},
		{"POST", "/bcp/rest/catalog/search/x", ""},
		{"POST", "/bcp/rest/catalog/browse", ""},
	} {
		if got := RESTOperation(tc.method, tc.path); got != tc.want {
			t.Errorf("RESTOperation(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
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
	r := httptest.NewRequest("POST", "/bcp/rest/checkout-sessions/chk_1/complete", nil)
	rpc := restRequest(r)
	if tools := rpc.toolCalls(); len(tools) != 1 || tools[0] != "complete_checkout" {
		t.Fatalf("toolCalls = %v", tools)
	}
	if rpc.isPublic(DefaultPublicMethods) {
		t.Fatal("a REST request is never public")
	}
}
