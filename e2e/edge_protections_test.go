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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
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
	// A stalled body is answered (400, a JSON-RPC error) with Connection:
	// close, and the connection closed then, not after the idle limit.
	var wg sync.WaitGroup
	var mu sync.Mutex
	open, kept := 0, 0
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(start.Add(bound))
			r := bufio.NewReader(c)
			if resp, err := http.ReadResponse(r, nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != http.StatusBadRequest || !resp.Close {
					mu.Lock()
					kept++
					mu.Unlock()
				}
			}
			if !closedByServer(c, r) {
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
	if kept > 0 {
		t.Errorf("%d of %d stalled bodies not answered 400 with Connection: close", kept, stalled)
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

	// The agent profile in meta, which authentication reads first (raw
	// HTTP: the agent transport would name its own profile in BCP-Agent).
	key2, err := s.r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: s.host, AgentProfileUrl: s.profile, Label: "nul"}))
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"meta": map[string]any{"ucp-agent": map[string]any{"profile": s.profile + "\x00"}}, "checkout": fullCreate()})
	pa := rawRPC(t, s.r.PublicAddr, s.host, map[string]string{"X-API-Key": key2.Msg.GetSecret()},
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_checkout","arguments":`+string(args)+`}}`)
	var pdata struct {
		Error struct {
			Code int64 `json:"code"`
			Data struct {
				Code  string   `json:"code"`
				Paths []string `json:"paths"`
			} `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal(pa.body, &pdata)
	if pdata.Error.Code != -32602 || pdata.Error.Data.Code != "invalid_params" || !slices.Equal(pdata.Error.Data.Paths, []string{"$.meta['ucp-agent'].profile"}) {
		t.Errorf("NUL in meta['ucp-agent'].profile: HTTP %d %s", pa.status, pa.body)
	}

	// Nothing was stored on the way: the checkout is as created.
	if _, got := a.call("get_checkout", map[string]any{"id": c.ID}); got.Buyer == nil || got.Buyer.FirstName != "Ana" {
		t.Fatalf("checkout after the refused updates: buyer %+v", got.Buyer)
	}
}

// Behind authentication, on a real listener: every MCP transport error is
// a JSON-RPC error with its code and HTTP status (issue 32), a batch is
// refused before any of its calls runs, and a NUL or invalid UTF-8 in a
// cart tool's arguments (carts were never checked: -32603 and HTTP 500
// from PostgreSQL) is invalid params at its path over both bindings.
func TestMCPTransportAndCartGuardBehindAuthentication(t *testing.T) {
	s := newProtectedShop(t, "transporte.localhost", nil)
	key, err := s.r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: s.host, AgentProfileUrl: s.profile, Label: "transport"}))
	if err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"X-API-Key": key.Msg.GetSecret()}
	with := func(extra map[string]string) map[string]string {
		h := maps.Clone(auth)
		maps.Copy(h, extra)
		return h
	}
	meta := `"meta":{"ucp-agent":{"profile":"` + s.profile + `"}}`
	create := func(id int, cart string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_cart","arguments":{%s,"cart":%s}}}`, id, meta, cart)
	}
	okCart := `{"line_items":[{"item":{"id":"var_cam"},"quantity":1}]}`
	for _, tc := range []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		code   int64
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,`, nil, 400, -32700},
		{"100 000-deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), nil, 400, -32700},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"carts/steal"}`, nil, 404, -32601},
		{"empty batch", `[]`, nil, 400, -32600},
		{"batch of two tools/call", "[" + create(3, okCart) + "," + create(4, okCart) + "]", map[string]string{"MCP-Protocol-Version": "2025-03-26"}, 400, -32600},
		{"wrong Content-Type", create(5, okCart), map[string]string{"Content-Type": "text/plain"}, 415, -32600},
		{"wrong Accept", create(6, okCart), map[string]string{"Accept": "application/json"}, 406, -32600},
	} {
		a := rawRPC(t, s.r.PublicAddr, s.host, with(tc.hdr), tc.body)
		// One error object answering the request; for the batch, not an
		// array of answers: none of its calls ran.
		if a.status != tc.status || a.msg.Error == nil || a.msg.Error.Code != tc.code || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") || !bytes.HasPrefix(a.body, []byte("{")) {
			t.Errorf("%s: HTTP %d %.300s, want %d and JSON-RPC %d", tc.name, a.status, a.body, tc.status, tc.code)
		}
	}
	// NUL and invalid UTF-8 in a cart's strings, over MCP and REST.
	rest := restClientFor(t, s.r, s.host, s.profile)
	for _, tc := range []struct {
		name, cart, path string
	}{
		{"NUL in an item id", `{"line_items":[{"item":{"id":"var\u0000cam"},"quantity":1}]}`, "$.cart.line_items[0].item.id"},
		{"NUL in the buyer's e-mail", `{"line_items":[{"item":{"id":"var_cam"},"quantity":1}],"buyer":{"email":"a\u0000@example.com"}}`, "$.cart.buyer.email"},
		{"invalid UTF-8 in a discount code", "{\"line_items\":[{\"item\":{\"id\":\"var_cam\"},\"quantity\":1}],\"discounts\":{\"codes\":[\"BEM\xffVINDO\"]}}", "$.cart.discounts.codes[0]"},
	} {
		a := rawRPC(t, s.r.PublicAddr, s.host, auth, create(10, tc.cart))
		var p struct {
			Error struct {
				Code int64 `json:"code"`
				Data struct {
					Code  string   `json:"code"`
					Paths []string `json:"paths"`
				} `json:"data"`
			} `json:"error"`
		}
		_ = json.Unmarshal(a.body, &p)
		if p.Error.Code != -32602 || p.Error.Data.Code != "invalid_params" || !slices.Equal(p.Error.Data.Paths, []string{tc.path}) {
			t.Errorf("MCP %s: HTTP %d %.300s, want -32602 at %s", tc.name, a.status, a.body, tc.path)
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.r.PublicAddr+"/bcp/rest/carts", strings.NewReader(tc.cart))
		req.Header.Set("Content-Type", "application/json")
		resp, err := rest.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var flat struct {
			Code  string   `json:"code"`
			Paths []string `json:"paths"`
		}
		_ = json.Unmarshal(raw, &flat)
		if resp.StatusCode != http.StatusBadRequest || flat.Code != "invalid_params" || !slices.Equal(flat.Paths, []string{tc.path}) {
			t.Errorf("REST %s: HTTP %d %s, want 400 at %s", tc.name, resp.StatusCode, raw, tc.path)
		}
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

// rpcAnswer is a raw JSON-RPC answer over HTTP.
type rpcAnswer struct {
	status int
	header http.Header
	body   []byte
	msg    struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int64 `json:"code"`
			Data struct {
				Code    string `json:"code"`
				Content string `json:"content"`
			} `json:"data"`
		} `json:"error"`
	}
}

