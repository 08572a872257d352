package operator

import (
	"regexp"
	"testing"
	"time"
)

// The console's headers and its hashed stylesheet.
func TestHeadersAndStatic(t *testing.T) {
	con := New(Options{OperatorToken: token, PublicScheme: "https", Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }})
	b := &browser{t: t, c: con, cookies: map[string]string{}}
	login := b.do("GET", "/entrar", nil)
	h := login.Header()
	want := map[string]string{
		"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
		"X-Frame-Options": "DENY", "X-Robots-Tag": "noindex, nofollow", "Cache-Control": "no-store",
		"Content-Type": "text/html; charset=utf-8",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("login page %s = %q, want %q", k, got, v)
		}
	}
	nonce := b.cookies[loginCookie]
	if len(nonce) < 24 {
		t.Errorf("login nonce cookie %q", nonce)
	}
	m := regexp.MustCompile(`href="(/static/operator\.[0-9a-f]{10}\.css)"`).FindStringSubmatch(login.Body.String())
	if m == nil {
		t.Fatalf("no hashed stylesheet link:\n%s", login.Body)
	}
	css := b.do("GET", m[1], nil)
	if css.Code != 200 || css.Header().Get("Content-Type") != "text/css; charset=utf-8" ||
		css.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || css.Header().Get("X-Robots-Tag") != "noindex, nofollow" || css.Body.Len() < 100 {
		t.Fatalf("stylesheet: %d %v (%d bytes)", css.Code, css.Header(), css.Body.Len())
	}
	if w := b.do("GET", "/static/operator.0000000000.css", nil); w.Code != 404 || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("unknown static file: %d %v", w.Code, w.Header())
	}
}
