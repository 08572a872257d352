package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
)

// sends counts what a pool sends to the server: each query or batch is one
// round trip.
type sends struct{ queries, batches, batchQueries atomic.Int64 }

func (s *sends) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.queries.Add(1)
	return ctx
}
func (s *sends) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (s *sends) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.batches.Add(1)
	return ctx
}
func (s *sends) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	s.batchQueries.Add(1)
}
func (s *sends) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (s *sends) roundTrips() int64 {
	n := s.queries.Load() + s.batches.Load()
	s.queries.Store(0)
	s.batches.Store(0)
	s.batchQueries.Store(0)
	return n
}

// An InTenant transaction sends BEGIN and the tenant setting with its first
// statement: n statements cost n + 1 round trips (the last is COMMIT), and
// one that runs none costs none. Whichever way the first statement is sent,
// the transaction is one: in the tenant's scope, all or nothing, and the
// connection goes back to the pool clean.
func TestInTenantBeginsWithTheFirstStatement(t *testing.T) {
	ctx := context.Background()
	tr := &sends{}
	// Every transaction on the same connection: a leak shows in the next one.
	pool := testdb.New(t).OneConnPool(t, tr)
	if err := pool.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	a := uuid.New()
	inA := tenancy.With(ctx, a)
	const insert = `INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, $2)`
	count := func() (n int) {
		t.Helper()
		if err := pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM orders.label_counters`).Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tr.roundTrips()

	// Three statements, the first an Exec: four round trips.
	var setting string
	var rows int
	err := pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insert, a, 1); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT current_setting('app.tenant_id')`).Scan(&setting); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM orders.label_counters`).Scan(&rows)
	})
	if err != nil || setting != a.String() || rows != 1 {
		t.Fatalf("err %v, app.tenant_id %q, %d rows", err, setting, rows)
	}
	if n := tr.roundTrips(); n != 4 {
		t.Errorf("three statements took %d round trips, want 4", n)
	}
	// None: no round trip, no error.
	if err := pgstore.InTenant(inA, pool, func(pgx.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := tr.roundTrips(); n != 0 {
		t.Errorf("an empty transaction took %d round trips", n)
	}
	// The first statement a Query: its rows, then a write, both in scope.
	var seen []uuid.UUID
	err = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, `SELECT tenant_id FROM orders.label_counters`)
		if err != nil {
			return err
		}
		for r.Next() {
			var id uuid.UUID
			if err := r.Scan(&id); err != nil {
				return err
			}
			seen = append(seen, id)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE orders.label_counters SET last = 2`)
		return err
	})
	if err != nil || len(seen) != 1 || seen[0] != a {
		t.Fatalf("query first: %v %v", seen, err)
	}
	if n := tr.roundTrips(); n != 3 {
		t.Errorf("two statements took %d round trips, want 3", n)
	}

	// All or nothing: a later failure undoes the first statement's write;
	// a failing first statement (RLS refuses another tenant's row) too.
	boom := errors.New("boom")
	err = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM orders.label_counters`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || count() != 1 {
		t.Fatalf("failed transaction: %v, %d rows", err, count())
	}
	err = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, insert, uuid.New(), 1)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "row-level security") {
		t.Fatalf("insert for another tenant: %v", err)
	}
	// A panic rolls back too, and the connection stays usable.
	func() {
		defer func() { _ = recover() }()
		_ = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM orders.label_counters`); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if n := count(); n != 1 {
		t.Fatalf("after a panic: %d rows, want 1", n)
	}

	// A nested transaction (savepoint) as the first call, and a batch.
	err = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := sp.Exec(ctx, `DELETE FROM orders.label_counters`); err != nil {
			return err
		}
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(`UPDATE orders.label_counters SET last = 3`)
		b.Queue(`SELECT current_setting('app.tenant_id')`)
		br := tx.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&setting); err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil || setting != a.String() || count() != 1 {
		t.Fatalf("savepoint and batch: %v, app.tenant_id %q, %d rows", err, setting, count())
	}

	// The setting never outlives its transaction.
	for range 2 {
		var after *string
		if err := pool.QueryRow(ctx, `SELECT current_setting('app.tenant_id', true)`).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if after != nil && *after != "" {
			t.Fatalf("app.tenant_id leaked to the pooled connection: %q", *after)
		}
	}
}

