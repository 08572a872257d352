package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

const consoleHost = "operador.localhost"

// startConsolePlatform is startPlatform with the operator console on
// consoleHost. Usage is flushed only when the test says so (the ticker
// interval is an hour), so counts are exact.
func startConsolePlatform(t *testing.T, dbURL string) *platform.Running {
	t.Helper()
	r, err := platform.Start(context.Background(), platform.Config{
		// With the PSP simulator: the usage test buys by card.
		Services: platform.DevServices, DatabaseURL: dbURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: internalToken, OperatorToken: operatorToken, OperatorHost: consoleHost, MasterKey: masterKey,
		Edge: edge.Config{PublicScheme: "http", UsageFlush: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

var (
	consoleFieldError = regexp.MustCompile(`<span class="field-error" data-field="([a-z]+)">([^<]*)</span>`)
	consoleStat       = regexp.MustCompile(`<dd id="stat-([a-z-]+)"[^>]*>([^<]*)</dd>`)
	tenantLink        = regexp.MustCompile(`<td data-label="Loja"><a href="/lojas/([0-9a-f-]{36})">`)
)

func fieldErrors(body string) map[string]string {
	out := map[string]string{}
	for _, m := range consoleFieldError.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

func consoleStats(body string) map[string]string {
	out := map[string]string{}
	for _, m := range consoleStat.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

func TestOperatorConsole(t *testing.T) {
	d := testdb.New(t)
	r := startConsolePlatform(t, d.AppURL)
	ctx := context.Background()
	ops := operatorClient(r)
	alfa := setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)

	// --- Sign-in: bad tokens refused, then backoff even for the right one.
	b := newBrowser(t, r, consoleHost)
	if p := b.do("GET", "/", nil); p.status != 303 || p.location != "/entrar" {
		t.Fatalf("signed out: %d %q", p.status, p.location)
	}
	login := b.do("GET", "/entrar", nil)
	if login.status != 200 || !strings.Contains(login.body, "Token de operador") {
		t.Fatalf("sign-in page: %d\n%s", login.status, login.body)
	}
	ltok := csrfOf(t, login)
	signIn := func(token string) page {
		return b.do("POST", "/entrar", url.Values{"_csrf": {ltok}, "token": {token}})
	}
	if p := b.do("POST", "/entrar", url.Values{"token": {operatorToken}}); p.status != 403 {
		t.Fatalf("sign-in without CSRF token: %d", p.status)
	}
	for i, want := range []int{401, 401, 401, 429} {
		p := signIn("bcp_op_wrong")
		if p.status != want || !strings.Contains(p.body, "Token incorreto.") {
			t.Fatalf("bad token %d: %d, want %d\n%s", i+1, p.status, want, p.body)
		}
	}
	if p := signIn(operatorToken); p.status != 429 || !strings.Contains(p.body, "Muitas tentativas") {
		t.Fatalf("right token during the backoff: %d", p.status)
	}
	time.Sleep(1100 * time.Millisecond) // the 4th failure locks for 1 s
	p := signIn(operatorToken)
	if p.status != 303 || p.location != "/lojas" {
		t.Fatalf("sign-in: %d %q\n%s", p.status, p.location, p.body)
	}
	set := strings.Join(p.header.Values("Set-Cookie"), "\n")
	for _, want := range []string{"bcp_operador=", "Path=/", "Max-Age=43200", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(set, want) {
			t.Fatalf("session cookie %q lacks %s", set, want)
		}
	}

	// --- Create a tenant through the form: errors next to the fields,
	// typed values kept.
	form := b.do("GET", "/lojas/nova", nil)
	tok := csrfOf(t, form)
	create := func(name, slug, domain string) page {
		return b.do("POST", "/lojas/nova", url.Values{"_csrf": {tok}, "name": {name}, "slug": {slug}, "domain": {domain}, "environment": {"development"}})
	}
	p = create("", "gama-typed", "")
	if p.status != 422 || fieldErrors(p.body)["name"] != "Informe o nome da loja." || fieldErrors(p.body)["domain"] != "Informe o primeiro domínio da loja." ||
		!strings.Contains(p.body, `value="gama-typed"`) {
		t.Fatalf("blank form: %d %v\n%s", p.status, fieldErrors(p.body), p.body)
	}
	p = create("Loja Gama", "", "Operador.LOCALHOST")
	if p.status != 422 || fieldErrors(p.body)["domain"] != "Este domínio é reservado ao console do operador." || !strings.Contains(p.body, `value="Loja Gama"`) {
		t.Fatalf("console host as a tenant domain: %d %v", p.status, fieldErrors(p.body))
	}
	p = create("Loja Gama", "", "alfa.localhost")
	if p.status != 422 || fieldErrors(p.body)["domain"] != "Este domínio já é de outra loja." {
		t.Fatalf("taken domain: %d %v", p.status, fieldErrors(p.body))
	}
	p = create("Loja Gama", "Gama!", "gama.localhost")
	if p.status != 422 || !strings.HasPrefix(fieldErrors(p.body)["slug"], "Use só letras minúsculas") {
		t.Fatalf("bad slug: %d %v", p.status, fieldErrors(p.body))
	}
	p = create("Loja Gama", "", "http://gama.localhost/x")
	if p.status != 422 || !strings.HasPrefix(fieldErrors(p.body)["domain"], "Domínio inválido") {
		t.Fatalf("bad domain: %d %v", p.status, fieldErrors(p.body))
	}
	p = create("Loja Gama", "", "gama.localhost")
	m := regexp.MustCompile(`^/lojas/([0-9a-f-]{36})\?ok=criada$`).FindStringSubmatch(p.location)
	if p.status != 303 || m == nil {
		t.Fatalf("create: %d %q\n%s", p.status, p.location, p.body)
	}
	gamaID := m[1]
	got, err := ops.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: "gama.localhost"}))
	if err != nil || got.Msg.GetTenant().GetId() != gamaID || got.Msg.GetTenant().GetSlug() != "loja-gama" ||
		got.Msg.GetTenant().GetEnvironment() != tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT {
		t.Fatalf("created tenant: %v %v", got, err)
	}
	// Its discovery resolves on its domain at once.
	if res := get(t, r, "GET", "gama.localhost", "/.well-known/bcp", nil); res.status != 200 || !bytes.Contains(res.body, []byte("http://gama.localhost")) {
		t.Fatalf("new tenant's profile: %d %s", res.status, res.body)
	}
	detail := b.do("GET", "/lojas/"+gamaID+"?ok=criada", nil)
	if detail.status != 200 || !strings.Contains(detail.body, "Loja criada.") || !strings.Contains(detail.body, `<span class="badge badge-ok" id="status">Ativa</span>`) ||
		!strings.Contains(detail.body, "<code>gama.localhost</code>") {
		t.Fatalf("detail: %d\n%s", detail.status, detail.body)
	}
	tok = csrfOf(t, detail)

	// --- Suspend: the merchant's MCP endpoint answers 403 tenant_suspended;
	// resume brings it back.
	mcpStatus := func() (int, string) {
		res := get(t, r, "POST", "gama.localhost", "/bcp/mcp", nil)
		// A JSON-RPC error, as everything /bcp/mcp answers.
		var e struct {
			Error struct {
				Data struct{ Code string }
			}
		}
		_ = json.Unmarshal(res.body, &e)
		return res.status, e.Error.Data.Code
	}
	if p := b.do("POST", "/lojas/"+gamaID+"/status", url.Values{"_csrf": {tok}, "acao": {"suspender"}}); p.status != 303 || p.location != "/lojas/"+gamaID+"?ok=suspensa" {
		t.Fatalf("suspend: %d %q", p.status, p.location)
	}
	eventually(t, 5*time.Second, "suspended merchant refused", func() bool { s, c := mcpStatus(); return s == 403 && c == "tenant_suspended" })
	if p := b.do("GET", "/lojas/"+gamaID, nil); !strings.Contains(p.body, `id="status">Suspensa</span>`) || !strings.Contains(p.body, "Reativar loja") {
		t.Fatalf("suspended detail:\n%s", p.body)
	}
	if p := b.do("POST", "/lojas/"+gamaID+"/status", url.Values{"_csrf": {tok}, "acao": {"reativar"}}); p.status != 303 {
		t.Fatalf("resume: %d", p.status)
	}
	eventually(t, 5*time.Second, "resumed merchant served", func() bool { s, _ := mcpStatus(); return s != 403 })
	if s, _ := mcpStatus(); s != 401 { // back to normal: credentials are required
		t.Fatalf("resumed MCP endpoint without credentials: %d", s)
	}

	// --- Domains: add (the console host refused), remove, not the last.
	addDomain := func(domain string) page {
		return b.do("POST", "/lojas/"+gamaID+"/dominios", url.Values{"_csrf": {tok}, "domain": {domain}})
	}
	if p := addDomain("operador.localhost"); p.status != 422 || fieldErrors(p.body)["domain"] != "Este domínio é reservado ao console do operador." || !strings.Contains(p.body, `value="operador.localhost"`) {
		t.Fatalf("console host as a domain: %d %v", p.status, fieldErrors(p.body))
	}
	if p := addDomain("gama2.localhost"); p.status != 303 || p.location != "/lojas/"+gamaID+"?ok=dominio" {
		t.Fatalf("add domain: %d %q\n%s", p.status, p.location, p.body)
	}
	eventually(t, 5*time.Second, "new domain served", func() bool {
		return get(t, r, "GET", "gama2.localhost", "/.well-known/bcp", nil).status == 200
	})
	if p := b.do("GET", "/lojas/"+gamaID, nil); !strings.Contains(p.body, "<code>gama2.localhost</code>") {
		t.Fatalf("added domain not listed:\n%s", p.body)
	}
	if p := b.do("POST", "/lojas/"+gamaID+"/dominios/remover", url.Values{"_csrf": {tok}, "domain": {"gama.localhost"}}); p.status != 303 {
		t.Fatalf("remove domain: %d", p.status)
	}
	if p := b.do("POST", "/lojas/"+gamaID+"/dominios/remover", url.Values{"_csrf": {tok}, "domain": {"gama2.localhost"}}); p.status != 409 || !strings.Contains(p.body, "único domínio") {
		t.Fatalf("remove the last domain: %d", p.status)
	}
	tg, _ := ops.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: gamaID}))
	if ds := tg.Msg.GetTenant().GetDomains(); len(ds) != 1 || ds[0] != "gama2.localhost" || tg.Msg.GetTenant().GetPrimaryDomain() != "gama2.localhost" {
		t.Fatalf("domains after the edits: %v", ds)
	}

	// --- The list: search and keyset pagination.
	for i := range 52 {
		if _, err := ops.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
			Name: fmt.Sprintf("Loja Lote %02d", i), Domains: []string{fmt.Sprintf("lote%02d.localhost", i)},
		})); err != nil {
			t.Fatal(err)
		}
	}
	page1 := b.do("GET", "/lojas", nil)
	ids1 := tenantLink.FindAllStringSubmatch(page1.body, -1)
	next := regexp.MustCompile(`<a href="(/lojas\?apos=[^"]+)" rel="next">`).FindStringSubmatch(page1.body)
	if page1.status != 200 || len(ids1) != 50 || next == nil {
		t.Fatalf("page 1: %d, %d rows, next %v", page1.status, len(ids1), next)
	}
	page2 := b.do("GET", html.UnescapeString(next[1]), nil)
	ids2 := tenantLink.FindAllStringSubmatch(page2.body, -1)
	if page2.status != 200 || len(ids2) != 4 || strings.Contains(page2.body, `rel="next"`) || !strings.Contains(page2.body, "Primeira página") {
		t.Fatalf("page 2: %d, %d rows", page2.status, len(ids2)) // 52 + alfa + gama = 54
	}
	seen := map[string]bool{}
	for _, m := range append(ids1, ids2...) {
		if seen[m[1]] {
			t.Fatalf("tenant %s on both pages", m[1])
		}
		seen[m[1]] = true
	}
	if !seen[gamaID] || !seen[alfa.tenantID.String()] {
		t.Fatal("a tenant is missing from the pages")
	}
	for q, want := range map[string]int{"gama2": 1, "GAMA": 1, "Lote 1": 10, "lote0": 10, "loja-alfa": 1, "nada": 0, "%": 0, "_": 0} {
		res := b.do("GET", "/lojas?q="+url.QueryEscape(q), nil)
		if n := len(tenantLink.FindAllStringSubmatch(res.body, -1)); res.status != 200 || n != want {
			t.Fatalf("search %q: %d, %d results, want %d", q, res.status, n, want)
		}
	}
	if res := b.do("GET", "/lojas?q=nada", nil); !strings.Contains(res.body, "Nenhuma loja encontrada para “nada”.") {
		t.Fatalf("empty search:\n%s", res.body)
	}

	// --- Usage: exact agent request and error counts, and the checkout and
	// order figures of one card purchase.
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		doc := agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount")
		doc = strings.Replace(doc, `"payment_handlers":{`, `"payment_handlers":{"com.example.vendor.delegate_payment":[{"id":"agent_card","version":"2026-07-28","spec":"https://example.vendor.com/specs/delegate-payment","schema":"https://example.vendor.com/schemas/delegate-payment-config.json"}],`, 1)
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(profiles.Close)
	profile := profiles.URL + "/agent.json"
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: alfa.host,
		Handler: &tenantsv1.PaymentHandler{Id: "card", Name: "com.example.vendor.delegate_payment", Position: 1,
			AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`}})); err != nil {
		t.Fatal(err)
	}
	A := &agent{t: t, s: agentSession(t, r, alfa.host, profile), profile: profile, v: v}
	buyer := &shopper{t: t, r: r, db: d, v: v, profile: profile, agents: map[string]*agent{alfa.host: A}, merchant: map[string]merchant{alfa.host: alfa}}
	ready := buyer.ready(alfa.host) // 2 calls, ok: 2 × R$ 59,90 + PAC R$ 15,00
	if done := buyer.complete(alfa.host, ready.ID, uuid.NewString(), cardInstrument("tok_test_4242")); done.Status != "completed" {
		t.Fatalf("card purchase: %s %+v", done.Status, done.Messages) // ok
	}
	line := map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}
	A.call("create_checkout", map[string]any{"checkout": line}) // ok
	if out, err := A.callErr("get_checkout", map[string]any{"id": "chk_nao_existe"}); err != nil || !isErrorResponse(out) {
		t.Fatalf("unknown checkout: %v %v", out, err) // error_response: an error
	}
	if _, err := A.callErr("create_checkout", map[string]any{"checkout": "x"}); err == nil {
		t.Fatal("schema violation accepted") // JSON-RPC invalid params: an error
	}
	key, err := ops.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: alfa.host, AgentProfileUrl: profile}))
	if err != nil {
		t.Fatal(err)
	}
	rest := func(apiKey string) int {
		req, _ := http.NewRequest("POST", "http://"+r.PublicAddr+"/bcp/rest/checkout-sessions", strings.NewReader(`{"line_items":[{"item":{"id":"var_cam"},"quantity":1}]}`))
		req.Host = alfa.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("BCP-Agent", `profile="`+profile+`"`)
		req.Header.Set("X-API-Key", apiKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := rest(key.Msg.GetSecret()); s != 201 { // ok
		t.Fatalf("REST create: %d", s)
	}
	if s := rest("bcp_sk_wrong"); s != 401 { // an error
		t.Fatalf("REST with a bad key: %d", s)
	}
	// Not agent traffic: the profile and the OpenAPI document.
	get(t, r, "GET", alfa.host, "/.well-known/bcp", nil)
	get(t, r, "GET", alfa.host, "/bcp/rest/openapi.json", nil)
	if err := r.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	s := &shopper{t: t, db: d}
	if n := s.sql(`SELECT requests FROM tenants.request_usage WHERE tenant_id = $1 AND day = (now() AT TIME ZONE 'America/Sao_Paulo')::date`, alfa.tenantID); n != 8 {
		t.Fatalf("stored requests %d, want 8", n)
	}
	if n := s.sql(`SELECT errors FROM tenants.request_usage WHERE tenant_id = $1`, alfa.tenantID); n != 3 {
		t.Fatalf("stored errors %d, want 3", n)
	}
	// A second flush adds to the same row.
	if s := rest("bcp_sk_wrong"); s != 401 {
		t.Fatalf("REST with a bad key: %d", s)
	}
	if err := r.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	ad := b.do("GET", "/lojas/"+alfa.tenantID.String(), nil)
	st := consoleStats(ad.body)
	want := map[string]string{"requests": "9", "errors": "4", "error-rate": "44,4 %", "checkouts": "3", "orders": "1", "gmv": "R$ 134,80"}
	if ad.status != 200 || fmt.Sprint(st) != fmt.Sprint(want) || !strings.Contains(ad.body, "Checkouts por status: concluídos 1 · incompletos 2") {
		t.Fatalf("usage on the console: %d %v, want %v\n%s", ad.status, st, want, ad.body)
	}
	// Usage days are São Paulo's, like the stats RPCs' days.
	sp, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		t.Fatal(err)
	}
	u, err := ops.GetUsage(ctx, connect.NewRequest(&tenantsv1.GetUsageRequest{Tenant: "loja-alfa"}))
	if err != nil || u.Msg.GetRequests() != 9 || u.Msg.GetErrors() != 4 || len(u.Msg.GetDays()) != 1 || u.Msg.GetDays()[0].GetDay() != time.Now().In(sp).Format("2006-01-02") {
		t.Fatalf("GetUsage: %v %v", u, err)
	}
	// Gama only ever saw MCP posts without credentials (401): each one an
	// error (how many depends on when the suspension reached the edge's
	// cache; answers to a suspended merchant are not agent traffic).
	if g := consoleStats(b.do("GET", "/lojas/"+gamaID, nil).body); g["requests"] != g["errors"] || atoi(g["requests"]) < 2 || g["error-rate"] != "100,0 %" {
		t.Fatalf("gama's usage: %v", g)
	}
	lote, err := ops.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: "lote07.localhost"}))
	if err != nil {
		t.Fatal(err)
	}
	if l := consoleStats(b.do("GET", "/lojas/"+lote.Msg.GetTenant().GetId(), nil).body); l["requests"] != "0" || l["errors"] != "0" || l["error-rate"] != "—" {
		t.Fatalf("an idle tenant's usage: %v", l)
	}
	// Only the edges record usage: the operator token cannot.
	_, err = ops.RecordUsage(ctx, connect.NewRequest(&tenantsv1.RecordUsageRequest{Counts: []*tenantsv1.UsageCount{{TenantId: alfa.tenantID.String(), Day: "2026-01-01", Requests: 1}}}))
	if !apperr.IsKind(err, apperr.KindPermissionDenied) {
		t.Fatalf("RecordUsage with the operator token: %v", err)
	}

	// --- A merchant host cannot reach the console; the console host is not
	// a tenant.
	for _, path := range []string{"/", "/entrar", "/lojas", "/lojas/" + gamaID} {
		res := get(t, r, "GET", alfa.host, path, nil)
		if res.status != 404 || !bytes.Contains(res.body, []byte(`"code":"not_found"`)) {
			t.Fatalf("merchant host %s: %d %s", path, res.status, res.body)
		}
	}
	mb := newBrowser(t, r, alfa.host)
	if p := mb.do("POST", "/entrar", url.Values{"token": {operatorToken}}); p.status != 404 || p.header.Get("Set-Cookie") != "" {
		t.Fatalf("sign-in on a merchant host: %d", p.status)
	}
	for _, path := range []string{"/.well-known/bcp", "/bcp/mcp", "/admin/entrar"} {
		res := get(t, r, "GET", consoleHost+":80", path, nil)
		if res.status != 404 || !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") {
			t.Fatalf("console host %s: %d %s", path, res.status, res.body)
		}
	}
	if _, err := ops.ResolveHost(ctx, connect.NewRequest(&tenantsv1.ResolveHostRequest{Host: consoleHost})); !apperr.IsKind(err, apperr.KindNotFound) {
		t.Fatalf("console host resolves: %v", err)
	}
	_, err = ops.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Intrusa", Domains: []string{"OPERADOR.localhost."}}))
	if e := apperr.As(err); e == nil || e.Code != "reserved_domain" {
		t.Fatalf("tenant on the console host: %v", err)
	}

	// --- Logout ends the browser's session.
	if p := b.do("POST", "/sair", url.Values{"_csrf": {tok}}); p.status != 303 || p.location != "/entrar" {
		t.Fatalf("logout: %d", p.status)
	}
	if p := b.do("GET", "/lojas", nil); p.status != 303 {
		t.Fatalf("after logout: %d", p.status)
	}
}

// isErrorResponse reports an error_response (ucp.status "error").
func isErrorResponse(out map[string]any) bool {
	u, _ := out["ucp"].(map[string]any)
	return u != nil && u["status"] == "error"
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.ReplaceAll(s, ".", ""))
	if err != nil {
		return -1
	}
	return n
}

// An edge in its own process counts requests and sends them to the tenant
// service over the wire (internal token), including at shutdown; its
// console reaches the services by URL.
func TestUsageFromASeparateEdgeProcess(t *testing.T) {
	d := testdb.New(t)
	services := startPlatform(t, []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Checkout, platform.Payments, platform.Orders}, d.AppURL, nil)
	ctx := context.Background()
	ops := operatorClient(services)
	tr, err := ops.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja Delta", Domains: []string{"delta.localhost"}}))
	if err != nil {
		t.Fatal(err)
	}
	internal := "http://" + services.InternalAddr
	edgeProc, err := platform.Start(ctx, platform.Config{
		Services: []string{platform.Edge}, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		ServiceURLs:   map[string]string{platform.Tenants: internal, platform.Checkout: internal, platform.Orders: internal, platform.Payments: internal},
		InternalToken: internalToken, OperatorToken: operatorToken, OperatorHost: consoleHost,
		Edge: edge.Config{PublicScheme: "http", UsageFlush: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			edgeProc.Stop()
		}
	})
	rest := func() int {
		return get(t, edgeProc, "POST", "delta.localhost", "/bcp/rest/checkout-sessions", http.Header{"X-Api-Key": {"bcp_sk_wrong"}}).status
	}
	for range 3 {
		if s := rest(); s != 401 {
			t.Fatalf("REST without a valid key: %d", s)
		}
	}
	if err := edgeProc.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	usage := func() (int64, int64) {
		u, err := ops.GetUsage(ctx, connect.NewRequest(&tenantsv1.GetUsageRequest{Tenant: "delta.localhost"}))
		if err != nil {
			t.Fatal(err)
		}
		return u.Msg.GetRequests(), u.Msg.GetErrors()
	}
	if n, e := usage(); n != 3 || e != 3 {
		t.Fatalf("after the flush: %d requests, %d errors", n, e)
	}
	// The edge process's console works against the remote services.
	b := newBrowser(t, edgeProc, consoleHost)
	ltok := csrfOf(t, b.do("GET", "/entrar", nil))
	if p := b.do("POST", "/entrar", url.Values{"_csrf": {ltok}, "token": {operatorToken}}); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	st := consoleStats(b.do("GET", "/lojas/"+tr.Msg.GetTenant().GetId(), nil).body)
	if want := map[string]string{"requests": "3", "errors": "3", "error-rate": "100,0 %", "checkouts": "0", "orders": "0", "gmv": "R$ 0,00"}; fmt.Sprint(st) != fmt.Sprint(want) {
		t.Fatalf("console on the edge process: %v, want %v", st, want)
	}
	// Counted but not yet flushed: shutdown sends it.
	if s := rest(); s != 401 {
		t.Fatalf("REST: %d", s)
	}
	edgeProc.Stop()
	stopped = true
	if n, e := usage(); n != 4 || e != 4 {
		t.Fatalf("after the edge stopped: %d requests, %d errors", n, e)
	}
}

// The console in a real browser, on a laptop and on a phone: sign in,
// create a merchant through the form, suspend it; every page fits a
// 390 px screen.
func TestBrowserOperatorConsole(t *testing.T) {
	d := testdb.New(t)
	r := startConsolePlatform(t, d.AppURL)
	setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)
	c := newChrome(t, r)
	op := c.tab(true)

	if st := op.open(consoleHost, "/lojas"); st != 200 || !strings.HasSuffix(op.location(), "/entrar") {
		t.Fatalf("signed out: %d at %s", st, op.location())
	}
	op.screenshot("entrar")
	op.fill("input[name=token]", "errado")
	if st := op.submit("button[type=submit]"); st != 401 || op.text("#login-error") != "Token incorreto." {
		t.Fatalf("wrong token: %d", st)
	}
	op.fill("input[name=token]", operatorToken)
	if st := op.submit("main button[type=submit]"); st != 200 || !strings.HasSuffix(op.location(), "/lojas") || !strings.Contains(op.text("main"), "Loja Alfa") {
		t.Fatalf("sign-in: %d at %s", st, op.location())
	}
	op.screenshot("lojas")

	op.open(consoleHost, "/lojas/nova")
	op.fields("name", "Loja Beta", "domain", "operador.localhost")
	if st := op.submit("main button[type=submit]"); st != 422 || op.text(`[data-field=domain]`) != "Este domínio é reservado ao console do operador." || op.value("input[name=name]") != "Loja Beta" {
		t.Fatalf("reserved domain: %d", st)
	}
	op.screenshot("nova-loja-erro")
	op.fill("input[name=domain]", "beta.localhost")
	if st := op.submit("main button[type=submit]"); st != 200 || op.text(".notice") != "Loja criada." || op.text("#status") != "Ativa" {
		t.Fatalf("create: %d at %s", st, op.location())
	}
	detail := strings.TrimPrefix(op.location(), op.url(consoleHost, ""))
	detail = strings.TrimSuffix(detail, "?ok=criada")
	if st := op.submit(".status-row button"); st != 200 || op.text("#status") != "Suspensa" {
		t.Fatalf("suspend: %d", st)
	}
	op.screenshot("loja-suspensa")

	op.step("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait))
	for _, path := range []string{"/lojas", "/lojas/nova", detail} {
		if st := op.open(consoleHost, path); st != 200 {
			t.Fatalf("%s on a phone: %d", path, st)
		}
		if w := eval[int](op, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
			t.Errorf("%s is %d px wider than a 390 px phone", path, w)
		}
		op.screenshot("celular" + strings.ReplaceAll(path, "/", "-"))
	}
}
