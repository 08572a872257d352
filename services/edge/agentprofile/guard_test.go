package agentprofile

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/netguard"
)

func TestCheckURL(t *testing.T) {
	long := "https://agente.example.com/" + strings.Repeat("a", MaxURLLength)
	cases := []struct {
		url string
		dev bool
		ok  bool
	}{
		{"https://agente.example.com/profiles/shopping-agent.json", false, true},
		{"https://agente.example.com:8443/p.json?v=2", false, true},
		{"https://[2001:4860::8888]/p.json", false, true},
		{"http://agente.example.com/p.json", false, false},
		{"http://agente.example.com/p.json", true, true},
		{"http://127.0.0.1:8080/p.json", true, true},
		{"https://127.0.0.1/p.json", false, false},
		{"https://[::1]/p.json", false, false},
		{"https://169.254.169.254/latest/meta-data", false, false},
		{"https://[fe80::1%25eth0]/p.json", true, false},
		{"ftp://agente.example.com/p.json", false, false},
		{"file:///etc/passwd", true, false},
		{"/profiles/p.json", false, false},
		{"profiles/p.json", false, false},
		{"//agente.example.com/p.json", false, false},
		{"https:agente.example.com/p.json", false, false},
		{"https://", false, false},
		{"https://:443/p.json", false, false},
		{"not a url at all", false, false},
		{"https://agente.example.com/%zz", false, false},
		{"https://user:pass@agente.example.com/p.json", false, false},
		{"https://user@agente.example.com/p.json", false, false},
		{"https://agente.example.com/p.json#frag", false, false},
		{"https://agente.example.com/p.json#", false, false},
		{"https://agente.example.com:99999/p.json", false, false},
		{"https://agente.example.com:0/p.json", false, false},
		{"https://agente.example.com/\x7f", false, false},
		{"", false, false},
		{long, false, false},
	}
	for _, c := range cases {
		err := checkURL(c.url, c.dev)
		if (err == nil) != c.ok {
			t.Errorf("checkURL(%q, dev=%v) = %v, want ok=%v", c.url, c.dev, err, c.ok)
			continue
		}
		if err != nil && err.Code != CodeInvalidProfileURL {
			t.Errorf("checkURL(%q): code %s", c.url, err.Code)
		}
	}
}

// TestGuardBeforeAnyRequest: production fetches of loopback URLs fail and
// the server never sees a request. The literal IP is refused by the URL
// check; the host name is refused by the dial guard after resolution. The
// client skips certificate verification so that, without the guard, the
// request would reach the handler; dev=true proves that control.
func TestGuardBeforeAnyRequest(t *testing.T) {
	s := newServerTLS(t, serveBytes(fixture(t, "agent_profile.json")))
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	clock := newFakeClock()
	f := newFetcher(t, clock, func(o *Options) { o.HTTPClient = insecure })
	ctx := context.Background()
	u, _ := url.Parse(s.URL)
	byIP := s.URL + "/profile.json"
	byName := "https://localhost:" + u.Port() + "/profile.json"

	_, err := f.Get(ctx, byIP, false)
	wantCode(t, err, CodeInvalidProfileURL)

	_, err = f.Get(ctx, byName, false)
	pe := wantCode(t, err, CodeProfileUnreachable)
	if !errors.Is(err, netguard.ErrForbiddenAddress) || !strings.Contains(pe.Message, "special-use") {
		t.Errorf("want the dial guard to refuse, got %v (%v)", err, pe.Err)
	}
	if n := s.n.Load(); n != 0 {
		t.Fatalf("server saw %d requests before the guard, want 0", n)
	}

	// Control: the same URLs are reachable for a development tenant.
	for _, u := range []string{byIP, byName} {
		if _, err := f.Get(ctx, u, true); err != nil {
			t.Fatalf("dev fetch %s: %v", u, err)
		}
	}
	if n := s.n.Load(); n != 2 {
		t.Fatalf("dev fetches: server saw %d requests, want 2", n)
	}
	// Once the remembered failure expires, the production fetch dials
	// again and is refused again: the dev fetch's idle keep-alive
	// connection to the same host:port lives in another pool.
	clock.Advance(DefaultNegativeTTL + time.Second)
	if _, err := f.Get(ctx, byName, false); err == nil {
		t.Fatal("production fetch succeeded after a dev fetch of the same host")
	}
	if n := s.n.Load(); n != 2 {
		t.Fatalf("server saw %d requests, want 2", n)
	}
}
