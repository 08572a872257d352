package checkout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// captured is a checkoutdb.DBTX that runs nothing: it keeps the SQL and
// arguments of the statement the generated method would send.
type captured struct {
	sql  string
	args []any
}

var errCaptured = errors.New("captured")

func (c *captured) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.sql, c.args = sql, args
	return pgconn.CommandTag{}, errCaptured
}

func (c *captured) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.sql, c.args = sql, args
	return nil, errCaptured
}

func (c *captured) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	c.sql, c.args = sql, args
	return capturedRow{}
}

type capturedRow struct{}

func (capturedRow) Scan(...any) error { return errCaptured }

// Every statement on checkout.sessions reads it through an index, the one
// its comment (or migration) names, on a table of 4 tenants × 3 000
// sessions shaped like a live one (most completed or canceled, a few open,
// in flight or owned): no listing scans a tenant's sessions, let alone
// every tenant's, and no write finds its row but by the primary key.
// Which index each statement needs is what decides the table's indexes
// (issue 35): each one is some statement's only way in.
func TestSessionStatementsUseIndexes(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	super, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	var tenants [4]uuid.UUID
	for i := range tenants {
		tenants[i] = uuid.MustParse(fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1))
	}
	// i % 100: 0 requires_escalation, 1 complete_in_progress (settle due
	// later, owned), 2-3 ready_for_complete, 4-8 incomplete, 9-28 canceled
	// (9 still releasing its stock), the rest completed. Created over 120
	// days, open for 6 hours.
	_, err = super.Exec(ctx, `
		INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, buyer_email, agent_profile_url, capabilities, request, state,
		  expires_at, created_at, updated_at, payment_attempt_id, settle_after, settle_owner)
		SELECT t, 'chk_' || lpad(i::text, 6, '0'), st, 'BRL', 1000 + i, 'b' || i || '@example.com', 'https://agent.example/profile.json', '{}', '{}', '{}',
		  c + interval '6 hours', c, c + interval '10 minutes',
		  CASE WHEN st IN ('complete_in_progress', 'completed') THEN 'pay_' || i END,
		  CASE WHEN i % 100 IN (1, 9) THEN now() + interval '1 minute' END,
		  CASE WHEN i % 100 IN (1, 9) THEN 'owner-' || (i % 7) END
		FROM unnest($1::uuid[]) t, generate_series(1, 3000) i,
		  LATERAL (SELECT now() - (3000 - i) * interval '1 hour' - interval '1 day' * (i % 3) AS c,
		    CASE WHEN i % 100 = 0 THEN 'requires_escalation' WHEN i % 100 = 1 THEN 'complete_in_progress'
		         WHEN i % 100 IN (2, 3) THEN 'ready_for_complete' WHEN i % 100 BETWEEN 4 AND 8 THEN 'incomplete'
		         WHEN i % 100 BETWEEN 9 AND 28 THEN 'canceled' ELSE 'completed' END AS st) x`, tenants[:])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := super.Exec(ctx, `ANALYZE checkout.sessions`); err != nil {
		t.Fatal(err)
	}

	app, err := pgx.Connect(ctx, d.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	tenant, now := tenants[0], time.Now()
	s := func(v string) *string { return &v }
	ts := func(v time.Time) *time.Time { return &v }
	cases := []struct {
		name  string
		sweep bool     // in the checkout_sweep scope (every tenant), not a tenant's
		want  []string // the index the statement must read sessions through (any of)
		call  func(q *checkoutdb.Queries)
	}{
		{"GetSession", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.GetSession(ctx, checkoutdb.GetSessionParams{TenantID: tenant, ID: "chk_000500"})
		}},
		{"ListSessions", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListSessions(ctx, checkoutdb.ListSessionsParams{TenantID: tenant, PageSize: 51})
		}},
		{"ListSessions after a page", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListSessions(ctx, checkoutdb.ListSessionsParams{TenantID: tenant, BeforeID: s("chk_001500"), PageSize: 51})
		}},
		{"ListSessions by a rare status", false, []string{"sessions_by_status"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListSessions(ctx, checkoutdb.ListSessionsParams{TenantID: tenant, Status: s("requires_escalation"), PageSize: 51})
		}},
		{"ListSessions by a rare status after a page", false, []string{"sessions_by_status"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListSessions(ctx, checkoutdb.ListSessionsParams{TenantID: tenant, Status: s("incomplete"), BeforeID: s("chk_001500"), PageSize: 51})
		}},
		{"ListSessions by a common status", false, []string{"sessions_by_status", "sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListSessions(ctx, checkoutdb.ListSessionsParams{TenantID: tenant, Status: s("completed"), PageSize: 51})
		}},
		{"CheckoutStats of 7 days", false, []string{"sessions_by_created"}, func(q *checkoutdb.Queries) {
			_, _ = q.CheckoutStats(ctx, checkoutdb.CheckoutStatsParams{TenantID: tenant, Since: ts(now.AddDate(0, 0, -7))})
		}},
		{"CheckoutStats of 30 days", false, []string{"sessions_by_created"}, func(q *checkoutdb.Queries) {
			_, _ = q.CheckoutStats(ctx, checkoutdb.CheckoutStatsParams{TenantID: tenant, Since: ts(now.AddDate(0, 0, -30)), Until: ts(now)})
		}},
		// The tenant's open sessions: the sweeps' index, or the tenant's by
		// status (one range per open status).
		{"ListExpiredOpenSessions", false, []string{"sessions_due_expiry", "sessions_by_status"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListExpiredOpenSessions(ctx, checkoutdb.ListExpiredOpenSessionsParams{TenantID: tenant, Now: now})
		}},
		{"ListDueSessions", true, []string{"sessions_due_expiry"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListDueSessions(ctx, checkoutdb.ListDueSessionsParams{Now: now, MaxRows: 500})
		}},
		{"ListDueSettles", true, []string{"sessions_due_settle"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListDueSettles(ctx, checkoutdb.ListDueSettlesParams{Now: now.Add(time.Hour), MaxRows: 500})
		}},
		{"CompletionsInFlight", true, []string{"sessions_due_settle"}, func(q *checkoutdb.Queries) {
			_, _ = q.CompletionsInFlight(ctx)
		}},
		{"ListOwnedSessions", true, []string{"sessions_owned"}, func(q *checkoutdb.Queries) {
			_, _ = q.ListOwnedSessions(ctx, 500)
		}},
		{"UpdateSession", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.UpdateSession(ctx, checkoutdb.UpdateSessionParams{TenantID: tenant, ID: "chk_000505", Version: 1, Status: "incomplete",
				Capabilities: []string{}, Request: json.RawMessage(`{}`), State: json.RawMessage(`{}`)})
		}},
		{"SetSessionPayment", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.SetSessionPayment(ctx, checkoutdb.SetSessionPaymentParams{TenantID: tenant, ID: "chk_000502", Version: 1, Status: "complete_in_progress",
				PaymentAttemptID: s("pay_x"), State: json.RawMessage(`{}`), SettleAfter: ts(now), AutomaticDiscountIds: []string{}})
		}},
		{"FinishSession", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.FinishSession(ctx, checkoutdb.FinishSessionParams{TenantID: tenant, ID: "chk_000501", Version: 1, Status: "completed", State: json.RawMessage(`{}`)})
		}},
		{"CloseSession", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.CloseSession(ctx, checkoutdb.CloseSessionParams{TenantID: tenant, ID: "chk_000504", Version: 1, State: json.RawMessage(`{}`)})
		}},
		// Tenant, status and id: one entry of either.
		{"ClearSettleAfter", false, []string{"sessions_pkey", "sessions_by_status"}, func(q *checkoutdb.Queries) {
			_, _ = q.ClearSettleAfter(ctx, checkoutdb.ClearSettleAfterParams{TenantID: tenant, ID: "chk_000509"})
		}},
		{"SetSettleAfter", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.SetSettleAfter(ctx, checkoutdb.SetSettleAfterParams{TenantID: tenant, ID: "chk_000501", PaymentAttemptID: s("pay_501")})
		}},
		{"TakeOverSession", false, []string{"sessions_pkey"}, func(q *checkoutdb.Queries) {
			_, _ = q.TakeOverSession(ctx, checkoutdb.TakeOverSessionParams{TenantID: tenant, ID: "chk_000501", Was: s("owner-4"), Owner: s("owner-5")})
		}},
	}
	for _, c := range cases {
		cap := &captured{}
		c.call(checkoutdb.New(cap))
		if cap.sql == "" {
			t.Fatalf("%s: no statement captured", c.name)
		}
		tx, err := app.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		setting, value := "app.tenant_id", tenant.String()
		if c.sweep {
			setting, value = "app.scope", "checkout_sweep"
		}
		if _, err := tx.Exec(ctx, `SELECT set_config($1, $2, true)`, setting, value); err != nil {
			t.Fatal(err)
		}
		var plan string
		if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+cap.sql, cap.args...).Scan(&plan); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_ = tx.Rollback(ctx)
		var nodes []struct{ Plan planNode }
		if err := json.Unmarshal([]byte(plan), &nodes); err != nil || len(nodes) != 1 {
			t.Fatalf("%s: plan %s: %v", c.name, plan, err)
		}
		var used, seq []string
		nodes[0].Plan.walk(func(n planNode) {
			if n.Relation != "sessions" && !strings.HasPrefix(n.Index, "sessions_") {
				return
			}
			switch {
			case n.Index != "":
				used = append(used, n.Index)
			case strings.HasPrefix(n.Type, "Seq Scan"):
				seq = append(seq, n.Type)
			}
		})
		ok := len(seq) == 0 && len(used) > 0
		for _, u := range used {
			ok = ok && slices.Contains(c.want, u)
		}
		if !ok {
			t.Errorf("%s reads checkout.sessions through %v (and %v), want %v only:\n%s", c.name, used, seq, c.want, plan)
		}
	}
}

type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}
