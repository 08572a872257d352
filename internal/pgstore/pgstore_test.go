package pgstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// The tenant setting is sent with BEGIN; it must hold inside the
// transaction only, never leak to the pooled connection's next borrower,
// and a transaction without a tenant must not start at all.
func TestInTenantScope(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	tid := uuid.New()
	setting := func(tx pgx.Tx) string {
		var v *string
		if err := tx.QueryRow(ctx, `SELECT current_setting('app.tenant_id', true)`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return ""
		}
		return *v
	}
	var inside string
	if err := pgstore.InTenant(tenancy.With(ctx, tid), d.Pool, func(tx pgx.Tx) error { inside = setting(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != tid.String() {
		t.Fatalf("app.tenant_id inside = %q, want %s", inside, tid)
	}
	// A failed transaction rolls back and the connection stays usable.
	boom := errors.New("boom")
	if err := pgstore.InTenant(tenancy.With(ctx, tid), d.Pool, func(pgx.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	for range 3 { // whichever pooled connection comes next
		var after string
		if err := pgstore.InRegistry(ctx, d.Pool, func(tx pgx.Tx) error { after = setting(tx); return nil }); err != nil {
			t.Fatal(err)
		}
		if after != "" {
			t.Fatalf("app.tenant_id leaked to the next transaction: %q", after)
		}
	}
	if err := pgstore.InTenant(ctx, d.Pool, func(pgx.Tx) error { t.Fatal("ran without a tenant"); return nil }); err == nil {
		t.Fatal("InTenant without a tenant succeeded")
	}
}

// Single pipelines set_config with its one statement: the statement runs
// in the tenant's scope (forced RLS sees the tenant's rows and only
// them), the setting never outlives it, a second statement is refused,
// and a failed statement leaves the connection usable.
func TestSingleScope(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	a, b := uuid.New(), uuid.New()
	inA, inB := tenancy.With(ctx, a), tenancy.With(ctx, b)
	const insert = `INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, $2)`
	for _, c := range []struct {
		ctx  context.Context
		tid  uuid.UUID
		last int64
	}{{inA, a, 41}, {inB, b, 7}} {
		err := pgstore.Single(c.ctx, d.Pool, func(q *pgstore.SingleQuerier) error {
			tag, err := q.Exec(c.ctx, insert, c.tid, c.last)
			if err == nil && tag.RowsAffected() != 1 {
				t.Fatalf("inserted %d rows", tag.RowsAffected())
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Forced RLS: a write for another tenant is refused by WITH CHECK.
	err := pgstore.Single(inA, d.Pool, func(q *pgstore.SingleQuerier) error {
		_, err := q.Exec(inA, insert, uuid.New(), 1)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "row-level security") {
		t.Fatalf("insert for another tenant: err = %v", err)
	}

	var last int64
	if err := pgstore.Single(inA, d.Pool, func(q *pgstore.SingleQuerier) error {
		return q.QueryRow(inA, `SELECT last FROM orders.label_counters`).Scan(&last)
	}); err != nil || last != 41 {
		t.Fatalf("tenant A reads last = %d, %v; want 41", last, err)
	}
	var seen []int64
	if err := pgstore.Single(inB, d.Pool, func(q *pgstore.SingleQuerier) error {
		rows, err := q.Query(inB, `SELECT last FROM orders.label_counters ORDER BY last`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				return err
			}
			seen = append(seen, v)
		}
		return rows.Err()
	}); err != nil || len(seen) != 1 || seen[0] != 7 {
		t.Fatalf("tenant B sees %v, %v; want [7]", seen, err)
	}
	// No row of another tenant: ErrNoRows, as in a transaction.
	if err := pgstore.Single(tenancy.With(ctx, uuid.New()), d.Pool, func(q *pgstore.SingleQuerier) error {
		return q.QueryRow(ctx, `SELECT last FROM orders.label_counters`).Scan(&last)
	}); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("a third tenant: err = %v, want no rows", err)
	}
	// A second statement is refused, not run outside the scope.
	ran := 0
	err = pgstore.Single(inA, d.Pool, func(q *pgstore.SingleQuerier) error {
		if err := q.QueryRow(inA, `SELECT last FROM orders.label_counters`).Scan(&last); err != nil {
			return err
		}
		ran++
		_, err := q.Exec(inA, `UPDATE orders.label_counters SET last = 0`)
		return err
	})
	if err == nil || ran != 1 {
		t.Fatalf("second statement: err = %v", err)
	}
	// A failed statement (duplicate key) comes back as itself and the
	// pool's connections stay usable, with no setting left behind.
	err = pgstore.Single(inA, d.Pool, func(q *pgstore.SingleQuerier) error {
		_, err := q.Exec(inA, insert, a, 1)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("duplicate insert: err = %v", err)
	}
	for range 4 {
		var v *string
		if err := d.Pool.QueryRow(ctx, `SELECT current_setting('app.tenant_id', true)`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != nil && *v != "" {
			t.Fatalf("app.tenant_id leaked to the pooled connection: %q", *v)
		}
	}
	if err := pgstore.InTenant(inA, d.Pool, func(tx pgx.Tx) error {
		return tx.QueryRow(inA, `SELECT last FROM orders.label_counters`).Scan(&last)
	}); err != nil || last != 41 {
		t.Fatalf("after the failures: last = %d, %v", last, err)
	}
	if err := pgstore.Single(ctx, d.Pool, func(*pgstore.SingleQuerier) error { t.Fatal("ran without a tenant"); return nil }); err == nil {
		t.Fatal("Single without a tenant succeeded")
	}
}

// SingleGenericPlan plans its statement once where Single, for a
// statement whose array parameter feeds unnest, lets PostgreSQL plan it
// on every call; the forced setting ends with the statement.
func TestSingleGenericPlan(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t).OneConnPool(t, nil) // pg_prepared_statements is per connection
	inA := tenancy.With(ctx, uuid.New())
	// One indexed lookup per element: a custom plan counts one element,
	// the generic plan ten, so in auto mode the generic one never wins.
	const stmt = `SELECT (SELECT l.last FROM orders.label_counters l WHERE l.tenant_id = u.x::uuid LIMIT 1) FROM unnest($1::text[]) AS u (x)`
	run := func(single func(context.Context, *pgxpool.Pool, func(*pgstore.SingleQuerier) error) error) {
		t.Helper()
		for range 8 {
			if err := single(inA, pool, func(q *pgstore.SingleQuerier) error {
				_, err := q.Exec(inA, stmt, []string{uuid.NewString()})
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	plans := func() (custom, generic int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT custom_plans, generic_plans FROM pg_prepared_statements WHERE statement = $1`, stmt).Scan(&custom, &generic); err != nil {
			t.Fatal(err)
		}
		return custom, generic
	}
	run(pgstore.Single)
	if c, g := plans(); c != 8 || g != 0 {
		t.Fatalf("Single: %d custom and %d generic plans, want 8 and 0 (the statement no longer shows the problem)", c, g)
	}
	run(pgstore.SingleGenericPlan)
	if c, g := plans(); c != 8 || g != 8 {
		t.Fatalf("SingleGenericPlan: %d custom and %d generic plans in all, want 8 and 8", c, g)
	}
	var mode string
	if err := pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Fatalf("plan_cache_mode after SingleGenericPlan = %q (%v), want auto", mode, err)
	}
}

// SingleUnsynced is Single with synchronous_commit off for its statement
// only: the tenant is set, the relaxed commit does not leak to the next
// statement on the (one) pooled connection.
func TestSingleUnsynced(t *testing.T) {
	d := testdb.New(t)
	ctx := tenancy.With(context.Background(), uuid.New())
	pool := d.OneConnPool(t, nil)
	var sync, tenant string
	if err := pgstore.SingleUnsynced(ctx, pool, func(q *pgstore.SingleQuerier) error {
		return q.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('app.tenant_id')`).Scan(&sync, &tenant)
	}); err != nil || sync != "off" {
		t.Fatalf("in SingleUnsynced: synchronous_commit %q, %v; want off", sync, err)
	}
	if id, _ := tenancy.From(ctx); tenant != id.String() {
		t.Fatalf("tenant %q, want %s", tenant, id)
	}
	if err := pgstore.Single(ctx, pool, func(q *pgstore.SingleQuerier) error {
		return q.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&sync)
	}); err != nil || sync != "on" {
		t.Fatalf("the next statement: synchronous_commit %q, %v; want on", sync, err)
	}
}
