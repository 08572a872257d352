package payments_test

import (
	"context"
	"io"
	"net"
	"net/http"
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
	"github.com/bcpdev/bcp/services/edge"
)

// TestPlatformWiring runs the service as bcpd hosts it (its job client,
// workers and clients from the platform, the PSP simulator and the edge's
// webhook listener beside it), with the checkout service elsewhere: a Pix
// paid at the PSP simulator, notified over mTLS to the webhook listener,
// ends in a checkout_settle job in the checkout's queue, which this
// process (not hosting checkout) leaves for a checkout process.
func TestPlatformWiring(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services:    []string{platform.Tenants, platform.Payments, platform.PSPSim, platform.Edge},
		DatabaseURL: d.AppURL, InternalAddr: "127.0.0.1:0", PublicAddr: "127.0.0.1:0", Edge: edge.Config{PublicScheme: "http"},
		InternalToken: internalToken, OperatorToken: operatorToken,
		MasterKey: masterKey, Logger: quietLog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ops := r.ClientsWithToken(operatorToken)
	tr, err := ops.Tenants.CreateTenant(context.Background(), connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja Cajá", Domains: []string{"loja-c.localhost"}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		t.Fatal(err)
	}
	tid := uuid.MustParse(tr.Msg.GetTenant().GetId())
	if _, err := ops.Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid.String(),
		Handler: &tenantsv1.PaymentHandler{Id: "pix", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`, Environment: "sandbox"}})); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(r.PublicAddr)

	ctx := tenancy.With(context.Background(), tid)
	req := startReq(merchant{baseURL: "http://loja-c.localhost:" + port}, "chk_platform", 7777, pixInstrument)
	resp, err := r.Clients.Payments.StartPayment(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	a := resp.Msg.GetAttempt()
	if a.GetStatus() != statusPending || pixDisplayOf(t, a).Amount != "77.77" {
		t.Fatalf("start: %v", a)
	}
	if _, err := r.Clients.Payments.SimulatePixPayment(ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(announced(t, d.Pool, a.GetId())) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the paid Pix was not announced to checkout")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := r.Clients.Payments.GetPayment(ctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: a.GetId()}))
	if err != nil || got.Msg.GetAttempt().GetStatus() != statusSucceeded {
		t.Fatalf("after webhook: %v %v", got, err)
	}
	if c := announced(t, d.Pool, a.GetId()); len(c) != 1 || c[0].tenant != tid.String() || c[0].checkoutID != "chk_platform" || c[0].queue != "checkout" {
		t.Errorf("announcements %+v, want one checkout_settle job in the checkout queue", c)
	}
	// The counters are on the internal listener's /metrics.
	mresp, err := http.Get("http://" + r.InternalAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{
		`bcp_payment_attempt_transitions_total{kind="pix",status="pending"} 1`,
		`bcp_payment_attempt_transitions_total{kind="pix",status="succeeded"} 1`,
		`bcp_payment_pix_webhooks_total{result="stored"} 1`,
		`bcp_psp_requests_total{kind="pix",op="cob.put",status="201"} 1`,
		`bcp_psp_requests_total{kind="pix",op="token",status="200"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
