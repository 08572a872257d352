package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
)

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/admin/produtos": "/admin/produtos", "": "/admin/", "https://evil.example/admin/": "/admin/",
		"//evil.example/admin/": "/admin/", "/admin/\\evil": "/admin/", "/checkout/x": "/admin/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// The pages parse, and the sign-in page sets the nonce cookie its token
// is bound to (HttpOnly, SameSite=Strict, Secure outside plain http).
func TestLoginPageAndHeaders(t *testing.T) {
	a := New(Options{PublicScheme: "https"})
	h := a.Routes()["GET /admin/entrar"]
	req := httptest.NewRequest("GET", "/admin/entrar", nil)
	req = req.WithContext(tenancy.With(req.Context(), uuid.New()))
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, req)
	if rw.Code != http.StatusOK || !strings.Contains(rw.Body.String(), `name="_csrf"`) || !strings.Contains(rw.Body.String(), "Entrar") {
		t.Fatalf("sign-in page: %d\n%s", rw.Code, rw.Body)
	}
	c := rw.Header().Get("Set-Cookie")
	for _, want := range []string{"bcp_admin_login=", "Path=/admin", "HttpOnly", "Secure", "SameSite=Strict"} {
		if !strings.Contains(c, want) {
			t.Errorf("cookie %q lacks %s", c, want)
		}
	}
	if csp := rw.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP %q", csp)
	}
	// No tenant in the context (no Host routing): nothing is served.
	rw = httptest.NewRecorder()
	h.ServeHTTP(rw, httptest.NewRequest("GET", "/admin/entrar", nil))
	if rw.Code != http.StatusNotFound {
		t.Fatalf("without a tenant: %d", rw.Code)
	}
}

func TestFormatPercent(t *testing.T) {
	for bp, want := range map[int64]string{1000: "10", 1250: "12,5", 1: "0,01", 10000: "100", 1005: "10,05"} {
		if got := formatPercent(bp); got != want {
			t.Errorf("formatPercent(%d) = %q, want %q", bp, got, want)
		}
		if back, msg := ParseBRL(formatPercent(bp)); msg != "" || back != bp {
			t.Errorf("round trip %d → %d %q", bp, back, msg)
		}
	}
}
