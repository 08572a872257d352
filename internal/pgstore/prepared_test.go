package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
)

// Single prepares its statement once per connection. A migration that
// changes the statement's result type makes the next call fail, as pgx's
// own statement cache does ("cached plan must not change result type"),
// and the one after it prepare the statement again; the old one is
// deallocated, and a failure of another kind (a duplicate key) keeps the
// statement prepared.
func TestSinglePreparesAgainAfterASchemaChange(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	pool := d.OneConnPool(t, nil) // one connection: its prepared statements show
	a := uuid.New()
	inA := tenancy.With(ctx, a)
	const insert = `INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, $2)`
	const all = `SELECT * FROM orders.label_counters`
	exec := func(sql string, args ...any) error {
		return pgstore.Single(inA, pool, func(q *pgstore.SingleQuerier) error {
			_, err := q.Exec(inA, sql, args...)
			return err
		})
	}
	columns := func() (n int, err error) {
		err = pgstore.Single(inA, pool, func(q *pgstore.SingleQuerier) error {
			rows, err := q.Query(inA, all)
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
	prepared := func(sql string) (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := exec(insert, a, 41); err != nil {
		t.Fatal(err)
	}
	var pgErr *pgconn.PgError
	if err := exec(insert, a, 42); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("duplicate insert: %v", err)
	}
	if n := prepared(insert); n != 1 {
		t.Fatalf("the insert is prepared %d times after a duplicate key, want 1", n)
	}
	before, err := columns()
	if err != nil || before == 0 {
		t.Fatalf("%d columns, %v", before, err)
	}

	owner, err := pgx.Connect(ctx, d.OwnerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	if _, err := owner.Exec(ctx, `ALTER TABLE orders.label_counters ADD COLUMN note text`); err != nil {
		t.Fatal(err)
	}
	if _, err := columns(); !errors.As(err, &pgErr) || pgErr.Code != "0A000" {
		t.Fatalf("the first call after the change: %v, want cached plan must not change result type", err)
	}
	if n, err := columns(); err != nil || n != before+1 {
		t.Fatalf("after the change: %d columns, %v; want %d", n, err, before+1)
	}
	if n := prepared(all); n != 1 {
		t.Fatalf("the statement is prepared %d times on the connection, want 1 (the stale one deallocated)", n)
	}
}

// batchLog records what a batch tracer is shown.
type batchLog struct{ events []string }

func (l *batchLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.events = append(l.events, "query "+d.SQL)
	return ctx
}
func (l *batchLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *batchLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	e := "start"
	for _, q := range d.Batch.QueuedQueries {
		e += fmt.Sprintf(" [%s %v]", q.SQL, q.Arguments)
	}
	l.events = append(l.events, e)
	return ctx
}
func (l *batchLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.events = append(l.events, fmt.Sprintf("result %s %v %q %v", d.SQL, d.Args, d.CommandTag, d.Err != nil))
}
func (l *batchLog) TraceBatchEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	l.events = append(l.events, fmt.Sprintf("end %v", d.Err != nil))
}

// A tracer sees each statement as the batch it goes in: its start with
// set_config and the statement (their arguments), each one's result and
// the end, failed or not, whichever way the statement is read.
func TestSingleShowsTheTracerItsBatch(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	log := &batchLog{}
	pool := d.OneConnPool(t, log)
	a := uuid.New()
	inA := tenancy.With(ctx, a)
	const insert = `INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, $2)`
	const get = `SELECT last FROM orders.label_counters WHERE tenant_id = $1`
	setup := `SELECT set_config('app.tenant_id', $1, true)`
	var last int64
	for _, c := range []struct {
		name string
		fn   func(q *pgstore.SingleQuerier) error
		want []string
	}{
		{"exec", func(q *pgstore.SingleQuerier) error { _, err := q.Exec(inA, insert, a, 41); return err }, []string{
			fmt.Sprintf("start [%s [%s]] [%s [%s 41]]", setup, a, insert, a),
			fmt.Sprintf("result %s [%s] %q false", setup, a, "SELECT 1"),
			fmt.Sprintf("result %s [%s 41] %q false", insert, a, "INSERT 0 1"),
			"end false",
		}},
		{"failed exec", func(q *pgstore.SingleQuerier) error { _, err := q.Exec(inA, insert, a, 42); return err }, []string{
			fmt.Sprintf("start [%s [%s]] [%s [%s 42]]", setup, a, insert, a),
			fmt.Sprintf("result %s [%s] %q false", setup, a, "SELECT 1"),
			fmt.Sprintf("result %s [%s 42] %q true", insert, a, ""),
			"end true",
		}},
		{"query row", func(q *pgstore.SingleQuerier) error { return q.QueryRow(inA, get, a).Scan(&last) }, []string{
			fmt.Sprintf("start [%s [%s]] [%s [%s]]", setup, a, get, a),
			fmt.Sprintf("result %s [%s] %q false", setup, a, "SELECT 1"),
			fmt.Sprintf("result %s [%s] %q false", get, a, "SELECT 1"),
			"end false",
		}},
		{"query", func(q *pgstore.SingleQuerier) error {
			rows, err := q.Query(inA, get, a)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		}, []string{
			fmt.Sprintf("start [%s [%s]] [%s [%s]]", setup, a, get, a),
			fmt.Sprintf("result %s [%s] %q false", setup, a, "SELECT 1"),
			fmt.Sprintf("result %s [%s] %q false", get, a, "SELECT 1"),
			"end false",
		}},
	} {
		for range 2 { // preparing, then prepared
			log.events = nil
			err := pgstore.Single(inA, pool, c.fn)
			if (err != nil) != (c.name == "failed exec") {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := strings.Join(log.events, "\n"); got != strings.Join(c.want, "\n") {
				t.Errorf("%s: the tracer saw\n%s\nwant\n%s", c.name, got, strings.Join(c.want, "\n"))
			}
			if c.name == "exec" {
				break // once: the row exists now
			}
		}
	}
}

// rowScanner scans a whole row itself (pgx.RowScanner).
type rowScanner struct {
	s string
	n int64
}

func (r *rowScanner) ScanRow(rows pgx.Rows) error { return rows.Scan(&r.s, &r.n) }

// QueryRow's Scan answers as pgx's own: the values, no rows, too few or
// too many destinations, a value that does not fit, a row scanner; the
// connection stays usable after each.
func TestSingleQueryRowScansAsPgx(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	pool := d.OneConnPool(t, nil)
	inA := tenancy.With(ctx, uuid.New())
	const row = `SELECT 'x'::text AS s, 2::int8 AS n WHERE $1::bool`
	var s string
	var n int64
	var b bool
	var rs rowScanner
	for _, c := range []struct {
		name string
		arg  bool
		dest func() []any
	}{
		{"values", true, func() []any { return []any{&s, &n} }},
		{"no rows", false, func() []any { return []any{&s, &n} }},
		{"too few", true, func() []any { return []any{&s} }},
		{"a nil destination", true, func() []any { return []any{nil, &n} }},
		{"does not fit", true, func() []any { return []any{&s, &b} }},
		{"row scanner", true, func() []any { return []any{&rs} }},
	} {
		s, n, rs = "", 0, rowScanner{}
		want := pool.QueryRow(ctx, row, c.arg).Scan(c.dest()...)
		wantS, wantN, wantRS := s, n, rs
		s, n, rs = "", 0, rowScanner{}
		got := pgstore.Single(inA, pool, func(q *pgstore.SingleQuerier) error {
			return q.QueryRow(inA, row, c.arg).Scan(c.dest()...)
		})
		if fmt.Sprint(got) != fmt.Sprint(want) || s != wantS || n != wantN || rs != wantRS {
			t.Errorf("%s: Single scanned %q %d %v, %v; pgx %q %d %v, %v", c.name, s, n, rs, got, wantS, wantN, wantRS, want)
		}
		if c.name == "values" && (s != "x" || n != 2) {
			t.Errorf("values: %q %d", s, n)
		}
	}
}
