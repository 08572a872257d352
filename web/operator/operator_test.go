package operator

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const token = "bcp_op_test-token"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestSessionCookie(t *testing.T) {
	k := deriveKeys(token)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	v, s := k.newSession(now)
	got, ok := k.parseSession(v, now.Add(SessionTTL-time.Second))
	if !ok || got.id != s.id || !got.expires.Equal(now.Add(12*time.Hour)) {
		t.Fatalf("fresh session: %v %+v", ok, got)
	}
	if _, ok := k.parseSession(v, now.Add(SessionTTL)); ok {
		t.Fatal("session accepted at its expiry")
	}
	// Another operator token (a rotation) ends every session.
	if _, ok := deriveKeys(token+"x").parseSession(v, now); ok {
		t.Fatal("session accepted under another operator token")
	}
	// Any change to the signed part or the signature is refused, including
	// a later expiry.
	i := strings.LastIndexByte(v, '.')
	parts := strings.Split(v[:i], ".")
	parts[2] = "9999999999"
	for _, bad := range []string{
		strings.Join(parts, ".") + v[i:],
		v[:i] + ".AAAA" + v[i+5:],
		v[:len(v)-1],
		"", ".", "v1.1.2.x", v + "x",
	} {
		if _, ok := k.parseSession(bad, now); ok {
			t.Fatalf("tampered session %q accepted", bad)
		}
	}
	// CSRF tokens are per session and differ from the login form's.
	_, s2 := k.newSession(now)
	if k.csrfToken(s) == k.csrfToken(s2) || k.csrfToken(s) != k.csrfToken(got) || k.csrfToken(s) == k.loginToken(s.id) {
		t.Fatal("CSRF tokens not bound to their session")
	}
	if !tokenEqual(token, token) || tokenEqual(token+" ", token) || tokenEqual("", "") {
		t.Fatal("tokenEqual")
	}
}

func TestLimiterBackoff(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	l := newLimiter(c.now)
	var locks []time.Duration
	for range 7 {
		locks = append(locks, l.fail("10.0.0.1"))
	}
	want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i := range want {
		if locks[i] != want[i] {
			t.Fatalf("lockouts %v, want %v", locks, want)
		}
	}
	if d := l.locked("10.0.0.1"); d != 8*time.Second {
		t.Fatalf("locked for %s", d)
	}
	if d := l.locked("10.0.0.2"); d != 0 {
		t.Fatalf("another IP locked for %s", d)
	}
	c.add(8 * time.Second)
	if d := l.locked("10.0.0.1"); d != 0 {
		t.Fatalf("still locked after the wait: %s", d)
	}
	for range 20 {
		l.fail("10.0.0.1")
	}
	if d := l.locked("10.0.0.1"); d != maxLock {
		t.Fatalf("lockout not capped: %s", d)
	}
	l.success("10.0.0.1")
	if d := l.fail("10.0.0.1"); d != 0 {
		t.Fatalf("success did not reset: %s", d)
	}
	// Idle entries are forgotten.
	for range 4 {
		l.fail("10.0.0.3")
	}
	c.add(forgetAfter + time.Minute)
	if d := l.fail("10.0.0.3"); d != 0 {
		t.Fatalf("old failures still counted: %s", d)
	}
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// browser keeps cookies for one console and never follows redirects.
type browser struct {
	t       *testing.T
	c       *Console
	cookies map[string]string
}

func (b *browser) do(method, path string, form url.Values, hdr ...string) *httptest.ResponseRecorder {
	b.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, "http://operador.localhost"+path, body)
	req.RemoteAddr = "192.0.2.7:5555"
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	for n, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: n, Value: v})
	}
	w := httptest.NewRecorder()
	b.c.ServeHTTP(w, req)
	for _, ck := range w.Result().Cookies() {
		if ck.MaxAge < 0 {
			delete(b.cookies, ck.Name)
		} else {
			b.cookies[ck.Name] = ck.Value
		}
	}
	return w
}

func csrf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("no CSRF field (%d):\n%s", w.Code, w.Body)
	}
	return html.UnescapeString(m[1])
}

