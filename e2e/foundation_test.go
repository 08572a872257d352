package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	edgev1 "github.com/bcpdev/bcp/proto/gen/bcp/edge/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

type profileDoc struct {
	UCP struct {
		Version  string `json:"version"`
		Services map[string][]struct {
			Version, Spec, Transport, Schema, Endpoint string
		} `json:"services"`
		Capabilities    map[string][]map[string]any `json:"capabilities"`
		PaymentHandlers map[string][]struct {
			ID                   string           `json:"id"`
			Version              string           `json:"version"`
			AvailableInstruments []map[string]any `json:"available_instruments"`
			Config               map[string]any   `json:"config"`
		} `json:"payment_handlers"`
	} `json:"ucp"`
	SigningKeys []map[string]any `json:"signing_keys"`
}

func createTenant(t *testing.T, c tenantsv1connect.TenantServiceClient, name string, domains ...string) *tenantsv1.Tenant {
	t.Helper()
	r, err := c.CreateTenant(context.Background(), connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: name, Domains: domains}))
	if err != nil {
		t.Fatalf("create tenant %s: %v", name, err)
	}
	return r.Msg.GetTenant()
}

func TestDiscoveryProfilePerMerchant(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	op := operatorClient(r)
	ctx := context.Background()
	a := createTenant(t, op, "Loja Alfa", "alfa.localhost")
	b := createTenant(t, op, "Loja Beta", "beta.localhost")
	if a.GetSlug() != "loja-alfa" || a.GetPrimaryDomain() != "alfa.localhost" || a.GetStatus() != tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE {
		t.Fatalf("tenant A = %v", a)
	}
	// The handler's PSP settings (checked when set: a client certificate
	// with its key, the webhook CA), none of which the profile may show.
	ca, err := pki.NewCA("Banco Alfa CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueClient("loja-alfa", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secrets, _ := json.Marshal(handlersecrets.Secrets{PSP: &handlersecrets.PixPSP{
		BaseURL: "https://pix.banco-alfa.example/api/v2", TokenURL: "https://pix.banco-alfa.example/oauth/token",
		ClientID: "cli-alfa", ClientSecret: "s3cr3t-psp", CertificatePEM: string(cert.CertPEM), PrivateKeyPEM: string(cert.KeyPEM),
		Webhook: handlersecrets.Webhook{CAPEM: string(ca.CertPEM)},
	}})
	_, err = op.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{
		Tenant: "alfa.localhost", SecretsJson: string(secrets),
		Handler: &tenantsv1.PaymentHandler{Id: "pix_alfa", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`, ConfigJson: `{"environment":"sandbox"}`},
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(r.PublicAddr)

	resp := get(t, r, "GET", "ALFA.localhost.:"+port, "/.well-known/bcp", nil)
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if got := resp.header.Get("Cache-Control"); got != "public, max-age=300" {
		t.Errorf("Cache-Control = %q", got)
	}
	if ct := resp.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	etag := resp.header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
		t.Errorf("ETag %q is not a strong validator", etag)
	}
	if strings.Contains(string(resp.body), "s3cr3t-psp") || strings.Contains(string(resp.body), "PRIVATE KEY") || strings.Contains(string(resp.body), `"d"`) {
		t.Fatal("profile leaks a secret or a private key member")
	}
	validator, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if err := validator.ValidateBusinessProfile(resp.body); err != nil {
		t.Fatalf("profile fails the BCP business profile schema: %v\n%s", err, resp.body)
	}
	// The check has teeth: a profile without its registries fails it.
	if err := validator.ValidateBusinessProfile([]byte(`{"ucp":{"version":"2026-07-28","services":{}}}`)); err == nil {
		t.Fatal("validator accepted a profile without payment_handlers")
	}
	var pa profileDoc
	if err := json.Unmarshal(resp.body, &pa); err != nil {
		t.Fatal(err)
	}
	if pa.UCP.Version != "2026-07-28" {
		t.Errorf("ucp.version = %q", pa.UCP.Version)
	}
	svc := pa.UCP.Services["br.dev.bcp.shopping"]
	if len(svc) != 2 || svc[0].Transport != "mcp" || svc[0].Endpoint != "http://alfa.localhost:"+port+"/bcp/mcp" || svc[0].Version != "2026-07-28" ||
		svc[1].Transport != "rest" || svc[1].Endpoint != "http://alfa.localhost:"+port+"/bcp/rest" || svc[1].Schema != "https://bcp.dev.br/draft/services/shopping/rest.openapi.json" {
		t.Errorf("service entry = %+v", svc)
	}
	for _, name := range []string{"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount", "br.dev.bcp.shopping.buyer_consent", "br.dev.bcp.shopping.order"} {
		entries := pa.UCP.Capabilities[name]
		if len(entries) != 1 || entries[0]["version"] != "2026-07-28" {
			t.Errorf("capability %s = %v", name, entries)
		}
	}
	if ext := pa.UCP.Capabilities["br.dev.bcp.shopping.fulfillment"]; len(ext) == 1 && ext[0]["extends"] != "br.dev.bcp.shopping.checkout" {
		t.Errorf("fulfillment extends %v", ext[0]["extends"])
	}
	if _, ok := pa.UCP.Capabilities["br.dev.bcp.shopping.ap2_mandate"]; ok {
		t.Error("ap2_mandate is advertised but not enabled")
	}
	pix := pa.UCP.PaymentHandlers["br.dev.bcp.pix"]
	if len(pix) != 1 || pix[0].ID != "pix_alfa" || pix[0].Config["environment"] != "sandbox" || pix[0].AvailableInstruments[0]["type"] != "pix" {
		t.Errorf("pix handler = %+v", pix)
	}
	if len(pa.SigningKeys) != 1 || pa.SigningKeys[0]["kty"] != "EC" || pa.SigningKeys[0]["crv"] != "P-256" || pa.SigningKeys[0]["alg"] != "ES256" || pa.SigningKeys[0]["kid"] == "" {
		t.Errorf("signing keys = %v", pa.SigningKeys)
	}

	// The other merchant: its own endpoint, its own key, no handler of A's.
	rb := get(t, r, "GET", "beta.localhost:"+port, "/.well-known/bcp", nil)
	if err := validator.ValidateBusinessProfile(rb.body); err != nil {
		t.Fatalf("profile B fails the schema: %v", err)
	}
	var pb profileDoc
	if rb.status != 200 || json.Unmarshal(rb.body, &pb) != nil {
		t.Fatalf("tenant B profile: %d %s", rb.status, rb.body)
	}
	if pb.UCP.Services["br.dev.bcp.shopping"][0].Endpoint != "http://beta.localhost:"+port+"/bcp/mcp" {
		t.Errorf("B endpoint = %v", pb.UCP.Services)
	}
	if len(pb.SigningKeys) != 1 || pb.SigningKeys[0]["kid"] == pa.SigningKeys[0]["kid"] || pb.SigningKeys[0]["x"] == pa.SigningKeys[0]["x"] {
		t.Errorf("tenants share a signing key: %v vs %v", pb.SigningKeys, pa.SigningKeys)
	}
	if len(pb.UCP.PaymentHandlers) != 0 {
		t.Errorf("B advertises handlers it never configured: %v", pb.UCP.PaymentHandlers)
	}
	if b.GetId() == a.GetId() {
		t.Fatal("same tenant id")
	}

	// Conditional requests, HEAD, methods, no redirects.
	nm := get(t, r, "GET", "alfa.localhost:"+port, "/.well-known/bcp", http.Header{"If-None-Match": {`"other", ` + etag}})
	if nm.status != http.StatusNotModified || len(nm.body) != 0 || nm.header.Get("ETag") != etag {
		t.Errorf("If-None-Match: status %d, %d body bytes, etag %q", nm.status, len(nm.body), nm.header.Get("ETag"))
	}
	if h := get(t, r, "HEAD", "alfa.localhost:"+port, "/.well-known/bcp", nil); h.status != 200 || len(h.body) != 0 || h.header.Get("ETag") != etag {
		t.Errorf("HEAD: %d, %d bytes", h.status, len(h.body))
	}
	if p := get(t, r, "POST", "alfa.localhost", "/.well-known/bcp", nil); p.status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", p.status)
	}
	if s := get(t, r, "GET", "alfa.localhost", "/.well-known/bcp/", nil); s.status >= 300 && s.status < 400 {
		t.Errorf("trailing slash redirected (%d)", s.status)
	}

	// Unknown host: 404 with a JSON body.
	u := get(t, r, "GET", "nobody.localhost", "/.well-known/bcp", nil)
	var e struct{ Code, Content string }
	if u.status != http.StatusNotFound || json.Unmarshal(u.body, &e) != nil || e.Code != "unknown_host" {
		t.Errorf("unknown host: %d %s", u.status, u.body)
	}
}

// Registry changes reach the edge's caches at once: a host that was unknown
// (and cached as such) resolves as soon as the domain is added, suspension
// and removal take effect, and profile edits show.
func TestHostRoutingFollowsRegistryChanges(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	checkRegistryPropagation(t, r, operatorClient(r))
}

// The same with the edge in its own process: changes travel from the
// tenants process over the WatchChanges stream.
func TestHostRoutingAcrossProcesses(t *testing.T) {
	d := testdb.New(t)
	services := startPlatform(t, []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Checkout, platform.Payments, platform.Orders}, d.AppURL, nil)
	edgeProc := startPlatform(t, []string{platform.Edge}, "", map[string]string{platform.Tenants: "http://" + services.InternalAddr})
	if edgeProc.Pool != nil {
		t.Fatal("an edge-only process opened a database pool")
	}
	eventually(t, 10*time.Second, "edge follows the change feed", func() bool {
		resp, err := edgeProc.Clients.Edge.Ping(context.Background(), connect.NewRequest(&edgev1.PingRequest{}))
		return err == nil && resp.Msg.GetDatabaseOk()
	})
	checkRegistryPropagation(t, edgeProc, operatorClient(services))
}

func checkRegistryPropagation(t *testing.T, edgeProc *platform.Running, op tenantsv1connect.TenantServiceClient) {
	t.Helper()
	ctx := context.Background()
	createTenant(t, op, "Loja Gama", "gama.localhost")
	if s := get(t, edgeProc, "GET", "gama.localhost", "/.well-known/bcp", nil).status; s != 200 {
		t.Fatalf("gama: %d", s)
	}
	// Cache a negative answer, then add the domain: it must resolve well
	// before the negative entry would have expired (30 s).
	if s := get(t, edgeProc, "GET", "www.gama.localhost", "/.well-known/bcp", nil).status; s != 404 {
		t.Fatalf("www before adding: %d", s)
	}
	if _, err := op.AddDomain(ctx, connect.NewRequest(&tenantsv1.AddDomainRequest{Tenant: "loja-gama", Domain: "WWW.Gama.localhost."})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "new domain resolves", func() bool {
		return get(t, edgeProc, "GET", "www.gama.localhost", "/.well-known/bcp", nil).status == 200
	})
	// Profile edits invalidate the rendered profile.
	before := get(t, edgeProc, "GET", "gama.localhost", "/.well-known/bcp", nil)
	if _, err := op.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: "loja-gama",
		Handler: &tenantsv1.PaymentHandler{Id: "pix_1", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "profile shows the new handler", func() bool {
		after := get(t, edgeProc, "GET", "gama.localhost", "/.well-known/bcp", nil)
		return strings.Contains(string(after.body), `"pix_1"`) && after.header.Get("ETag") != before.header.Get("ETag")
	})
	// Suspend → 403 with a JSON body; resume → 200.
	if _, err := op.SetTenantStatus(ctx, connect.NewRequest(&tenantsv1.SetTenantStatusRequest{Tenant: "loja-gama", Status: tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "suspension applies", func() bool {
		resp := get(t, edgeProc, "GET", "gama.localhost", "/.well-known/bcp", nil)
		return resp.status == http.StatusForbidden && strings.Contains(string(resp.body), `"tenant_suspended"`)
	})
	if _, err := op.SetTenantStatus(ctx, connect.NewRequest(&tenantsv1.SetTenantStatusRequest{Tenant: "loja-gama", Status: tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "resume applies", func() bool {
		return get(t, edgeProc, "GET", "gama.localhost", "/.well-known/bcp", nil).status == 200
	})
	// Removing a domain makes it unknown.
	if _, err := op.RemoveDomain(ctx, connect.NewRequest(&tenantsv1.RemoveDomainRequest{Tenant: "loja-gama", Domain: "www.gama.localhost"})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "removed domain is unknown", func() bool {
		return get(t, edgeProc, "GET", "www.gama.localhost", "/.well-known/bcp", nil).status == 404
	})
	// The last domain cannot be removed.
	_, err := op.RemoveDomain(ctx, connect.NewRequest(&tenantsv1.RemoveDomainRequest{Tenant: "loja-gama", Domain: "gama.localhost"}))
	if e := apperr.As(err); e == nil || e.Code != "last_domain" {
		t.Fatalf("removing the last domain: %v", err)
	}
}

func TestInternalListenerHealthAndMetrics(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	createTenant(t, operatorClient(r), "Loja Delta", "delta.localhost")
	get(t, r, "GET", "delta.localhost", "/.well-known/bcp", nil)
	get(t, r, "GET", "nobody.localhost", "/.well-known/bcp", nil)
	fetch := func(path string) (int, string) {
		resp, err := http.Get("http://" + r.InternalAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, sb.String()
	}
	if code, body := fetch("/healthz"); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := fetch("/readyz"); code != 200 || !strings.Contains(body, `"database":"ok"`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	_, metrics := fetch("/metrics")
	for _, want := range []string{
		`bcp_http_requests_total{listener="public",outcome="2xx",route="GET /.well-known/bcp"} 1`,
		`bcp_http_requests_total{listener="public",outcome="4xx",route="unmatched"} 1`,
		`bcp_http_request_duration_seconds_count{listener="public",route="GET /.well-known/bcp"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Services refuse calls without the right token.
	anon := tenantsv1connect.NewTenantServiceClient(http.DefaultClient, "http://"+r.InternalAddr)
	if _, err := anon.ListTenants(context.Background(), connect.NewRequest(&tenantsv1.ListTenantsRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("anonymous ListTenants: %v", err)
	}
	if _, err := r.Clients.Tenants.ListTenants(context.Background(), connect.NewRequest(&tenantsv1.ListTenantsRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("ListTenants with the internal (non-operator) token: %v", err)
	}
}
