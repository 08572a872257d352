package e2e

import (
	"context"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

// freeAddr is a loopback address nothing listens on (for processes that
// must know each other's URLs before they start).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// One role per process: the registry and the catalog's side in one
// process, checkout, payments and the edge each in their own, talking only
// over connect, and the PSP simulator in a process of its own. A card
// purchase completes; a Pix paid at the simulator reaches the payments
// process by webhook (over mTLS to the edge's webhook listener, forwarded
// over connect), and the payments process's news
// (a checkout_settle job in the checkout queue) completes the checkout in
// the checkout process — worked once, by the process that has its worker;
// and both services' sweeps run whichever process leads river.
func TestOneRolePerProcess(t *testing.T) {
	d := testdb.New(t)
	base, co, pay, ed, hooks := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	url := func(a string) string { return "http://" + a }
	urls := map[string]string{
		platform.Tenants: url(base), platform.Catalog: url(base), platform.Pricing: url(base), platform.Orders: url(base),
		platform.Checkout: url(co), platform.Payments: url(pay),
	}
	_, edPort, _ := net.SplitHostPort(ed)
	_, hookPort, _ := net.SplitHostPort(hooks)
	// The PSP simulator, the outside world, in a process of its own.
	sim := startPSPSim(t, d.AppURL)
	start := func(services []string, internal string) *platform.Running {
		return startPlatformWith(t, services, d.AppURL, urls, func(c *platform.Config) {
			c.InternalAddr = internal
			switch services[0] {
			case platform.Edge:
				// The edge's TLS webhook listener, where the simulator
				// posts Pix webhooks (asking for its client certificate).
				c.DatabaseURL, c.PublicAddr, c.WebhookAddr = "", ed, hooks
			case platform.Payments:
				// Payments pays sandbox handlers through the simulator and
				// registers webhooks on the edge's webhook port.
				c.ServiceURLs = maps.Clone(urls)
				c.ServiceURLs[platform.PSPSim] = sim.PSPSim.ControlURL()
				c.WebhookPort = hookPort
			}
			// Advertised URLs carry the edge's port.
			c.Edge = edge.Config{PublicScheme: "http", PublicPort: edPort}
		})
	}
	registry := start([]string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Orders}, base)
	start([]string{platform.Checkout}, co)
	start([]string{platform.Payments}, pay)
	edgeProc := start([]string{platform.Edge}, freeAddr(t))

	const host = "papeis.localhost"
	m := setupMerchant(t, registry, "Loja Papéis", host, 0)
	ops := registry.ClientsWithToken(operatorToken)
	if _, err := ops.Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: host,
		Handler: &tenantsv1.PaymentHandler{Id: "card", Name: "com.example.vendor.delegate_payment", Position: 1,
			AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`}})); err != nil {
		t.Fatal(err)
	}
	prof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		doc := agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount")
		doc = strings.Replace(doc, `"payment_handlers":{`, `"payment_handlers":{"com.example.vendor.delegate_payment":[{"id":"agent_card","version":"2026-07-28","spec":"https://example.vendor.com/specs/delegate-payment","schema":"https://example.vendor.com/schemas/delegate-payment-config.json"}],`, 1)
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(prof.Close)
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	s := &shopper{t: t, r: edgeProc, db: d, v: v, profile: prof.URL + "/agent.json", merchant: map[string]merchant{host: m}, agents: map[string]*agent{}}
	s.agents[host] = &agent{t: t, s: agentSession(t, edgeProc, host, s.profile), profile: s.profile, v: v}

	card := s.complete(host, s.ready(host).ID, uuid.NewString(), cardInstrument("tok_papeis_4242"))
	if card.Status != bcp.StatusCompleted || card.Order == nil {
		t.Fatalf("card purchase across processes: %s %+v", card.Status, card.Messages)
	}
	c := s.ready(host)
	d0 := pixOf(t, s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host)))
	if !strings.Contains(d0.Pix.QRPngURL, ":"+edPort+"/") {
		t.Fatalf("the Pix QR URL %q does not carry the edge's port", d0.Pix.QRPngURL)
	}
	ctx := tenancy.With(context.Background(), m.tenantID)
	if _, err := ops.Payments.SimulatePixPayment(ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: d0.Pix.AttemptID})); err != nil {
		t.Fatal(err)
	}
	s.waitStatus(host, c.ID, bcp.StatusCompleted)
	// The news was worked once, without a failed try by a process that
	// has no worker for it.
	// (river records a job's completion a moment after its work.)
	eventually(t, 10*time.Second, "one clean checkout_settle job for the paid Pix", func() bool {
		return s.sql(`SELECT count(*) FROM river.river_job WHERE kind = 'checkout_settle' AND queue = 'checkout' AND args->>'attempt_id' = $1
			AND state = 'completed' AND attempt = 1 AND coalesce(array_length(errors, 1), 0) = 0`, d0.Pix.AttemptID) == 1
	})
	eventually(t, 30*time.Second, "both services' sweeps run", func() bool {
		return s.sql(`SELECT count(DISTINCT kind) FROM river.river_job WHERE kind IN ('checkout_sweep', 'payments_resolve_sweep') AND state = 'completed'`) == 2
	})
	if n := s.sql(`SELECT count(*) FROM river.river_job WHERE coalesce(array_length(errors, 1), 0) > 0 AND errors::text LIKE '%not registered%'`); n != 0 {
		t.Fatalf("%d jobs fetched by a process without their worker", n)
	}
}
