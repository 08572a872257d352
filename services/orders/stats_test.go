package orders_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/orders"
)

// superExec runs a statement as the superuser: test set-up that the API
// cannot do, such as dating rows in the past.
func (e *env) superExec(query string, args ...any) {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, query, args...); err != nil {
		e.t.Fatal(err)
	}
}

func TestOrderStats(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	ctxB, tb := e.tenant("Loja B", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)

	// Four orders of 12282 centavos: two from agent X, one from agent Y,
	// one outside the window. São Paulo is UTC-3: 02:30Z on the 10th is
	// still the 9th there.
	const agentX, agentY = "https://x.example/agent.json", "https://y.example/agent.json"
	mk := func(checkoutID, agent, at string) string {
		req := createRequest(checkoutID, "")
		req.AgentProfileUrl = agent
		r, err := e.client.CreateOrder(ctx, connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		e.superExec(`UPDATE orders.orders SET created_at = $1 WHERE id = $2`, mustTime(t, at), r.Msg.GetOrderId())
		return r.Msg.GetOrderId()
	}
	o1 := mk("chk_s1", agentX, "2026-03-10T02:30:00Z")
	mk("chk_s2", agentX, "2026-03-10T03:30:00Z")
	mk("chk_s3", agentY, "2026-03-11T20:00:00Z")
	mk("chk_s4", agentY, "2026-02-01T12:00:00Z")
	if _, err := e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: o1, Amount: 2000})); err != nil {
		t.Fatal(err)
	}

	since, until := mustTime(t, "2026-03-01T03:00:00Z").Unix(), mustTime(t, "2026-04-01T03:00:00Z").Unix()
	got := e.orderStats(ctx, since, until)
	if got.GetOrders() != 3 || got.GetGmvMinor() != 3*12282 || got.GetRefundedMinor() != 2000 {
		t.Errorf("totals: orders %d gmv %d refunded %d, want 3 36846 2000", got.GetOrders(), got.GetGmvMinor(), got.GetRefundedMinor())
	}
	wantDays := []*ordersv1.OrderDay{{Day: "2026-03-09", Orders: 1, GmvMinor: 12282}, {Day: "2026-03-10", Orders: 1, GmvMinor: 12282}, {Day: "2026-03-11", Orders: 1, GmvMinor: 12282}}
	if !sameDays(got.GetPerDay(), wantDays) {
		t.Errorf("per day = %v, want %v", got.GetPerDay(), wantDays)
	}
	ag := got.GetByAgent()
	if len(ag) != 2 || ag[0].GetAgent() != agentX || ag[0].GetOrders() != 2 || ag[0].GetGmvMinor() != 24564 ||
		ag[1].GetAgent() != agentY || ag[1].GetOrders() != 1 || ag[1].GetGmvMinor() != 12282 {
		t.Errorf("by agent = %v", ag)
	}

	// Open ends: everything.
	if all := e.orderStats(ctx, 0, 0); all.GetOrders() != 4 || all.GetGmvMinor() != 4*12282 || len(all.GetPerDay()) != 4 {
		t.Errorf("open window: %d orders, gmv %d, %d days", all.GetOrders(), all.GetGmvMinor(), len(all.GetPerDay()))
	}
	// The operator token with the tenant header (the operator console)
	// sees the same.
	op := e.operatorOrders()
	r, err := op.GetOrderStats(ctx, connect.NewRequest(&ordersv1.GetOrderStatsRequest{SinceUnix: since, UntilUnix: until}))
	if err != nil || r.Msg.GetGmvMinor() != 36846 {
		t.Errorf("operator: %v %v", err, r)
	}
	// Without a tenant: refused.
	_, err = op.GetOrderStats(context.Background(), connect.NewRequest(&ordersv1.GetOrderStatsRequest{}))
	wantCode(t, err, connect.CodeInvalidArgument, "")
	// An inverted window is refused.
	_, err = e.client.GetOrderStats(ctx, connect.NewRequest(&ordersv1.GetOrderStatsRequest{SinceUnix: until, UntilUnix: since}))
	wantCode(t, err, connect.CodeInvalidArgument, "invalid_window")

	// Tenant B sees zeros.
	b := e.orderStats(ctxB, 0, 0)
	if b.GetOrders() != 0 || b.GetGmvMinor() != 0 || b.GetRefundedMinor() != 0 || len(b.GetPerDay()) != 0 || len(b.GetByAgent()) != 0 {
		t.Errorf("tenant B (%s) sees %v", tb.GetId(), b)
	}
}

// operatorOrders is the orders service as another process mounts it,
// called with the operator token (what the operator console uses).
func (e *env) operatorOrders() ordersv1connect.OrdersServiceClient {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := orders.New(e.db.Pool, orders.Config{Payments: e.payments.client, Tenants: e.tenants, Signer: orders.NewTenantSigner(e.tenants), Logger: log})
	mux := http.NewServeMux()
	mux.Handle(ordersv1connect.NewOrdersServiceHandler(svc, connect.WithInterceptors(apperr.Interceptor(log),
		svcauth.Server(svcauth.Tokens{Internal: internalToken, Operator: operatorToken}, orders.Policy))))
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	return ordersv1connect.NewOrdersServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(operatorToken)))
}

func (e *env) orderStats(ctx context.Context, since, until int64) *ordersv1.GetOrderStatsResponse {
	e.t.Helper()
	r, err := e.client.GetOrderStats(ctx, connect.NewRequest(&ordersv1.GetOrderStatsRequest{SinceUnix: since, UntilUnix: until}))
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Msg
}

func sameDays(got, want []*ordersv1.OrderDay) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].GetDay() != want[i].GetDay() || got[i].GetOrders() != want[i].GetOrders() || got[i].GetGmvMinor() != want[i].GetGmvMinor() {
			return false
		}
	}
	return true
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