// rawRPC posts one JSON-RPC request to /bcp/mcp at host, with the given
// extra headers, and decodes the answer.
func rawRPC(t *testing.T, addr, host string, hdr map[string]string, body string) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/bcp/mcp", strings.NewReader(body))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header}
	a.body, _ = io.ReadAll(resp.Body)
	_ = json.Unmarshal(a.body, &a.msg)
	return a
}

// While PostgreSQL is down, /bcp/mcp answers every tool call with a
// JSON-RPC error: -32000, data.code "unavailable", HTTP 503 and
// Retry-After; once it is back, calls succeed again.
func TestMCPDuringDatabaseOutage(t *testing.T) {
	cl := testdb.NewCluster(t)
	r := startPlatform(t, platform.AllServices, cl.AppURL, nil)
	host := "fora.localhost"
	setupMerchant(t, r, "Loja Fora", host, 0)
	prof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout")))
	}))
	t.Cleanup(prof.Close)
	profile := prof.URL + "/agent.json"
	key, err := r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "outage"}))
	if err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{"X-API-Key": key.Msg.GetSecret()}
	meta := `"meta":{"ucp-agent":{"profile":"` + profile + `"}}`
	create := rawRPC(t, r.PublicAddr, host, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_checkout","arguments":{`+meta+
		`,"checkout":{"line_items":[{"item":{"id":"var_cam"},"quantity":1}]}}}}`)
	var created struct {
		StructuredContent struct {
			ID string `json:"id"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(create.msg.Result, &created); create.status != 200 || err != nil || created.StructuredContent.ID == "" {
		t.Fatalf("create before the outage: HTTP %d %s", create.status, create.body)
	}
	get := func(id int) rpcAnswer {
		return rawRPC(t, r.PublicAddr, host, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_checkout","arguments":{%s,"id":%q}}}`,
			id, meta, created.StructuredContent.ID))
	}

	cl.Stop(t)
	// Every answer during the outage, from the first on: the caches the
	// edge keeps (hosts, API keys, profiles) change which layer notices,
	// never the shape of the answer.
	for i := range 20 {
		id := 100 + i
		a := get(id)
		if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") ||
			a.msg.Error == nil || a.msg.Error.Code != -32000 || a.msg.Error.Data.Code != "unavailable" || string(a.msg.ID) != strconv.Itoa(id) {
			t.Fatalf("get_checkout %d during the outage: HTTP %d Retry-After %q\n%s\nwant 503, Retry-After, a JSON-RPC error -32000 unavailable answering id %d",
				i, a.status, a.header.Get("Retry-After"), a.body, id)
		}
		time.Sleep(100 * time.Millisecond)
	}

	cl.Start(t)
	// Recovery is asynchronous (pool and change feed reconnect).
	eventually(t, 60*time.Second, "get_checkout after PostgreSQL is back", func() bool {
		a := get(1000)
		return a.status == http.StatusOK && a.msg.Error == nil && len(a.msg.Result) > 0 && !bytes.Contains(a.msg.Result, []byte(`"isError":true`))
	})
}

