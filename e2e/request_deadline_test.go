package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// A request the edge cannot finish within its request deadline
// (edge.Config.RequestTimeout, bcpd --request-timeout) is answered then:
// HTTP 503 with Retry-After and, on MCP, the JSON-RPC error -32000
// unavailable, not held until the agent gives up. Here the checkout service takes the
// call and never answers, as a service waiting on a database host that
// went away would (issue 32: calls held over 20 s during a failover).
func TestMCPAnsweredAtTheRequestDeadline(t *testing.T) {
	d := testdb.New(t)
	services := startPlatform(t, []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Payments, platform.Orders}, d.AppURL, nil)
	hung := hungListener(t)
	edgeProc := startPlatformWith(t, []string{platform.Edge}, "", map[string]string{
		platform.Tenants: "http://" + services.InternalAddr, platform.Orders: "http://" + services.InternalAddr,
		platform.Checkout: "http://" + hung,
	}, func(c *platform.Config) { c.Edge.RequestTimeout = 3 * time.Second })
	host := "prazo.localhost"
	setupMerchant(t, services, "Loja Prazo", host, 0)
	prof := newProfileServer(t)
	key, err := services.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: prof, Label: "prazo"}))
	if err != nil {
		t.Fatal(err)
	}
	get := func(id string) rpcAnswer {
		return rpcWithin(t, 30*time.Second, edgeProc.PublicAddr, host, map[string]string{"X-API-Key": key.Msg.GetSecret()},
			`{"jsonrpc":"2.0","id":"`+id+`","method":"tools/call","params":{"name":"get_checkout","arguments":{"meta":{"ucp-agent":{"profile":"`+prof+`"}},"id":"chk_x"}}}`)
	}
	// The first call fills the edge's caches (merchant, API key, agent
	// profile); the second waits for nothing but the checkout service.
	get("g0")
	a := get("g1")
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || a.msg.Error == nil || a.msg.Error.Code != -32000 ||
		a.msg.Error.Data.Code != "unavailable" || string(a.msg.ID) != `"g1"` {
		t.Fatalf("get_checkout with the checkout service hung: HTTP %d Retry-After %q\n%s\nwant 503, Retry-After, -32000 unavailable", a.status, a.header.Get("Retry-After"), a.body)
	}

	// REST: the same deadline, the same answer in its form.
	req, _ := http.NewRequest(http.MethodGet, "http://"+edgeProc.PublicAddr+"/bcp/rest/checkout-sessions/chk_x", nil)
	req.Host = host
	req.Header.Set("BCP-Agent", `profile="`+prof+`"`)
	req.Header.Set("X-API-Key", key.Msg.GetSecret())
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("REST get with the checkout service hung: no answer within 30s: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var flat struct{ Code string }
	_ = json.Unmarshal(body, &flat)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || flat.Code != "unavailable" {
		t.Fatalf("REST get with the checkout service hung: HTTP %d Retry-After %q\n%s\nwant 503, Retry-After, code unavailable", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// hungListener accepts connections and never answers on them (until the
// test ends); it returns its address.
func hungListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// newProfileServer serves an agent profile with the checkout capability
// and returns its URL.
func newProfileServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout")))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/agent.json"
}

// rpcWithin is rawRPC with a client that gives up after patience (a
// request held that long fails the test instead of hanging it).
func rpcWithin(t *testing.T, patience time.Duration, addr, host string, hdr map[string]string, body string) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/bcp/mcp", strings.NewReader(body))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: patience}).Do(req)
	if err != nil {
		t.Fatalf("no answer within %s: %v", patience, err)
	}
	defer resp.Body.Close()
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header}
	a.body, _ = io.ReadAll(resp.Body)
	_ = json.Unmarshal(a.body, &a.msg)
	return a
}
