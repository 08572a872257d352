package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// Rate limits (issue 21). Every test uses a rate of 0.01 token/s: nothing
// refills while it runs, so the counts are exact, and the retry hint of an
// empty bucket is 100 s (less the test's own elapsed fraction of a
// second, rounded up).

// setLimits sets a merchant's rate limits through the tenants API, keeping
// its other settings.
func setLimits(t testing.TB, r *platform.Running, host string, l *tenantsv1.RateLimits) {
	t.Helper()
	ctx := context.Background()
	ops := r.ClientsWithToken(operatorToken).Tenants
	tn, err := ops.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: host}))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := ops.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: tn.Msg.GetTenant().GetId()}))
	if err != nil {
		t.Fatal(err)
	}
	s := cur.Msg.GetSettings()
	s.RateLimits = l
	if _, err := ops.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: host, Settings: s})); err != nil {
		t.Fatal(err)
	}
}

// limitAgent is an agent with its own profile URL and API key at host.
type limitAgent struct {
	profile, key string
}

func newLimitAgent(t *testing.T, r *platform.Running, host, profile string) limitAgent {
	t.Helper()
	k, err := r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "ratelimit"}))
	if err != nil {
		t.Fatal(err)
	}
	return limitAgent{profile: profile, key: k.Msg.GetSecret()}
}

// profileServer serves the same agent profile at every path, so each
// path is a distinct agent.
func profileServer(t *testing.T) string {
	t.Helper()
	prof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout")))
	}))
	t.Cleanup(prof.Close)
	return prof.URL
}

// limitAnswer is one answer over either binding.
type limitAnswer struct {
	status     int
	retryAfter string
	rpcCode    int64  // MCP: error.code (0: a result)
	code       string // MCP: error.data.code; REST: body code
	id         string // MCP: the id answered
	body       string
}

// getCheckoutMCP calls get_checkout for an unknown id over MCP: a business
// outcome (not_found) when served, so only the limiter makes it an error.
// Safe from several goroutines.
func getCheckoutMCP(addr, host string, a limitAgent, id int) (limitAnswer, error) {
	return toolMCP(addr, host, a, id, "get_checkout", `"id":"chk_nenhum"`)
}

