package pagesec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
)

// MAC keeps the token format the pages have always used (purpose, then
// NUL and each part), so tokens stay valid across the move to this package.
func TestMAC(t *testing.T) {
	key := []byte("k")
	m := hmac.New(sha256.New, key)
	m.Write([]byte("bcp-web/simulate-payment\x00t\x00c\x00n"))
	if got, want := MAC(key, "bcp-web/simulate-payment", "t", "c", "n"), base64.RawURLEncoding.EncodeToString(m.Sum(nil)); got != want {
		t.Fatalf("MAC = %q, want %q", got, want)
	}
	if Equal("", MAC(key, "p")) || !Equal(MAC(key, "p", "a"), MAC(key, "p", "a")) || Equal(MAC(key, "p", "a"), MAC(key, "p", "b")) {
		t.Fatal("Equal")
	}
}

func TestNonceCookieAndHeaders(t *testing.T) {
	c := NonceCookie{Name: "n", Path: "/x"}
	rw := httptest.NewRecorder()
	nonce := c.Get(rw, httptest.NewRequest("GET", "/x", nil), true)
	set := rw.Result().Cookies()
	if !ValidNonce(nonce) || len(set) != 1 || set[0].Value != nonce || !set[0].HttpOnly || !set[0].Secure || set[0].SameSite != http.SameSiteStrictMode || set[0].Path != "/x" {
		t.Fatalf("new nonce %q, cookies %+v", nonce, set)
	}
	// A valid cookie is reused and not set again; a forged one is replaced.
	req := httptest.NewRequest("GET", "/x", nil)
	req.AddCookie(&http.Cookie{Name: "n", Value: nonce})
	rw = httptest.NewRecorder()
	if got := c.Get(rw, req, true); got != nonce || len(rw.Result().Cookies()) != 0 {
		t.Fatalf("reused %q, set %v", got, rw.Result().Cookies())
	}
	req = httptest.NewRequest("GET", "/x", nil)
	req.AddCookie(&http.Cookie{Name: "n", Value: "short"})
	if got := c.Get(httptest.NewRecorder(), req, false); got == "short" || !ValidNonce(got) {
		t.Fatalf("forged cookie kept: %q", got)
	}

	rw = httptest.NewRecorder()
	Headers{CSP: "default-src 'none'", FrameDeny: true}.Wrap(http.NotFoundHandler()).ServeHTTP(rw, httptest.NewRequest("GET", "/", nil))
	for h, want := range map[string]string{"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "same-origin", "Cache-Control": "no-store", "X-Frame-Options": "DENY"} {
		if got := rw.Header().Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
}
