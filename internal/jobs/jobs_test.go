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

type elsewhereArgs struct{}

func (elsewhereArgs) Kind() string { return "jobs_test_elsewhere" }

type unknownArgs struct{}

func (unknownArgs) Kind() string { return "jobs_test_unknown" }

// The leader rescues every stuck job, whichever service's: a job of a
// kind it registered only a stand-in for (jobs.AddWorker, not hosted) goes
// back to its queue for the processes hosting its service, where one of a
// kind it does not know at all is discarded for good (river's rule, and
// what lost an order webhook with one role per process).
func TestLeaderHandsBackStuckJobsOfServicesHostedElsewhere(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	inserter, err := jobs.NewClient(d.Pool, nil, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	opts := jobs.In(jobs.QueueOrders)
	mine, err := inserter.Insert(ctx, elsewhereArgs{}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := inserter.Insert(ctx, unknownArgs{}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	super, err := pgxpool.New(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	if _, err := super.Exec(ctx, `UPDATE river.river_job SET state = 'running', attempt = 1,
		attempted_at = now() - make_interval(secs => $2), attempted_by = ARRAY['killed-orders-process'] WHERE id = ANY($1)`,
		[]int64{mine.Job.ID, unknown.Job.ID}, (jobs.RescueStuckJobsAfter + time.Minute).Seconds()); err != nil {
		t.Fatal(err)
	}

	// A checkout process: it works the checkout queue only, and stands in
	// for the orders kind.
	workers := river.NewWorkers()
	jobs.AddWorker(workers, river.Worker[elsewhereArgs](nil), false)
	c, err := jobs.NewClient(d.Pool, workers, nil, []string{jobs.QueueCheckout}, log)
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
	state := func(id int64) (s string) {
		if err := super.QueryRow(ctx, `SELECT state FROM river.river_job WHERE id = $1`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	deadline := time.Now().Add(90 * time.Second)
	for state(mine.Job.ID) == "running" || state(unknown.Job.ID) == "running" {
		if time.Now().After(deadline) {
			t.Fatalf("not rescued within 90 s: %s, %s", state(mine.Job.ID), state(unknown.Job.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var queue string
	var attempt int
	if err := super.QueryRow(ctx, `SELECT queue, attempt FROM river.river_job WHERE id = $1`, mine.Job.ID).Scan(&queue, &attempt); err != nil {
		t.Fatal(err)
	}
	if s := state(mine.Job.ID); (s != "retryable" && s != "available") || queue != jobs.QueueOrders || attempt != 1 {
		t.Errorf("the stood-in job is %s in queue %s after attempt %d, want retryable (or available) in %s after attempt 1", s, queue, attempt, jobs.QueueOrders)
	}
	if s := state(unknown.Job.ID); s != "discarded" {
		t.Errorf("the job of an unknown kind is %s; river discards it (the rule the stand-in works around)", s)
	}
}
