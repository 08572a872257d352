package agentprofile

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestIsForbiddenIP(t *testing.T) {
	cases := []struct {
		ip        string
		forbidden bool
	}{
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"10.0.0.1", true},
		{"10.255.255.255", true},
		{"172.16.0.1", true},
		{"172.31.255.254", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"fe80::1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"100.64.0.1", true},
		{"100.127.255.254", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"198.18.0.1", true},
		{"192.0.2.1", true},
		{"192.0.0.8", true},
		{"fec0::1", true},
		{"2001:db8::1", true},
		{"2002:7f00:1::1", true},   // 6to4 around 127.0.0.1
		{"::ffff:127.0.0.1", true}, // IPv4-mapped
		{"::ffff:169.254.169.254", true},
		{"::7f00:1", true},           // IPv4-compatible
		{"64:ff9b::7f00:1", true},    // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", true},     // NAT64 of 10.0.0.1
		{"64:ff9b:1::808:808", true}, // local-use NAT64
		{"100::1", true},             // discard-only
		{"2001::1", true},            // Teredo

		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"172.32.0.1", false},
		{"100.128.0.1", false},
		{"2001:4860::8888", false},
		{"2606:4700:4700::1111", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"::ffff:8.8.8.8", false},
	}
	for _, c := range cases {
		if got := isForbiddenIP(netip.MustParseAddr(c.ip)); got != c.forbidden {
			t.Errorf("isForbiddenIP(%s) = %v, want %v", c.ip, got, c.forbidden)
		}
	}
	if !isForbiddenIP(netip.Addr{}) {
		t.Error("the zero Addr must be forbidden")
	}
	if !isForbiddenIP(netip.MustParseAddr("fe80::1%eth0")) {
		t.Error("zoned link-local must be forbidden")
	}
}

func TestDialControl(t *testing.T) {
	prod, dev := dialControl(false), dialControl(true)
	cases := []struct {
		network, address string
		prodOK, devOK    bool
	}{
		{"tcp4", "127.0.0.1:443", false, true},
		{"tcp6", "[::1]:443", false, true},
		{"tcp4", "10.1.2.3:8443", false, true},
		{"tcp4", "169.254.169.254:80", false, true},
		{"tcp6", "[fe80::1%eth0]:443", false, true},
		{"tcp4", "8.8.8.8:443", true, true},
		{"tcp6", "[2001:4860::8888]:443", true, true},
		{"udp4", "8.8.8.8:53", false, false},
		{"tcp4", "not-an-address", false, false},
	}
	for _, c := range cases {
		if err := prod(c.network, c.address, nil); (err == nil) != c.prodOK {
			t.Errorf("prod %s %s: %v", c.network, c.address, err)
		}
		if err := dev(c.network, c.address, nil); (err == nil) != c.devOK {
			t.Errorf("dev %s %s: %v", c.network, c.address, err)
		}
	}
}

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
	if !errors.Is(err, errForbiddenAddress) || !strings.Contains(pe.Message, "special-use") {
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