// Sign-in, CSRF and logout at the HTTP level (no service calls involved).
func TestSignInCSRFAndLogout(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	con := New(Options{OperatorToken: token, PublicScheme: "https", Now: c.now})
	b := &browser{t: t, c: con, cookies: map[string]string{}}

	if w := b.do("GET", "/lojas", nil); w.Code != 303 || w.Header().Get("Location") != "/entrar" {
		t.Fatalf("signed out: %d %q", w.Code, w.Header().Get("Location"))
	}
	if w := b.do("POST", "/lojas/nova", url.Values{"name": {"x"}}); w.Code != 403 {
		t.Fatalf("signed-out post: %d", w.Code)
	}
	login := b.do("GET", "/entrar", nil)
	if login.Code != 200 || login.Header().Get("Content-Security-Policy") == "" || login.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("login page: %d %v", login.Code, login.Header())
	}
	ltok := csrf(t, login)
	// The sign-in form needs its token, and cross-site posts are refused.
	if w := b.do("POST", "/entrar", url.Values{"token": {token}}); w.Code != 403 {
		t.Fatalf("sign-in without CSRF token: %d", w.Code)
	}
	if w := b.do("POST", "/entrar", url.Values{"_csrf": {ltok}, "token": {token}}, "Sec-Fetch-Site", "cross-site"); w.Code != 403 {
		t.Fatalf("cross-site sign-in: %d", w.Code)
	}
	if w := b.do("POST", "/entrar", url.Values{"_csrf": {ltok}, "token": {"errado"}}); w.Code != 401 || !strings.Contains(w.Body.String(), "Token incorreto.") {
		t.Fatalf("wrong token: %d\n%s", w.Code, w.Body)
	}
	w := b.do("POST", "/entrar", url.Values{"_csrf": {ltok}, "token": {token}})
	if w.Code != 303 || w.Header().Get("Location") != "/lojas" {
		t.Fatalf("sign-in: %d %q\n%s", w.Code, w.Header().Get("Location"), w.Body)
	}
	set := w.Header().Values("Set-Cookie")
	var sess string
	for _, s := range set {
		if strings.HasPrefix(s, sessionCookie+"=") {
			sess = s
		}
	}
	for _, want := range []string{"Path=/", "Max-Age=43200", "HttpOnly", "Secure", "SameSite=Strict"} {
		if !strings.Contains(sess, want) {
			t.Fatalf("session cookie %q lacks %s", sess, want)
		}
	}
	if _, ok := b.cookies[loginCookie]; ok {
		t.Fatal("login nonce cookie kept after sign-in")
	}
	// Signed in: the sign-in page sends to the list; forms carry the
	// session's token and posts without it (or cross-site) are refused.
	if w := b.do("GET", "/entrar", nil); w.Code != 303 {
		t.Fatalf("sign-in page while signed in: %d", w.Code)
	}
	form := b.do("GET", "/lojas/nova", nil)
	if form.Code != 200 {
		t.Fatalf("new tenant form: %d", form.Code)
	}
	tok := csrf(t, form)
	if tok != con.keys.csrfToken(mustSession(t, con, b.cookies[sessionCookie], c.now())) {
		t.Fatal("form token is not the session's")
	}
	for _, f := range []url.Values{{"name": {"x"}}, {"_csrf": {tok + "x"}}, {"_csrf": {ltok}}} {
		if w := b.do("POST", "/lojas/nova", f); w.Code != 403 {
			t.Fatalf("post with %v: %d", f, w.Code)
		}
	}
	if w := b.do("POST", "/sair", url.Values{"_csrf": {tok}}, "Sec-Fetch-Site", "cross-site"); w.Code != 403 {
		t.Fatalf("cross-site logout: %d", w.Code)
	}
	// Expiry: 12 h later the cookie no longer signs in.
	c.add(SessionTTL)
	if w := b.do("GET", "/lojas/nova", nil); w.Code != 303 {
		t.Fatalf("expired session: %d", w.Code)
	}
	c.add(-SessionTTL)
	if w := b.do("POST", "/sair", url.Values{"_csrf": {tok}}); w.Code != 303 || w.Header().Get("Location") != "/entrar" {
		t.Fatalf("logout: %d", w.Code)
	}
	if _, ok := b.cookies[sessionCookie]; ok {
		t.Fatal("session cookie not cleared")
	}
	if w := b.do("GET", "/lojas/nova", nil); w.Code != 303 {
		t.Fatalf("after logout: %d", w.Code)
	}
}

func mustSession(t *testing.T, c *Console, v string, now time.Time) session {
	t.Helper()
	s, ok := c.keys.parseSession(v, now)
	if !ok {
		t.Fatal("no valid session cookie")
	}
	return s
}

// Repeated failures lock the client out, even for the right token, until
// the backoff passes.
func TestSignInBackoff(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	con := New(Options{OperatorToken: token, PublicScheme: "http", Now: c.now})
	b := &browser{t: t, c: con, cookies: map[string]string{}}
	ltok := csrf(t, b.do("GET", "/entrar", nil))
	try := func(tok string) *httptest.ResponseRecorder {
		return b.do("POST", "/entrar", url.Values{"_csrf": {ltok}, "token": {tok}})
	}
	for i, want := range []int{401, 401, 401, 429} {
		if w := try("errado"); w.Code != want {
			t.Fatalf("failure %d: %d, want %d", i+1, w.Code, want)
		}
	}
	w := try(token)
	if w.Code != 429 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "Muitas tentativas") {
		t.Fatalf("right token while locked out: %d\n%s", w.Code, w.Body)
	}
	c.add(time.Second)
	if w := try(token); w.Code != 303 {
		t.Fatalf("after the backoff: %d", w.Code)
	}
	for _, s := range w.Header().Values("Set-Cookie") {
		if strings.Contains(s, "Secure") {
			t.Fatalf("Secure cookie over plain-http development: %s", s)
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		e, r int64
		want string
	}{{0, 0, "—"}, {0, 5, "0,0 %"}, {1, 3, "33,3 %"}, {2, 3, "66,7 %"}, {3, 3, "100,0 %"}, {1, 1000, "0,1 %"}} {
		if got := errorRate(tc.e, tc.r); got != tc.want {
			t.Errorf("errorRate(%d, %d) = %q, want %q", tc.e, tc.r, got, tc.want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1.000", 1234567: "1.234.567", -1000: "-1.000"} {
		if got := formatInt(n); got != want {
			t.Errorf("formatInt(%d) = %q, want %q", n, got, want)
		}
	}
	if got := formatDay("2026-11-30"); got != "30/11/2026" {
		t.Errorf("formatDay = %q", got)
	}
}