// toolMCP calls tool with the agent's meta and the given further arguments
// (JSON members) over MCP.
func toolMCP(addr, host string, a limitAgent, id int, tool, args string) (limitAnswer, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"meta":{"ucp-agent":{"profile":%q}},%s}}}`, id, tool, a.profile, args)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/bcp/mcp", strings.NewReader(body))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", a.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return limitAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return limitAnswer{}, err
	}
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int64 `json:"code"`
			Data struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		return limitAnswer{}, fmt.Errorf("HTTP %d, not JSON: %s", resp.StatusCode, b)
	}
	out := limitAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), id: string(msg.ID), body: string(b)}
	if msg.Error != nil {
		out.rpcCode, out.code = msg.Error.Code, msg.Error.Data.Code
	}
	return out, nil
}

// getCheckoutREST is the same over REST.
func getCheckoutREST(addr, host string, a limitAgent) (limitAnswer, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/bcp/rest/checkout-sessions/chk_nenhum", nil)
	req.Host = host
	req.Header.Set("BCP-Agent", `profile="`+a.profile+`"`)
	req.Header.Set("X-API-Key", a.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return limitAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return limitAnswer{}, err
	}
	var body struct{ Code string }
	_ = json.Unmarshal(b, &body)
	return limitAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), code: body.Code, body: string(b)}, nil
}

func mustMCP(t *testing.T, addr, host string, a limitAgent, id int) limitAnswer {
	t.Helper()
	ans, err := getCheckoutMCP(addr, host, a, id)
	if err != nil {
		t.Fatal(err)
	}
	return ans
}

func mustREST(t *testing.T, addr, host string, a limitAgent) limitAnswer {
	t.Helper()
	ans, err := getCheckoutREST(addr, host, a)
	if err != nil {
		t.Fatal(err)
	}
	return ans
}

func wantServed(t *testing.T, what string, a limitAnswer) {
	t.Helper()
	if a.status != http.StatusOK || a.rpcCode != 0 {
		t.Fatalf("%s: HTTP %d %s, want served (200, a result)", what, a.status, a.body)
	}
}

func wantLimitedMCP(t *testing.T, what string, a limitAnswer, id int) {
	t.Helper()
	if a.status != http.StatusTooManyRequests || !nextTokenDue(a.retryAfter) || a.rpcCode != -32000 || a.code != "rate_limited" || a.id != fmt.Sprint(id) {
		t.Fatalf("%s: HTTP %d Retry-After %q %s\nwant 429, Retry-After 1..100, JSON-RPC -32000 rate_limited answering id %d", what, a.status, a.retryAfter, a.body, id)
	}
}

func wantLimitedREST(t *testing.T, what string, a limitAnswer) {
	t.Helper()
	if a.status != http.StatusTooManyRequests || !nextTokenDue(a.retryAfter) || a.code != "rate_limited" {
		t.Fatalf("%s: HTTP %d Retry-After %q %s\nwant 429, Retry-After 1..100, code rate_limited", what, a.status, a.retryAfter, a.body)
	}
}

// nextTokenDue says a Retry-After is the wait for the next token of these
// tests' buckets (0.01 per second: 100 s from the moment a bucket ran
// empty, less the seconds since; a loaded machine takes a few between
// emptying it and asking again, so no exact figure is asserted).
func nextTokenDue(retryAfter string) bool {
	n, err := strconv.Atoi(retryAfter)
	return err == nil && n >= 1 && n <= 100
}

// metric reads one counter's value from a process's /metrics (0 when
// absent).
func metric(t *testing.T, r *platform.Running, series string) string {
	t.Helper()
	resp, err := http.Get("http://" + r.InternalAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return "0"
	}
	return string(m[1])
}

// A merchant limit of burst 3 set through the API: three calls are served
// (MCP and REST share the bucket), then MCP answers HTTP 429 with
// Retry-After and JSON-RPC -32000 rate_limited, REST 429 with Retry-After
// and the flat error body, and the refusals are counted per tenant.
func TestRateLimitPerMerchant(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	host := "limite.localhost"
	m := setupMerchant(t, r, "Loja Limite", host, 0)
	setLimits(t, r, host, &tenantsv1.RateLimits{MerchantRatePerSecond: 0.01, MerchantBurst: 3})
	a := newLimitAgent(t, r, host, profileServer(t)+"/agent.json")

	wantServed(t, "MCP call 1", mustMCP(t, r.PublicAddr, host, a, 1))
	wantServed(t, "REST call 2", mustREST(t, r.PublicAddr, host, a))
	wantServed(t, "MCP call 3", mustMCP(t, r.PublicAddr, host, a, 3))
	wantLimitedMCP(t, "MCP call 4", mustMCP(t, r.PublicAddr, host, a, 4), 4)
	rest := mustREST(t, r.PublicAddr, host, a)
	wantLimitedREST(t, "REST call 5", rest)
	if !strings.Contains(rest.body, `"content":"too many requests from agents of this merchant`) {
		t.Errorf("REST body %s", rest.body)
	}
	// Every operation shares the bucket: the catalog and cart tools too.
	for i, call := range []struct{ tool, args string }{
		{"search_catalog", `"catalog":{"query":"caneca"}`},
		{"create_cart", `"cart":{"line_items":[]}`},
	} {
		ans, err := toolMCP(r.PublicAddr, host, a, 10+i, call.tool, call.args)
		if err != nil {
			t.Fatal(err)
		}
		wantLimitedMCP(t, call.tool+" over MCP", ans, 10+i)
	}
	if v := metric(t, r, `bcp_rate_limited_total{scope="merchant",tenant="`+m.tenantID.String()+`"}`); v != "4" {
		t.Errorf("bcp_rate_limited_total for the merchant = %s, want 4", v)
	}
	if v := metric(t, r, `bcp_rate_limit_leases_total{result="error"}`); v != "0" {
		t.Errorf("lease errors = %s, want 0", v)
	}
}