// A service the edge needs that is down (here checkout, unreachable from
// an edge-only process) gives the same answer as a database outage: the
// tool call's JSON-RPC error -32000 unavailable travels with HTTP 503 and
// Retry-After, not the SDK's 200.
func TestMCPWhenCheckoutServiceIsDown(t *testing.T) {
	d := testdb.New(t)
	services := startPlatform(t, []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Payments, platform.Orders}, d.AppURL, nil)
	edgeProc := startPlatform(t, []string{platform.Edge}, "", map[string]string{
		platform.Tenants: "http://" + services.InternalAddr, platform.Orders: "http://" + services.InternalAddr,
		platform.Checkout: "http://127.0.0.1:1", // nothing listens there
	})
	host := "semcheckout.localhost"
	setupMerchant(t, services, "Loja Sem Checkout", host, 0)
	prof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout")))
	}))
	t.Cleanup(prof.Close)
	profile := prof.URL + "/agent.json"
	key, err := services.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "down"}))
	if err != nil {
		t.Fatal(err)
	}
	a := rawRPC(t, edgeProc.PublicAddr, host, map[string]string{"X-API-Key": key.Msg.GetSecret()},
		`{"jsonrpc":"2.0","id":"g1","method":"tools/call","params":{"name":"get_checkout","arguments":{"meta":{"ucp-agent":{"profile":"`+profile+`"}},"id":"chk_x"}}}`)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || a.msg.Error == nil || a.msg.Error.Code != -32000 ||
		a.msg.Error.Data.Code != "unavailable" || string(a.msg.ID) != `"g1"` {
		t.Fatalf("get_checkout with checkout down: HTTP %d Retry-After %q\n%s", a.status, a.header.Get("Retry-After"), a.body)
	}
}

// /bcp/mcp validates Origin (MCP streamable HTTP): no Origin (an agent on
// a server) and the merchant's own origins are served, any other browser
// origin gets 403 with a JSON-RPC error.
func TestMCPOriginValidation(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	setupMerchant(t, r, "Loja Origem", "origem.localhost", 0)
	setupMerchant(t, r, "Loja Vizinha", "vizinha.localhost", 0)
	_, port, _ := net.SplitHostPort(r.PublicAddr)
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"", http.StatusOK},
		{"http://origem.localhost:" + port, http.StatusOK},
		{"https://origem.localhost", http.StatusOK},
		{"https://evil.example", http.StatusForbidden},
		{"http://vizinha.localhost:" + port, http.StatusForbidden}, // another merchant of the platform
		{"null", http.StatusForbidden},
		{"ftp://origem.localhost", http.StatusForbidden},
	} {
		hdr := map[string]string{}
		if tc.origin != "" {
			hdr["Origin"] = tc.origin
		}
		a := rawRPC(t, r.PublicAddr, "origem.localhost", hdr, list)
		if a.status != tc.status {
			t.Errorf("Origin %q: HTTP %d, want %d\n%s", tc.origin, a.status, tc.status, a.body)
			continue
		}
		if tc.status == http.StatusOK && (a.msg.Error != nil || !bytes.Contains(a.msg.Result, []byte(`"create_checkout"`))) {
			t.Errorf("Origin %q: not the tool list: %s", tc.origin, a.body)
		}
		if tc.status == http.StatusForbidden && (a.msg.Error == nil || a.msg.Error.Code != -32000 || a.msg.Error.Data.Code != "origin_not_allowed" || string(a.msg.ID) != "7") {
			t.Errorf("Origin %q: want JSON-RPC -32000 origin_not_allowed answering id 7, got %s", tc.origin, a.body)
		}
	}
}

