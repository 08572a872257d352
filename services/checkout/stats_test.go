package checkout_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/services/checkout"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestCheckoutStats(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tokens := svcauth.Tokens{Internal: "internal", Operator: "operator"}
	mux := http.NewServeMux()
	// The stats read only the service's own table: no other service.
	mux.Handle(checkoutv1connect.NewCheckoutServiceHandler(checkout.New(d.Pool, checkout.Clients{}),
		connect.WithInterceptors(apperr.Interceptor(log), svcauth.Server(tokens, checkout.Policy))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	internal := checkoutv1connect.NewCheckoutServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client("internal")))
	operator := checkoutv1connect.NewCheckoutServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client("operator")))

	// Sessions as the checkout flow leaves them, dated in the past (set-up
	// the API cannot do). São Paulo is UTC-3: 02:30Z on the 10th is the
	// 9th there.
	a, b := uuid.New(), uuid.New()
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for i, s := range []struct{ status, at string }{
		{"completed", "2026-03-10T02:30:00Z"},
		{"completed", "2026-03-10T03:30:00Z"},
		{"canceled", "2026-03-10T12:00:00Z"},
		{"incomplete", "2026-03-10T23:00:00Z"},
		{"ready_for_complete", "2026-03-11T02:59:59Z"},
		{"completed", "2026-02-01T12:00:00Z"},
	} {
		at, _ := time.Parse(time.RFC3339, s.at)
		if _, err := conn.Exec(ctx, `INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, agent_profile_url, capabilities, request, state, expires_at, created_at)
			VALUES ($1, $2, $3, 'BRL', 1000, 'https://agent.example/p.json', '{}', '{}', '{}', $4, $4)`, a, "chk_"+string(rune('a'+i)), s.status, at); err != nil {
			t.Fatal(err)
		}
	}

	stats := func(c checkoutv1connect.CheckoutServiceClient, tenant uuid.UUID, since, until string) *checkoutv1.GetCheckoutStatsResponse {
		t.Helper()
		req := &checkoutv1.GetCheckoutStatsRequest{}
		if since != "" {
			v, _ := time.Parse(time.RFC3339, since)
			req.SinceUnix = v.Unix()
		}
		if until != "" {
			v, _ := time.Parse(time.RFC3339, until)
			req.UntilUnix = v.Unix()
		}
		r, err := c.GetCheckoutStats(tenancy.With(ctx, tenant), connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg
	}
	got := stats(internal, a, "2026-03-01T03:00:00Z", "2026-04-01T03:00:00Z")
	if got.GetTotal() != 5 {
		t.Errorf("total %d, want 5", got.GetTotal())
	}
	byStatus := map[string]int64{}
	for _, s := range got.GetByStatus() {
		byStatus[s.GetStatus()] = s.GetCount()
	}
	if len(byStatus) != 4 || byStatus["completed"] != 2 || byStatus["canceled"] != 1 || byStatus["incomplete"] != 1 || byStatus["ready_for_complete"] != 1 {
		t.Errorf("by status = %v", byStatus)
	}
	days := got.GetCreatedPerDay()
	if len(days) != 2 || days[0].GetDay() != "2026-03-09" || days[0].GetCount() != 1 || days[1].GetDay() != "2026-03-10" || days[1].GetCount() != 4 {
		t.Errorf("per day = %v", days)
	}
	if all := stats(operator, a, "", ""); all.GetTotal() != 6 || len(all.GetCreatedPerDay()) != 3 {
		t.Errorf("operator, open window: %v", all)
	}
	if _, err := operator.GetCheckoutStats(ctx, connect.NewRequest(&checkoutv1.GetCheckoutStatsRequest{})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("no tenant header: %v", err)
	}
	if _, err := internal.GetCheckoutStats(tenancy.With(ctx, a), connect.NewRequest(&checkoutv1.GetCheckoutStatsRequest{SinceUnix: 10, UntilUnix: 5})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("inverted window: %v", err)
	}
	if other := stats(internal, b, "", ""); other.GetTotal() != 0 || len(other.GetByStatus()) != 0 || len(other.GetCreatedPerDay()) != 0 {
		t.Errorf("tenant B sees %v", other)
	}
}
