package edge

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// Each protocol error renders with its REST status and its JSON-RPC code
// from the one protoError.
func TestProtocolErrorRenderings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     *protoError
		status  int
		rpc     int64
		code    string
		retry   bool
		withPth bool
	}{
		{"unavailable", serviceError(apperr.New(apperr.KindUnavailable, "down", "down")), 503, codeProtocol, "unavailable", true, false},
		{"conflict", serviceError(apperr.New(apperr.KindFailedPrecondition, "checkout_not_modifiable", "no")), 409, codeProtocol, "checkout_not_modifiable", false, false},
		{"profile unreachable", discoveryError(&agentprofile.Error{Code: agentprofile.CodeProfileUnreachable}), 424, codeDiscovery, "profile_unreachable", false, false},
		{"profile malformed", discoveryError(&agentprofile.Error{Code: agentprofile.CodeProfileMalformed}), 422, codeDiscovery, "profile_malformed", false, false},
		{"version unsupported", discoveryError(&agentprofile.Error{Code: agentprofile.CodeVersionUnsupported}), 422, codeDiscovery, "version_unsupported", false, false},
		{"invalid params", invalidParams(errors.New("bad")), 400, codeInvalidParams, "invalid_params", false, true},
		{"internal", asProtoError(errors.New("boom")), 500, codeInternal, "internal_error", false, false},
		{"rate limited", newProtoError(http.StatusTooManyRequests, codeProtocol, "rate_limited", "slow down"), 429, codeProtocol, "rate_limited", true, false},
	} {
		w := httptest.NewRecorder()
		tc.err.writeREST(w)
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != tc.status || body["code"] != tc.code || body["content"] == nil || (w.Header().Get("Retry-After") != "") != tc.retry || (body["paths"] != nil) != tc.withPth {
			t.Errorf("%s: REST %d %s %v", tc.name, w.Code, w.Body.Bytes(), w.Header())
		}
		rpc := tc.err.rpc()
		var data map[string]any
		_ = json.Unmarshal(rpc.Data, &data)
		if rpc.Code != tc.rpc || data["code"] != tc.code {
			t.Errorf("%s: MCP %d %s", tc.name, rpc.Code, rpc.Data)
		}
	}
}

// REST requests become the tool arguments {meta, id, checkout}.
func TestRESTArgs(t *testing.T) {
	complete, get := operationNamed(t, "complete_checkout"), operationNamed(t, "get_checkout")
	r := httptest.NewRequest("POST", "/bcp/rest/checkout-sessions/chk_1/complete", strings.NewReader(` {"payment":{"instruments":[]}} `))
	r.SetPathValue("id", "chk_1")
	r.Header.Set("BCP-Agent", `profile="https://agent.example/p.json"`)
	r.Header.Set("Idempotency-Key", "6f1c4f5e-0a51-4a6f-9a55-0a7f3b0e9c11")
	args, perr := restArgs(r, complete)
	if perr != nil {
		t.Fatal(perr)
	}
	want := `{"meta":{"idempotency-key":"6f1c4f5e-0a51-4a6f-9a55-0a7f3b0e9c11","ucp-agent":{"profile":"https://agent.example/p.json"}},"id":"chk_1","checkout":{"payment":{"instruments":[]}}}`
	if string(args) != want {
		t.Fatalf("args = %s", args)
	}
	// complete without a key: 400 at the meta path.
	r = httptest.NewRequest("POST", "/bcp/rest/checkout-sessions/chk_1/complete", strings.NewReader(`{}`))
	r.Header.Set("UCP-Agent", `profile="https://agent.example/p.json"`)
	if _, perr := restArgs(r, complete); perr == nil || perr.status != 400 || perr.violations[0].Path != "$.meta['idempotency-key']" {
		t.Fatalf("no key: %v", perr)
	}
	// No agent header: 400 invalid_profile_url.
	r = httptest.NewRequest("GET", "/bcp/rest/checkout-sessions/chk_1", nil)
	if _, perr := restArgs(r, get); perr == nil || perr.status != 400 || perr.code != "invalid_profile_url" {
		t.Fatalf("no agent: %v", perr)
	}
	if scopeA, scopeB := idempotencyScope(bindingMCP, "p", "cancel_checkout"), idempotencyScope(bindingREST, "p", "cancel_checkout"); scopeA == scopeB {
		t.Fatal("MCP and REST idempotency scopes must differ")
	}
}

func operationNamed(t testing.TB, name string) *operation {
	t.Helper()
	for i := range operations {
		if operations[i].name == name {
			return &operations[i]
		}
	}
	t.Fatalf("no operation %s", name)
	return nil
}
