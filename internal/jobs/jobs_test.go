package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type crashArgs struct{}

func (crashArgs) Kind() string { return "jobs_test_crash" }

type crashWorker struct {
	river.WorkerDefaults[crashArgs]
	done chan struct{}
}

func (w *crashWorker) Work(context.Context, *river.Job[crashArgs]) error {
	close(w.done)
	return nil
}

// A job left "running" by a process that died (here: marked running by a
// client id that no longer exists, since RescueStuckJobsAfter plus a
// minute) is worked again by the next process, not an hour later.
// Regression: river's default rescue delay (1 h) held Pix settlements and
// order webhooks in flight at a crash for an hour.
func TestJobOfDeadProcessIsRescued(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	inserter, err := jobs.NewClient(d.Pool, nil, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	res, err := inserter.Insert(ctx, crashArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	super, err := pgxpool.New(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	if _, err := super.Exec(ctx, `UPDATE river.river_job SET state = 'running', attempt = 1,
		attempted_at = now() - make_interval(secs => $2), attempted_by = ARRAY['dead-process'] WHERE id = $1`,
		res.Job.ID, (jobs.RescueStuckJobsAfter + time.Minute).Seconds()); err != nil {
		t.Fatal(err)
	}

	w := &crashWorker{done: make(chan struct{})}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c, err := jobs.NewClient(d.Pool, workers, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = c.Stop(sctx)
	}()
	select {
	case <-w.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the dead process's job was not worked again within 90 s (RescueStuckJobsAfter %s)", jobs.RescueStuckJobsAfter)
	}
}
