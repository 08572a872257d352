// Package webtest holds the HTTP helpers the web package's tests share
// (in-package tests and the external platform test alike).
package webtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
)

// Response is what Do got back.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a request with the given Host and never follows redirects.
func Do(t testing.TB, base, method, host, path string, header http.Header, form url.Values) Response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// CheckHeaders asserts the security headers every response carries.
func CheckHeaders(t testing.TB, what string, r Response, noStore bool) {
	t.Helper()
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "img-src 'self' data:") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("%s: Content-Security-Policy = %q", what, csp)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("%s: nosniff/referrer headers = %v", what, r.Header)
	}
	if noStore && r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: Cache-Control = %q, want no-store", what, r.Header.Get("Cache-Control"))
	}
}

// NoInlineScript fails when the page has a <script> without src (the CSP
// would block it anyway; this catches it before a browser does).
func NoInlineScript(t testing.TB, body string) {
	t.Helper()
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
		if !strings.Contains(tag, ` src="/static/`) {
			t.Errorf("inline or foreign script: %s", tag)
		}
	}
	if strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
		t.Error("inline style or handler attribute in the page")
	}
}

// Router is anything with routes (web.Web, the admin).
type Router interface {
	Routes() map[string]http.Handler
}

// Serve mounts r's routes the way the edge does: behind a Host → tenant
// lookup that puts the tenant in the context (unknown hosts get 404).
func Serve(t testing.TB, r Router, hosts map[string]uuid.UUID) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, h := range r.Routes() {
		mux.Handle(pattern, h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		id, ok := hosts[req.Host]
		if !ok {
			http.NotFound(rw, req)
			return
		}
		mux.ServeHTTP(rw, req.WithContext(tenancy.With(req.Context(), id)))
	}))
	t.Cleanup(srv.Close)
	return srv
}
