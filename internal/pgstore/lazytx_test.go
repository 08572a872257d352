package pgstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// wire records the frontend messages a connection writes, one string of
// message types per write (B Bind, D Describe, E Execute, S Sync, Q
// Query, P Parse, C Close).
type wire struct {
	mu     sync.Mutex
	writes []string
}

func (w *wire) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := w.writes
	w.writes = nil
	return got
}

type wireConn struct {
	net.Conn
	w *wire
}

func (c *wireConn) Write(b []byte) (int, error) {
	var types []byte
	for p := b; len(p) >= 5; {
		n := int(binary.BigEndian.Uint32(p[1:5]))
		types = append(types, p[0])
		if n < 4 || n+1 > len(p) {
			break
		}
		p = p[n+1:]
	}
	c.w.mu.Lock()
	c.w.writes = append(c.w.writes, string(types))
	c.w.mu.Unlock()
	return c.Conn.Write(b)
}

// wirePool is a pool of one connection (of pgstore.Open's kind) whose
// writes w records.
func wirePool(t *testing.T, d *testdb.DB, w *wire) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(d.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &wireConn{Conn: c, w: w}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// A transaction's statements go out prepared, once prepared on the
// connection: BEGIN, the scope and the first statement in one write (one
// Sync), each later statement alone (Bind, Execute, Sync; a Describe only
// for a statement without result columns, whose description has none),
// COMMIT as one simple query. Nothing is parsed again.
func TestInTenantMessages(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	w := &wire{}
	pool := wirePool(t, d, w)
	a := uuid.New()
	inA := tenancy.With(ctx, a)
	const insert = `INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, $2)`
	const get = `SELECT last FROM orders.label_counters WHERE tenant_id = $1`
	const bump = `UPDATE orders.label_counters SET last = last + 1 WHERE tenant_id = $1`
	if err := pgstore.Single(inA, pool, func(q *pgstore.SingleQuerier) error {
		_, err := q.Exec(inA, insert, a, 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var last int64
	purchase := func() {
		t.Helper()
		err := pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
			if err := tx.QueryRow(inA, get, a).Scan(&last); err != nil {
				return err
			}
			if _, err := tx.Exec(inA, bump, a); err != nil {
				return err
			}
			rows, err := tx.Query(inA, get, a)
			if err != nil {
				return err
			}
			for rows.Next() {
				if err := rows.Scan(&last); err != nil {
					return err
				}
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	purchase() // prepares
	w.take()
	purchase()
	want := []string{"BDEBEBES", "BDES", "BES", "Q"}
	if got := w.take(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("a transaction of three statements wrote %q, want %q", got, want)
	}
	if last != 3 {
		t.Errorf("last %d, want 3", last)
	}
	// Each statement is prepared once on the connection (not once more
	// by pgx's statement cache).
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`, get).Scan(&n); err != nil || n != 1 {
		t.Errorf("the statement is prepared %d times (%v), want once", n, err)
	}
}

// A transaction's later statement is prepared again after a schema
// change, as Single's: the first transaction after it fails (cached plan
// must not change result type), the next one runs, and the stale
// statement is deallocated. After COMMIT the transaction is closed.
func TestInTenantPreparesAgainAfterASchemaChange(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	pool := d.OneConnPool(t, nil)
	a := uuid.New()
	inA := tenancy.With(ctx, a)
	const all = `SELECT * FROM orders.label_counters WHERE tenant_id = $1`
	var kept pgx.Tx
	columns := func() (n int, err error) {
		err = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
			kept = tx
			if _, err := tx.Exec(inA, `INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, 1) ON CONFLICT DO NOTHING`, a); err != nil {
				return err
			}
			rows, err := tx.Query(inA, all, a)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				n = len(rows.RawValues())
			}
			return rows.Err()
		})
		return n, err
	}
	before, err := columns()
	if err != nil || before == 0 {
		t.Fatalf("%d columns, %v", before, err)
	}
	if _, err := kept.Exec(ctx, `DELETE FROM orders.label_counters`); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("a statement after COMMIT: %v, want pgx.ErrTxClosed", err)
	}
	if err := kept.QueryRow(ctx, `SELECT 1`).Scan(new(int)); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("a row after COMMIT: %v, want pgx.ErrTxClosed", err)
	}
	owner, err := pgx.Connect(ctx, d.OwnerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	if _, err := owner.Exec(ctx, `ALTER TABLE orders.label_counters ADD COLUMN note text`); err != nil {
		t.Fatal(err)
	}
	var pgErr *pgconn.PgError
	if _, err := columns(); !errors.As(err, &pgErr) || pgErr.Code != "0A000" {
		t.Fatalf("the first transaction after the change: %v, want cached plan must not change result type", err)
	}
	if n, err := columns(); err != nil || n != before+1 {
		t.Fatalf("after the change: %d columns, %v; want %d", n, err, before+1)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`, all).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the statement is prepared %d times (%v), want once (the stale one deallocated)", n, err)
	}
}

// What cannot go prepared goes as pgx sends it, in the same transaction
// and scope: named arguments first (the transaction is then pgx's) or
// later, an Exec of several statements without arguments, a row never
// scanned before the next statement.
func TestInTenantStatementsPgxSends(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	pool := d.OneConnPool(t, nil)
	a := uuid.New()
	inA := tenancy.With(ctx, a)
	var got []string
	read := func(tx pgx.Tx, sql string, args ...any) error {
		var s string
		if err := tx.QueryRow(ctx, sql, args...).Scan(&s); err != nil {
			return err
		}
		got = append(got, s)
		return nil
	}
	err := pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		if err := read(tx, `SELECT current_setting('app.tenant_id') || @x::text`, pgx.NamedArgs{"x": "/1"}); err != nil {
			return err
		}
		return read(tx, `SELECT current_setting('app.tenant_id') || $1::text`, "/2")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		_ = tx.QueryRow(ctx, `SELECT 1`) // never scanned
		if err := read(tx, `SELECT current_setting('app.tenant_id') || @x::text`, pgx.NamedArgs{"x": "/3"}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO orders.label_counters (tenant_id, last) VALUES ('`+a.String()+`', 1); UPDATE orders.label_counters SET last = 4`); err != nil {
			return err
		}
		return read(tx, `SELECT current_setting('app.tenant_id') || '/' || last FROM orders.label_counters`)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Large objects need pgx's transaction: begun prepared, the
	// transaction is still one (the object and the setting both in it).
	err = pgstore.InTenant(inA, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE orders.label_counters SET last = 5 WHERE tenant_id = $1`, a); err != nil {
			return err
		}
		lo := tx.LargeObjects()
		oid, err := lo.Create(ctx, 0)
		if err != nil {
			return err
		}
		obj, err := lo.Open(ctx, oid, pgx.LargeObjectModeWrite)
		if err != nil {
			return err
		}
		if _, err := obj.Write([]byte("x")); err != nil {
			return err
		}
		if err := obj.Close(); err != nil {
			return err
		}
		if err := lo.Unlink(ctx, oid); err != nil {
			return err
		}
		return read(tx, `SELECT current_setting('app.tenant_id') || '/' || last FROM orders.label_counters`)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a.String() + "/1", a.String() + "/2", a.String() + "/3", a.String() + "/4", a.String() + "/5"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
}
