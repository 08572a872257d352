package pgstore_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
)

// A statement like sqlc's :one queries: a write with RETURNING, two
// parameters, two columns scanned.
const benchBump = `-- name: BumpLabel :one
INSERT INTO orders.label_counters (tenant_id, last) VALUES ($1, $2)
ON CONFLICT (tenant_id) DO UPDATE SET last = orders.label_counters.last + 1
RETURNING last, tenant_id`

// syscalls reads the process's read and write system calls so far
// (/proc/self/io: syscr, syscw); ok is false where there is no such file.
func syscalls() (r, w int64, ok bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			r = n
		case "syscw":
			w = n
		}
	}
	return r, w, true
}

// benchStatements runs op b.N times on a one-connection pool and reports,
// besides allocations, the read and write system calls per statement.
func benchStatements(b *testing.B, op func(ctx context.Context, pool *pgxpool.Pool) error) {
	d := testdb.New(b)
	// The platform's pool (pgstore.Open: its uuid codec), one connection.
	pool, err := pgstore.Open(context.Background(), d.AppURL, pgstore.Options{MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	ctx := tenancy.With(context.Background(), uuid.New())
	for range 3 { // prepared, warm
		if err := op(ctx, pool); err != nil {
			b.Fatal(err)
		}
	}
	r0, w0, ok := syscalls()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := op(ctx, pool); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if r1, w1, _ := syscalls(); ok {
		b.ReportMetric(float64(r1-r0)/float64(b.N), "reads/op")
		b.ReportMetric(float64(w1-w0)/float64(b.N), "writes/op")
	}
}

func BenchmarkSingleQueryRow(b *testing.B) {
	benchStatements(b, func(ctx context.Context, pool *pgxpool.Pool) error {
		tid, _ := tenancy.From(ctx)
		var last int64
		var got uuid.UUID
		return pgstore.Single(ctx, pool, func(q *pgstore.SingleQuerier) error {
			return q.QueryRow(ctx, benchBump, tid, int64(1001)).Scan(&last, &got)
		})
	})
}

func BenchmarkSingleExec(b *testing.B) {
	benchStatements(b, func(ctx context.Context, pool *pgxpool.Pool) error {
		tid, _ := tenancy.From(ctx)
		return pgstore.Single(ctx, pool, func(q *pgstore.SingleQuerier) error {
			_, err := q.Exec(ctx, `UPDATE orders.label_counters SET last = last + 1 WHERE tenant_id = $1`, tid)
			return err
		})
	})
}

// Reads of two statements, the second a Query of its rows.
func BenchmarkReads(b *testing.B) {
	benchStatements(b, func(ctx context.Context, pool *pgxpool.Pool) error {
		tid, _ := tenancy.From(ctx)
		return pgstore.Reads(ctx, pool, func(q *pgstore.SingleQuerier) error {
			var n int64
			if err := q.QueryRow(ctx, `SELECT count(*) FROM orders.label_counters WHERE tenant_id = $1`, tid).Scan(&n); err != nil {
				return err
			}
			rows, err := q.Query(ctx, `SELECT tenant_id, last FROM orders.label_counters WHERE tenant_id = $1`, tid)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id uuid.UUID
				var last int64
				if err := rows.Scan(&id, &last); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	})
}
