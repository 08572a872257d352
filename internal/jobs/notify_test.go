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
// concurrently (both transactions are open first), so they reach the
// limiters within the cooldown; on a machine slow enough to space them
// further river announces both itself. When the two limiters (river's and
// InsertTx's mirror of it) judge the gap differently, a third
// announcement is sent: harmless (one more fetch), and drained here.
func TestEveryInsertIsAnnounced(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	c, err := jobs.NewClient(d.Pool, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
		if n.Payload != `{"queue":"default"}` && n.Payload != `{"queue": "default"}` {
			t.Fatalf("notification payload %q", n.Payload)
		}
	}
	for extra := 0; ; extra++ {
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := listener.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			break
		}
		if extra == 2 {
			t.Fatal("more than one extra announcement for two inserts")
		}
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
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if n, err := listener.Conn().WaitForNotification(wctx); err == nil {
		t.Fatalf("a scheduled job was announced: %q", n.Payload)
	}
}
