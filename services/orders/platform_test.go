package orders_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// The platform hosts orders with its job workers, the tenants signer and
// the payments client (here a remote fake): an order made through the
// platform's client gets its signed webhook and can be refunded.
func TestPlatformWiresOrders(t *testing.T) {
	d := testdb.New(t)
	pay := newFakePayments(t)
	rc := newReceiver(t, 0)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: []string{platform.Tenants, platform.Orders}, DatabaseURL: d.AppURL, InternalAddr: "127.0.0.1:0",
		ServiceURLs:   map[string]string{platform.Payments: pay.url},
		InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: masterKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	op := tenantsv1connect.NewTenantServiceClient(http.DefaultClient, "http://"+r.InternalAddr, connect.WithInterceptors(svcauth.Client(operatorToken)))
	tr, err := op.CreateTenant(context.Background(), connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja A", Domains: []string{"a.localhost"}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.With(context.Background(), uuid.MustParse(tr.Msg.GetTenant().GetId()))

	res, err := r.Clients.Orders.CreateOrder(ctx, connect.NewRequest(createRequest("chk_1", rc.url())))
	if err != nil {
		t.Fatal(err)
	}
	validateOrder(t, res.Msg.GetOrderJson())
	eventually(t, waitFor, "the order created webhook", func() bool { return len(rc.got()) == 1 })
	g := rc.got()[0]
	disc, err := r.Clients.Tenants.GetDiscovery(context.Background(), connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tr.Msg.GetTenant().GetId()}))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := httpsig.ParseJWKSet([]byte(`{"keys":[` + strings.Join(disc.Msg.GetSigningKeysJson(), ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	v := &httpsig.Verifier{Keys: ks.Resolve, Requirements: append(httpsig.RequestRequirements("bcp-agent"), httpsig.Require("webhook-id", "webhook-timestamp"))}
	if _, err := v.VerifyRequest(context.Background(), g.req, g.body); err != nil {
		t.Fatalf("platform webhook signature: %v", err)
	}
	validateOrderDoc(t, g.body)

	rf, err := r.Clients.Orders.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: res.Msg.GetOrderId(), Amount: 500}))
	if err != nil || rf.Msg.GetStatus() != bcp.AdjustmentCompleted || len(pay.refunds()) != 1 {
		t.Fatalf("refund through the platform: %v %+v", err, rf.Msg)
	}

	eventually(t, waitFor, "the delivery metric", func() bool {
		resp, err := http.Get("http://" + r.InternalAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `bcp_order_webhook_attempts_total{outcome="delivered"}`) &&
			strings.Contains(string(b), `bcp_order_refunds_total{status="completed"} 1`)
	})
}