// A per-agent limit: agent A is refused once it spent its burst while
// agent B of the same merchant is still served, and the merchant's bucket
// is not spent by A's refused calls.
func TestRateLimitPerAgent(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	host := "poragente.localhost"
	m := setupMerchant(t, r, "Loja Por Agente", host, 0)
	// The merchant's burst (5) is A's two, B's two and one more: if A's
	// refused calls took merchant tokens, B's second call would fail.
	setLimits(t, r, host, &tenantsv1.RateLimits{MerchantRatePerSecond: 0.01, MerchantBurst: 5, AgentRatePerSecond: 0.01, AgentBurst: 2})
	base := profileServer(t)
	a := newLimitAgent(t, r, host, base+"/agente-a.json")
	b := newLimitAgent(t, r, host, base+"/agente-b.json")

	wantServed(t, "A 1", mustMCP(t, r.PublicAddr, host, a, 1))
	wantServed(t, "A 2", mustREST(t, r.PublicAddr, host, a))
	for i := 3; i <= 6; i++ {
		wantLimitedMCP(t, fmt.Sprintf("A %d", i), mustMCP(t, r.PublicAddr, host, a, i), i)
	}
	wantLimitedREST(t, "A over REST", mustREST(t, r.PublicAddr, host, a))
	wantServed(t, "B 1", mustMCP(t, r.PublicAddr, host, b, 1))
	wantServed(t, "B 2", mustREST(t, r.PublicAddr, host, b))
	wantLimitedMCP(t, "B 3", mustMCP(t, r.PublicAddr, host, b, 3), 3)
	if v := metric(t, r, `bcp_rate_limited_total{scope="agent",tenant="`+m.tenantID.String()+`"}`); v != "6" {
		t.Errorf("bcp_rate_limited_total for agents = %s, want 6", v)
	}
	if v := metric(t, r, `bcp_rate_limited_total{scope="merchant",tenant="`+m.tenantID.String()+`"}`); v != "0" {
		t.Errorf("bcp_rate_limited_total for the merchant = %s, want 0", v)
	}
}

// Two edge processes in front of one services process share each bucket:
// with a burst of 10 and a rate that refills nothing during the test, 48
// concurrent calls spread over both edges are served at most 10 times in
// all (and at least once), and both edges then refuse.
func TestRateLimitAcrossEdges(t *testing.T) {
	d := testdb.New(t)
	services := startPlatform(t, []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Checkout, platform.Payments, platform.Orders}, d.AppURL, nil)
	urls := map[string]string{platform.Tenants: "http://" + services.InternalAddr, platform.Checkout: "http://" + services.InternalAddr, platform.Orders: "http://" + services.InternalAddr}
	edges := []*platform.Running{startPlatform(t, []string{platform.Edge}, "", urls), startPlatform(t, []string{platform.Edge}, "", urls)}
	host := "duasbordas.localhost"
	setupMerchant(t, services, "Loja Duas Bordas", host, 0)
	const burst = 10
	setLimits(t, services, host, &tenantsv1.RateLimits{MerchantRatePerSecond: 0.01, MerchantBurst: burst})
	a := newLimitAgent(t, services, host, profileServer(t)+"/agent.json")

	var (
		mu                      sync.Mutex
		served, limited, others int
		perEdge                 [2]int
		unexpected              []string
	)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := g % 2
			for i := range 3 {
				ans, err := getCheckoutMCP(edges[e].PublicAddr, host, a, 100*g+i)
				mu.Lock()
				switch {
				case err != nil:
					others++
					unexpected = append(unexpected, err.Error())
				case ans.status == http.StatusOK && ans.rpcCode == 0:
					served++
					perEdge[e]++
				case ans.status == http.StatusTooManyRequests && ans.code == "rate_limited" && ans.retryAfter != "":
					limited++
				default:
					others++
					unexpected = append(unexpected, fmt.Sprintf("HTTP %d %s", ans.status, ans.body))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if others > 0 || served < 1 || served > burst || served+limited != 48 {
		t.Fatalf("48 calls over two edges: %d served (per edge %v), %d limited, %d other %v; want 1..%d served, the rest limited",
			served, perEdge, limited, others, unexpected, burst)
	}
	t.Logf("served %d (per edge %v), limited %d", served, perEdge, limited)
	// The bucket is empty for both edges now, whichever spent it.
	for i, e := range edges {
		ans := mustMCP(t, e.PublicAddr, host, a, 1000+i)
		wantLimitedMCP(t, fmt.Sprintf("edge %d afterwards", i), ans, 1000+i)
		wantLimitedREST(t, fmt.Sprintf("edge %d afterwards over REST", i), mustREST(t, e.PublicAddr, host, a))
	}
}

// The admin settings page shows the effective limits and sets them; the
// tenants service's refusal of a value shows on its field; a form without
// the fields (an older page) keeps the stored limits; the limit then
// applies to agents.
func TestRateLimitAdminSettings(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	host := "adminlimite.localhost"
	setupMerchant(t, r, "Loja Admin Limite", host, 0)
	pw := invite(t, r, host, "dona@adminlimite.com.br")
	b := newBrowser(t, r, host)
	if p := b.signIn("dona@adminlimite.com.br", pw); p.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", p.status)
	}
	st := b.do("GET", "/admin/configuracoes", nil)
	for _, want := range []string{`name="merchant_rate" value="200"`, `name="merchant_burst" value="400"`, `name="agent_rate" value="100"`, `name="agent_burst" value="200"`} {
		if !strings.Contains(st.body, want) {
			t.Fatalf("settings page lacks %s:\n%s", want, st.body)
		}
	}
	form := url.Values{"_csrf": {csrfOf(t, st)}, "name": {"Loja Admin Limite"}, "ttl_hours": {"6"},
		"merchant_rate": {"0,01"}, "merchant_burst": {"2000000"}, "agent_rate": {""}, "agent_burst": {"50"}}
	if p := b.do("POST", "/admin/configuracoes", form); p.status != http.StatusUnprocessableEntity || fieldError("merchant_burst").FindString(p.body) == "" {
		t.Fatalf("burst above the maximum: %d\n%s", p.status, p.body)
	}
	form.Set("merchant_burst", "muitos")
	if p := b.do("POST", "/admin/configuracoes", form); p.status != http.StatusUnprocessableEntity || fieldError("merchant_burst").FindString(p.body) == "" {
		t.Fatalf("burst not a number: %d", p.status)
	}
	form.Set("merchant_burst", "2")
	if p := b.do("POST", "/admin/configuracoes", form); p.status != http.StatusSeeOther {
		t.Fatalf("save limits: %d\n%s", p.status, p.body)
	}
	// An older page without the fields keeps them.
	old := url.Values{"_csrf": {form.Get("_csrf")}, "name": {"Loja Admin Limite"}, "ttl_hours": {"6"}}
	if p := b.do("POST", "/admin/configuracoes", old); p.status != http.StatusSeeOther {
		t.Fatalf("save without limits: %d", p.status)
	}
	st = b.do("GET", "/admin/configuracoes", nil)
	for _, want := range []string{`name="merchant_rate" value="0,01"`, `name="merchant_burst" value="2"`, `name="agent_rate" value="100"`, `name="agent_burst" value="50"`} {
		if !strings.Contains(st.body, want) {
			t.Fatalf("settings page after saving lacks %s", want)
		}
	}
	a := newLimitAgent(t, r, host, profileServer(t)+"/agent.json")
	wantServed(t, "call 1", mustMCP(t, r.PublicAddr, host, a, 1))
	wantServed(t, "call 2", mustREST(t, r.PublicAddr, host, a))
	wantLimitedMCP(t, "call 3", mustMCP(t, r.PublicAddr, host, a, 3), 3)
}

