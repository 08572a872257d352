package e2e

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/platform"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// protectedShop is one development merchant on a platform started with
// adjust, and an MCP agent for it.
type protectedShop struct {
	r       *platform.Running
	host    string
	profile string
	agent   *agent
}

func newProtectedShop(t *testing.T, host string, adjust func(*platform.Config)) *protectedShop {
	t.Helper()
	d := testdb.New(t)
	r := startPlatformWith(t, platform.AllServices, d.AppURL, nil, adjust)
	setupMerchant(t, r, "Loja "+host, host, 0)
	prof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount", "br.dev.bcp.shopping.buyer_consent")))
	}))
	t.Cleanup(prof.Close)
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	profile := prof.URL + "/agent.json"
	return &protectedShop{r: r, host: host, profile: profile,
		agent: &agent{t: t, s: agentSession(t, r, host, profile), profile: profile, v: v}}
}

// Slow clients: a request whose body stalls, and a keep-alive connection
// left idle, are closed by the server within their limits, while normal
// requests are served.
func TestSlowClientsAreCutOff(t *testing.T) {
	const limit = time.Second
	s := newProtectedShop(t, "lenta.localhost", func(c *platform.Config) {
		c.BodyTimeout, c.IdleTimeout = limit, limit
	})
	// Generous: the server closes them after `limit`; the bound only has
	// to survive a loaded 2-core machine, and is what a regression hits.
	const bound = 30 * time.Second
	start := time.Now()

	const stalled = 300
	conns := make([]net.Conn, 0, stalled)
	for range stalled {
		c, err := net.Dial("tcp", s.r.PublicAddr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		// Content-Length 1000, 17 bytes sent, then nothing.
		_, err = io.WriteString(c, "POST /bcp/mcp HTTP/1.1\r\nHost: "+s.host+"\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"+`{"jsonrpc":"2.0",`)
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		conns = append(conns, c)
	}

	// A normal agent call is served meanwhile.
	_, c := s.agent.call("create_checkout", map[string]any{"checkout": map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}})
	if c.ID == "" {
		t.Fatal("create_checkout while 300 connections stall: no checkout id")
	}

	// An idle keep-alive connection after a complete request.
	idle, err := net.Dial("tcp", s.r.PublicAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idle.Close() })
	if _, err := io.WriteString(idle, "GET /.well-known/bcp HTTP/1.1\r\nHost: "+s.host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("profile over the idle connection: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()

	// closedByServer waits (up to the bound) for the server to close c:
	// a read that ends in EOF or a reset, not in our own deadline.
	closedByServer := func(c net.Conn, r io.Reader) bool {
		_ = c.SetReadDeadline(start.Add(bound))
		_, err := io.Copy(io.Discard, r)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !closedByServer(c, c) {
				mu.Lock()
				open++
				mu.Unlock()
			}
		}()
	}
	idleClosed := closedByServer(idle, br)
	wg.Wait()
	if open > 0 {
		t.Errorf("%d of %d connections with a stalled body still open %s after they were opened (body limit %s)", open, stalled, bound, limit)
	}
	if !idleClosed {
		t.Errorf("an idle keep-alive connection is still open after %s (idle limit %s)", bound, limit)
	}

	// And the platform still serves agents afterwards.
	if _, c := s.agent.call("get_checkout", map[string]any{"id": c.ID}); c.ID == "" {
		t.Fatal("get_checkout after the stalled connections: no checkout")
	}
}
