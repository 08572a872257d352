package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/testdb"
)

// The invariants of db/checks/invariants.sql hold on an empty platform
// and each one reports the breach it is written for: the state of issue
// 20's race (a canceled checkout with an order and an approved charge, a
// failed attempt whose charge the processor approved) among them.
func TestInvariantsCatchTheirBreach(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	invs, err := db.Invariants()
	if err != nil {
		t.Fatal(err)
	}
	if len(invs) < 9 {
		t.Fatalf("%d invariants parsed", len(invs))
	}
	violations := func() map[string][]string {
		t.Helper()
		out := map[string][]string{}
		for _, inv := range invs {
			var n int
			if err := conn.QueryRow(ctx, inv.Count).Scan(&n); err != nil {
				t.Fatalf("%s count: %v", inv.Name, err)
			}
			rows, err := conn.Query(ctx, inv.Query)
			if err != nil {
				t.Fatalf("%s: %v", inv.Name, err)
			}
			for rows.Next() {
				var name, v string
				if err := rows.Scan(&name, &v); err != nil {
					t.Fatal(err)
				}
				out[inv.Name] = append(out[inv.Name], v)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", inv.Name, err)
			}
		}
		return out
	}
	if v := violations(); len(v) != 0 {
		t.Fatalf("an empty platform breaks %v", v)
	}
	tid := uuid.New()
	for _, q := range []string{
		// The race's end state: canceled, with an order, an approved charge
		// whose attempt says failed, and its stock still reserved.
		`INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, agent_profile_url, capabilities, request, state, expires_at, payment_attempt_id)
		 VALUES ($1, 'chk_race', 'canceled', 'BRL', 13480, 'https://a.example/p.json', '{}', '{}', '{}', now(), 'pay_race')`,
		`INSERT INTO orders.orders (tenant_id, id, checkout_id, label, payment_attempt_id, base_url, currency, total, status, snapshot)
		 VALUES ($1, 'ord_race', 'chk_race', '#1001', 'pay_race', 'http://x', 'BRL', 13480, 'processing', '{}')`,
		`INSERT INTO payments.attempts (tenant_id, id, checkout_id, handler_id, handler_name, environment, amount, currency, status, request_hash, charge_id)
		 VALUES ($1, 'pay_race', 'chk_race', 'card', 'com.example.vendor.delegate_payment', 'sandbox', 13480, 'BRL', 'failed', '\x` + strings.Repeat("00", 32) + `', NULL)`,
		`INSERT INTO payments.sim_card_charges (tenant_id, id, idempotency_key, token_hash, amount, currency, status)
		 VALUES ($1, 'ch_race', 'pay_race', '\x` + strings.Repeat("11", 32) + `', 13480, 'BRL', 'approved')`,
		`INSERT INTO catalog.stock_reservations (tenant_id, checkout_id, variant_id, quantity) VALUES ($1, 'chk_race', 'var_cam', 2)`,
		// A succeeded attempt the processor knows nothing of.
		`INSERT INTO payments.attempts (tenant_id, id, checkout_id, handler_id, handler_name, environment, amount, currency, status, request_hash, charge_id)
		 VALUES ($1, 'pay_ghost', 'chk_ghost', 'card', 'x', 'sandbox', 100, 'BRL', 'succeeded', '\x` + strings.Repeat("00", 32) + `', 'ch_ghost')`,
	} {
		if _, err := conn.Exec(ctx, q, tid); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	got := violations()
	for _, want := range []string{
		"every order's checkout is completed (a canceled or expired checkout has no order)",
		"every approved card charge is the succeeded attempt of a completed checkout, or refunded",
		"every succeeded attempt has its money at the processor or PSP",
		"a completed checkout keeps its stock, a checkout without an order holds none",
	} {
		if len(got[want]) != 1 {
			t.Errorf("%q: %v, want one violation", want, got[want])
		}
	}
	if len(got) != 4 {
		t.Errorf("violations of %d invariants, want 4: %v", len(got), got)
	}
}