// When the tenants service cannot lease (here a proxy in front of it
// refuses LeaseRateTokens and passes everything else), the edge fails
// open: calls beyond a burst of 1 are served, and each such request is
// counted once (its agent and merchant checks both failed open).
func TestRateLimitFailsOpen(t *testing.T) {
	d := testdb.New(t)
	services := startPlatform(t, []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Checkout, platform.Payments, platform.Orders}, d.AppURL, nil)
	target, _ := url.Parse("http://" + services.InternalAddr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused sync.Mutex
	refusedN := 0
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/LeaseRateTokens") {
			refused.Lock()
			refusedN++
			refused.Unlock()
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	edgeProc := startPlatform(t, []string{platform.Edge}, "", map[string]string{platform.Tenants: front.URL,
		platform.Checkout: "http://" + services.InternalAddr, platform.Orders: "http://" + services.InternalAddr})
	host := "semlimite.localhost"
	setupMerchant(t, services, "Loja Sem Limite", host, 0)
	setLimits(t, services, host, &tenantsv1.RateLimits{MerchantRatePerSecond: 0.01, MerchantBurst: 1, AgentRatePerSecond: 0.01, AgentBurst: 1})
	a := newLimitAgent(t, services, host, profileServer(t)+"/agent.json")
	for i := range 5 {
		wantServed(t, fmt.Sprintf("call %d with leases failing", i), mustMCP(t, edgeProc.PublicAddr, host, a, i))
	}
	wantServed(t, "REST with leases failing", mustREST(t, edgeProc.PublicAddr, host, a))
	refused.Lock()
	n := refusedN
	refused.Unlock()
	if n < 1 {
		t.Fatal("no lease reached the proxy")
	}
	if v := metric(t, edgeProc, `bcp_rate_limit_fail_open_total`); v != "6" {
		t.Errorf("bcp_rate_limit_fail_open_total = %s, want 6", v)
	}
	if v := metric(t, edgeProc, `bcp_rate_limit_leases_total{result="error"}`); v == "0" {
		t.Error("no lease error counted")
	}
}
