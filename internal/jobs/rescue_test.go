package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/testdb"
)

// The jobs a process that is gone left running are made available again
// at once, not after RescueStuckJobsAfter; those of a live process, and
// those without attempts left, are not touched.
func TestRescueGone(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	inserter, err := jobs.NewClient(d.Pool, nil, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	super, err := pgxpool.New(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	running := func(by string, attempt int) int64 {
		t.Helper()
		res, err := inserter.Insert(ctx, crashArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := super.Exec(ctx, `UPDATE river.river_job SET state = 'running', attempt = $3, attempted_at = now(),
			attempted_by = ARRAY['an-earlier-client', $2] WHERE id = $1`, res.Job.ID, by, attempt); err != nil {
			t.Fatal(err)
		}
		return res.Job.ID
	}
	const dead, live = "0000aaaa.000000000001", "0000bbbb.000000000002"
	ofDead, ofLive, lastTry := running(dead, 1), running(live, 1), running(dead, 25)
	var asked []string
	n, err := jobs.RescueGone(ctx, d.Pool, func(_ context.Context, owners []string) (map[string]bool, error) {
		asked = owners
		return map[string]bool{dead: true}, nil
	})
	if err != nil || n != 1 {
		t.Fatalf("RescueGone = %d, %v; want 1 (asked about %v)", n, err, asked)
	}
	for id, want := range map[int64]string{ofDead: "available", ofLive: "running", lastTry: "running"} {
		var state string
		if err := super.QueryRow(ctx, `SELECT state FROM river.river_job WHERE id = $1`, id).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state != want {
			t.Errorf("job %d: %s, want %s", id, state, want)
		}
	}
}
