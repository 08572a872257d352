package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/platform"
	"github.com/bcpdev/bcp/internal/testdb"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
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

// nulLeaf is one string of a payload with a NUL put in it.
type nulLeaf struct {
	path    string // JSONPath under the tool arguments
	payload any    // the whole payload, with this one string changed
}

// nulLeaves returns, for every string in v (member names included), a copy
// of v with a NUL in that string; paths start at root.
func nulLeaves(v any, root string) []nulLeaf {
	var out []nulLeaf
	var walk func(cur any, path string, set func(any) any)
	walk = func(cur any, path string, set func(any) any) {
		switch c := cur.(type) {
		case string:
			out = append(out, nulLeaf{path: path, payload: set(c[:len(c)/2] + "\x00" + c[len(c)/2:])})
		case []any:
			for i, e := range c {
				walk(e, fmt.Sprintf("%s[%d]", path, i), func(x any) any {
					n := slices.Clone(c)
					n[i] = x
					return set(n)
				})
			}
		case map[string]any:
			for k, e := range c {
				walk(e, path+member(k), func(x any) any {
					n := maps.Clone(c)
					n[k] = x
					return set(n)
				})
			}
		}
	}
	walk(v, root, func(x any) any { return x })
	return out
}

// member is k as a JSONPath segment: .k for identifiers, ['k'] otherwise.
func member(k string) string {
	if regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(k) {
		return "." + k
	}
	return "['" + k + "']"
}

// fullCreate is a create_checkout checkout with every kind of string the
// BCP schema has for it.
func fullCreate() map[string]any {
	return map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":      map[string]any{"email": "ana@example.com", "first_name": "Ana", "last_name": "Souza", "phone_number": "+5511999990000", "consent": map[string]any{"marketing": true}},
		"context":    map[string]any{"address_country": "BR", "address_region": "SP", "postal_code": "01310-100", "language": "pt-BR", "currency": "BRL"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{map[string]any{
			"street_address": "Av. Paulista, 1000", "extended_address": "apto 12", "address_locality": "São Paulo", "address_region": "SP",
			"postal_code": "01310-100", "address_country": "BR", "first_name": "Ana", "last_name": "Souza", "phone_number": "+5511999990000"}}}}},
		"discounts": map[string]any{"codes": []any{"BEMVINDO10"}},
		"signals":   map[string]any{"br.dev.bcp.buyer_ip": "203.0.113.7", "br.dev.bcp.user_agent": "Mozilla/5.0"},
	}
}

// NUL characters in any string of any tool's arguments are refused with
// -32602 (REST 400) naming the string's path, never stored and never an
// internal error.
func TestNULInArgumentsIsInvalidParams(t *testing.T) {
	s := newProtectedShop(t, "nul.localhost", nil)
	a := s.agent
	rest := restClientFor(t, s.r, s.host, s.profile)

	// The payload itself is fine.
	_, c := a.call("create_checkout", map[string]any{"checkout": fullCreate()})
	if c.ID == "" {
		t.Fatal("full create: no checkout")
	}

	wantMCP := func(tool string, args map[string]any, path string) {
		t.Helper()
		_, err := a.callErr(tool, args)
		if err == nil {
			t.Errorf("%s with a NUL at %s: accepted", tool, path)
			return
		}
		code, data := rpcError(t, err)
		if code != -32602 || data["code"] != "invalid_params" || !slices.Equal(toStrings(data["paths"]), []string{path}) {
			t.Errorf("%s with a NUL at %s: JSON-RPC %d %v, want -32602 invalid_params at [%s]", tool, path, code, data, path)
		}
	}
	wantREST := func(method, path string, body any, want string) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, "http://"+s.r.PublicAddr+"/bcp/rest"+path, rd)
		req.Header.Set("Idempotency-Key", uuid.NewString())
		resp, err := rest.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var flat struct {
			Code  string   `json:"code"`
			Paths []string `json:"paths"`
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &flat)
		if resp.StatusCode != http.StatusBadRequest || flat.Code != "invalid_params" || !slices.Equal(flat.Paths, []string{want}) {
			t.Errorf("REST %s %s with a NUL at %s: HTTP %d %s", method, path, want, resp.StatusCode, raw)
		}
	}

	leaves := nulLeaves(fullCreate(), "$.checkout")
	if len(leaves) < 23 {
		t.Fatalf("only %d strings in the create payload", len(leaves))
	}
	for _, l := range leaves {
		wantMCP("create_checkout", map[string]any{"checkout": l.payload}, l.path)
		wantREST("POST", "/checkout-sessions", l.payload, l.path)
		wantMCP("update_checkout", map[string]any{"id": c.ID, "checkout": l.payload}, l.path)
	}
	// A member name with a NUL.
	bad := fullCreate()
	bad["buyer"].(map[string]any)["e\x00mail"] = "x@example.com"
	wantMCP("create_checkout", map[string]any{"checkout": bad}, `$.checkout.buyer['e\u0000mail']`)

	// Ids of every tool that takes one.
	key := func() map[string]any {
		return map[string]any{"ucp-agent": map[string]any{"profile": s.profile}, "idempotency-key": uuid.NewString()}
	}
	nulID := c.ID + "\x00x"
	wantMCP("get_checkout", map[string]any{"id": nulID}, "$.id")
	wantMCP("update_checkout", map[string]any{"id": nulID, "checkout": map[string]any{"line_items": fullCreate()["line_items"]}}, "$.id")
	wantMCP("complete_checkout", map[string]any{"meta": key(), "id": nulID, "checkout": map[string]any{"payment": map[string]any{"instruments": []any{}}}}, "$.id")
	wantMCP("cancel_checkout", map[string]any{"meta": key(), "id": nulID}, "$.id")
	wantMCP("get_order", map[string]any{"id": "ord_\x00"}, "$.id")
	for _, p := range []string{"/checkout-sessions/", "/orders/"} {
		wantREST("GET", p+url.PathEscape(nulID), nil, "$.id")
	}
	wantREST("POST", "/checkout-sessions/"+url.PathEscape(nulID)+"/cancel", nil, "$.id")

	// Nothing was stored on the way: the checkout is as created.
	if _, got := a.call("get_checkout", map[string]any{"id": c.ID}); got.Buyer == nil || got.Buyer.FirstName != "Ana" {
		t.Fatalf("checkout after the refused updates: buyer %+v", got.Buyer)
	}
}

// restClientFor is an HTTP client acting for profile at host with a fresh
// API key bound to it.
func restClientFor(t *testing.T, r *platform.Running, host, profile string) *http.Client {
	t.Helper()
	key, err := r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "e2e-rest"}))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, APIKey: key.Msg.GetSecret(), Host: host}}
}
