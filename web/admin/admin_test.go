package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
)

func TestParseBRL(t *testing.T) {
	ok := map[string]int64{
		"0": 0, "12": 1200, "12,9": 1290, "12,90": 1290, "1.234,56": 123456, "R$ 1.234,56": 123456, "r$0,99": 99,
		"12.50": 1250, "12.5": 1250, "1.234": 123400, "1.234.567,89": 123456789, ",5": 50, " 49,90 ": 4990,
		"10000000000,00": 1_000_000_000_000,
	}
	for in, want := range ok {
		got, msg := ParseBRL(in)
		if msg != "" || got != want {
			t.Errorf("ParseBRL(%q) = %d %q, want %d", in, got, msg, want)
		}
	}
	for _, in := range []string{"", "-1", "-0,01", "1,234", "12,3a", "abc", "1e3", "1,2,3", "12.345,6.7", "1.23.45", "10000000001,00", "99999999999999999999", "0x10", "1 234,00x"} {
		if got, msg := ParseBRL(in); msg == "" {
			t.Errorf("ParseBRL(%q) = %d, want an error", in, got)
		}
	}
	for cents, want := range map[int64]string{0: "R$ 0,00", 5: "R$ 0,05", 123456: "R$ 1.234,56", -1099: "-R$ 10,99"} {
		if got := FormatBRL(cents); got != want {
			t.Errorf("FormatBRL(%d) = %q, want %q", cents, got, want)
		}
	}
	// Round trip of the edit form's value.
	for _, c := range []int64{0, 1, 99, 100, 123456, 999999999} {
		if got, msg := ParseBRL(FormatReais(c)); msg != "" || got != c {
			t.Errorf("round trip %d → %q → %d %q", c, FormatReais(c), got, msg)
		}
	}
}

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