// Reads sends each statement behind the tenant's scope in one round trip
// (no BEGIN, no COMMIT): every statement sees the tenant's rows and only
// them, none can write, a failed one leaves the next one working, and
// nothing outlives it on the pooled connection.
func TestReadsScopeEachStatement(t *testing.T) {
	ctx := context.Background()
	tr := &sends{}
	pool := testdb.New(t).OneConnPool(t, tr)
	a, b := uuid.New(), uuid.New()
	inA := tenancy.With(ctx, a)
	const insert = `INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, $2)`
	for _, id := range []uuid.UUID{a, b} {
		if err := pgstore.Single(tenancy.With(ctx, id), pool, func(q *pgstore.SingleQuerier) error {
			_, err := q.Exec(ctx, insert, id, 5)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	tr.roundTrips()

	// Three statements, three round trips, each in A's scope.
	var rows int
	var setting string
	var seen []uuid.UUID
	err := pgstore.Reads(inA, pool, func(q *pgstore.SingleQuerier) error {
		if err := q.QueryRow(ctx, `SELECT count(*) FROM orders.label_counters`).Scan(&rows); err != nil {
			return err
		}
		if err := q.QueryRow(ctx, `SELECT current_setting('app.tenant_id')`).Scan(&setting); err != nil {
			return err
		}
		r, err := q.Query(ctx, `SELECT tenant_id FROM orders.label_counters`)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var id uuid.UUID
			if err := r.Scan(&id); err != nil {
				return err
			}
			seen = append(seen, id)
		}
		return r.Err()
	})
	if err != nil || rows != 1 || setting != a.String() || len(seen) != 1 || seen[0] != a {
		t.Fatalf("err %v, %d rows, app.tenant_id %q, tenants seen %v", err, rows, setting, seen)
	}
	if n := tr.roundTrips(); n != 3 {
		t.Errorf("three statements took %d round trips, want 3", n)
	}

	// No write: an insert, an update in a CTE, a row lock all fail; the
	// statement after a failure (and after a row never scanned) runs.
	var failures []string
	err = pgstore.Reads(inA, pool, func(q *pgstore.SingleQuerier) error {
		for _, w := range []string{
			`INSERT INTO orders.label_counters (tenant_id, last) VALUES ('` + a.String() + `', 9)`,
			`WITH u AS (UPDATE orders.label_counters SET last = 9 RETURNING 1) SELECT count(*) FROM u`,
			`SELECT last FROM orders.label_counters FOR UPDATE`,
		} {
			_, err := q.Exec(ctx, w)
			failures = append(failures, fmt.Sprint(err))
		}
		_ = q.QueryRow(ctx, `SELECT 1`) // never scanned
		return q.QueryRow(ctx, `SELECT last FROM orders.label_counters`).Scan(&rows)
	})
	if err != nil || rows != 5 {
		t.Fatalf("after the refused writes: err %v, last %d, want 5", err, rows)
	}
	for i, f := range failures {
		if !strings.Contains(f, "read-only transaction") {
			t.Errorf("write %d: %s, want a read-only refusal", i, f)
		}
	}
	// A batch would go without the scope: refused.
	err = pgstore.Reads(inA, pool, func(q *pgstore.SingleQuerier) error {
		bt := &pgx.Batch{}
		bt.Queue(`SELECT 1`)
		return q.SendBatch(ctx, bt).Close()
	})
	if err == nil {
		t.Fatal("Reads ran a batch")
	}
	// None: no round trip.
	tr.roundTrips()
	if err := pgstore.Reads(inA, pool, func(*pgstore.SingleQuerier) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := tr.roundTrips(); n != 0 {
		t.Errorf("no statement took %d round trips", n)
	}
	// Without a tenant nothing runs.
	if err := pgstore.Reads(ctx, pool, func(*pgstore.SingleQuerier) error { t.Fatal("ran without a tenant"); return nil }); err == nil {
		t.Fatal("Reads without a tenant succeeded")
	}

	// Nothing left on the (one) connection: no tenant, writable again.
	var after *string
	var readOnly string
	if err := pool.QueryRow(ctx, `SELECT current_setting('app.tenant_id', true), current_setting('transaction_read_only')`).Scan(&after, &readOnly); err != nil {
		t.Fatal(err)
	}
	if (after != nil && *after != "") || readOnly != "off" {
		t.Fatalf("left on the pooled connection: app.tenant_id %v, transaction_read_only %s", after, readOnly)
	}
	if err := pgstore.Single(inA, pool, func(q *pgstore.SingleQuerier) error {
		_, err := q.Exec(ctx, `UPDATE orders.label_counters SET last = 6`)
		return err
	}); err != nil {
		t.Fatalf("a write after Reads: %v", err)
	}
}