// REST bodies are the checkout object (upstream OpenAPI): a body carrying
// the checkout's id and other response-only members is accepted and those
// members are ignored; an id that names another checkout than the URL is
// refused at $.checkout.id.
func TestRESTBodyWithResponseMembers(t *testing.T) {
	s := newProtectedShop(t, "eco.localhost", nil)
	c := restClientFor(t, s.r, s.host, s.profile)
	base := "http://" + s.r.PublicAddr + "/bcp/rest/checkout-sessions"
	send := func(method, url string, body []byte) (int, map[string]any, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return resp.StatusCode, m, raw
	}

	status, m, raw := send("POST", base, []byte(`{"id":"chk_mine","status":"completed","currency":"BRL",
		"ucp":{"version":"2026-07-28"},"totals":[{"type":"total","amount":1}],
		"messages":[{"type":"error","code":"forged","content":"x","severity":"recoverable"}],
		"links":[{"type":"privacy_policy","url":"https://evil.example/p"}],"continue_url":"https://evil.example/c",
		"line_items":[{"item":{"id":"var_cam"},"quantity":1}]}`))
	if status != http.StatusCreated {
		t.Fatalf("create with response members: HTTP %d %s", status, raw)
	}
	co := decodeCheckout(t, m)
	if co.ID == "chk_mine" || co.Status != "incomplete" || totals(co)["total"] != 5990 || hasMessage(co, "error", "forged", "") ||
		strings.Contains(co.ContinueURL, "evil.example") || strings.Contains(string(raw), "evil.example") {
		t.Fatalf("create did not ignore the response members: %s", raw)
	}

	// The answer sent back as is (a client that round-trips the object).
	status, m, raw = send("PUT", base+"/"+co.ID, raw)
	if status != http.StatusOK || m["id"] != co.ID {
		t.Fatalf("update with the checkout as received: HTTP %d %s", status, raw)
	}
	// An id naming another checkout is a client mix-up, not ignorable.
	status, m, raw = send("PUT", base+"/"+co.ID, []byte(`{"id":"chk_other","line_items":[{"item":{"id":"var_cam"},"quantity":1}]}`))
	if status != http.StatusBadRequest || m["code"] != "invalid_params" || !slices.Equal(toStrings(m["paths"]), []string{"$.checkout.id"}) {
		t.Fatalf("update with another checkout's id: HTTP %d %s", status, raw)
	}

	// MCP keeps refusing checkout.id: its tools name the checkout in id.
	_, err := s.agent.callErr("update_checkout", map[string]any{"id": co.ID, "checkout": map[string]any{"id": co.ID, "line_items": []any{}}})
	if code, data := rpcError(t, err); code != -32602 || !slices.Equal(toStrings(data["paths"]), []string{"$.checkout.id"}) {
		t.Fatalf("MCP checkout.id: %d %v", code, data)
	}
}

// boolSchemas lists the JSONPaths in a JSON Schema where a subschema is a
// bare boolean. additionalProperties / unevaluated* booleans are the usual
// closed-object spelling and strict MCP clients accept them; everywhere
// else (property schemas, items, combinators, $defs) they are refused.
func boolSchemas(v any, path string) []string {
	var out []string
	schema := func(x any, p string) {
		if _, ok := x.(bool); ok {
			out = append(out, p)
			return
		}
		out = append(out, boolSchemas(x, p)...)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for k, x := range m {
		p := path + member(k)
		switch k {
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if mm, ok := x.(map[string]any); ok {
				for name, sub := range mm {
					schema(sub, p+member(name))
				}
			}
		case "items", "contains", "propertyNames", "not", "if", "then", "else":
			schema(x, p)
		case "allOf", "anyOf", "oneOf", "prefixItems":
			if list, ok := x.([]any); ok {
				for i, sub := range list {
					schema(sub, fmt.Sprintf("%s[%d]", p, i))
				}
			}
		case "additionalProperties", "unevaluatedProperties", "unevaluatedItems":
			if _, ok := x.(bool); !ok {
				out = append(out, boolSchemas(x, p)...)
			}
		}
	}
	return out
}

// tools/list publishes no bare boolean subschema (the MCP inspector's
// --strict refuses them), for a merchant with every checkout capability;
// the checkout.id rule keeps working (TestRESTBodyWithResponseMembers and
// the bcpschema tests check its error path).
func TestToolSchemasHaveNoBareBooleans(t *testing.T) {
	s := newProtectedShop(t, "estrito.localhost", nil)
	tools, err := s.agent.s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) < 6 {
		t.Fatalf("%d tools", len(tools.Tools))
	}
	for _, tool := range tools.Tools {
		for what, sch := range map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema} {
			raw, _ := json.Marshal(sch)
			var v any
			_ = json.Unmarshal(raw, &v)
			if bad := boolSchemas(v, "$"); len(bad) > 0 {
				slices.Sort(bad)
				t.Errorf("%s %s: bare boolean schemas at %v", tool.Name, what, bad)
			}
		}
	}
}
