package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/testdb"
)

type chainArgs struct{ N int }

func (chainArgs) Kind() string { return "jobs_test_chain" }

// Two jobs inserted back to back, in two transactions (as a job chain
// does): each commit must announce itself. River alone notifies once per
// FetchCooldown and dropped the second, which then waited for the next
// poll; jobs.InsertTx sends the missing one. The two inserts run
// concurrently (both transactions are open first), so they usually reach
// the limiters within the cooldown. Exactly two announcements arrive
// whatever the timing: when both river and InsertTx announce one insert,
// they send the same payload in the same transaction, which PostgreSQL
// delivers once.
//
// Regression (CI, 2026-11-30): "insert 2 of 2 was not announced" on a
// loaded machine, where river's NOTIFY round trip for the first insert
// outlasted the window InsertTx judged by (TestLimiterOverlappingCalls).
func TestEveryInsertIsAnnounced(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	c, err := jobs.NewClient(d.Pool, nil, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	listener, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, `LISTEN "river.river_insert"`); err != nil {
		t.Fatal(err)
	}
	var txs []pgx.Tx
	for range 2 {
		tx, err := d.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		txs = append(txs, tx)
	}
	// Concurrently, so that both reach the limiters within the cooldown.
	var wg sync.WaitGroup
	errs := make([]error, len(txs))
	for i, tx := range txs {
		wg.Go(func() { _, errs[i] = jobs.InsertTx(ctx, c, tx, chainArgs{N: i}, nil) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tx := range txs {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := listener.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("insert %d of 2 was not announced: %v", i+1, err)
		}
		if n.Payload != `{"queue": "default"}` {
			t.Fatalf("notification payload %q, want river's own", n.Payload)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	n, err := listener.Conn().WaitForNotification(wctx)
	cancel()
	if err == nil {
		t.Fatalf("a third announcement for two inserts: %q", n.Payload)
	}
	// A scheduled job is found by its schedule, not announced.
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.InsertTx(ctx, c, tx, chainArgs{N: 3}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if n, err := listener.Conn().WaitForNotification(wctx); err == nil {
		t.Fatalf("a scheduled job was announced: %q", n.Payload)
	}
}
