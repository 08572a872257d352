// Package jobs runs the platform's durable background work on
// riverqueue/river: jobs are inserted in the same transaction as the state
// change that needs them, so they are never lost and never run for a
// change that rolled back.
package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/bcpdev/bcp/db"
)

// Client is the job client every service uses.
type Client = river.Client[pgx.Tx]

// RescueStuckJobsAfter is how long a job may stay "running" before it is
// handed to another worker. A process that dies (SIGKILL, OOM, lost host)
// leaves its running jobs in that state, and river's default of one hour
// meant that a Pix settlement, a checkout's safety-net settle or an order
// webhook in flight at the crash waited an hour (found by cmd/bcpchaos).
// The longest job bounds itself at one minute (river's JobTimeout and the
// settle workers; order webhooks at 45 s), so two minutes does not hand
// out a job that is still working; every job is idempotent anyway.
const RescueStuckJobsAfter = 2 * time.Minute

// FetchCooldown and FetchPollInterval: an insert announced by NOTIFY
// (InsertTx makes sure each one is) wakes a worker at once; the poll is
// the backstop for a notification lost with its listener connection, so
// a job never waits more than ~100 ms instead of river's default 1 s. A
// paid Pix goes through three jobs (the PSP's webhook, the reconciliation,
// the settle) before the agent sees its checkout completed. bcpbench, 20
// merchants, 16 agents, 20 % Pix, two pairs, with a 1 s poll and no
// InsertTx: PSP payment → completed seen by the agent p50 368/388 → 210/209
// ms with this poll, CPU per purchase unchanged (17.1/17.5 vs 15.9/15.9
// ms). The cost is one cheap fetch query per process every 100 ms.
//
// The cooldown bounds how soon a notified producer fetches again, so each
// hop of that chain waited for up to 10 ms of it: one agent, all Pix,
// payment → settled p50 48.6/49.7 ms with 10 ms, 26.4/27.2 ms with 2 ms
// (purchases/s 15.2/14.0 → 20.8/18.2, get_checkout polls per purchase
// 2.0 → 1.0). Under load the fetches batch anyway: 16 agents, 20 % Pix,
// two pairs, CPU per purchase 11.8 + 9.3 / 13.5 + 10.5 ms with 10 ms and
// 10.7 + 8.6 / 11.4 + 9.2 ms with 2 ms (round 6 of docs/performance.md).
const (
	FetchCooldown     = 2 * time.Millisecond
	FetchPollInterval = 100 * time.Millisecond
)

// The services' queues: a job is worked only by the processes hosting the
// service it belongs to (a process without its worker would fail it), so
// each service's job kinds name its queue in their InsertOpts. The default
// queue keeps only jobs queued before the queues existed.
const (
	QueueCheckout = "checkout"
	QueuePayments = "payments"
	QueueOrders   = "orders"
)

// In is the InsertOpts of a job kind of the queue's service.
func In(queue string) river.InsertOpts { return river.InsertOpts{Queue: queue} }

// NewClient returns a client that inserts jobs and, when workers is not
// empty, works them: the default queue, and the named queues of jobs only
// the processes hosting one service may work (a job whose kind this
// process has no worker for would fail here). Periodic jobs are inserted
// by whichever process's client is the elected leader.
func NewClient(pool *pgxpool.Pool, workers *river.Workers, periodic []*river.PeriodicJob, queues []string, log *slog.Logger) (*Client, error) {
	return NewClientAs("", pool, workers, periodic, queues, log)
}

// NewClientAs is NewClient with the client's id: the process incarnation's
// (internal/lease), which river records on every job the client works
// (attempted_by), so that the jobs a dead process was running are handed
// back at once (RescueGone). "": a random one.
func NewClientAs(id string, pool *pgxpool.Pool, workers *river.Workers, periodic []*river.PeriodicJob, queues []string, log *slog.Logger) (*Client, error) {
	return NewClientWith(id, pool, workers, periodic, queues, log, nil)
}

// NewClientWith is NewClientAs with river middleware (internal/tracing's
// links each job to the trace that enqueued it).
func NewClientWith(id string, pool *pgxpool.Pool, workers *river.Workers, periodic []*river.PeriodicJob, queues []string, log *slog.Logger, middleware []rivertype.Middleware) (*Client, error) {
	// A service inserts jobs another service works (paymentevents: the
	// payments service announces to checkout's queue), so an insert is not
	// refused for a kind this process has no worker for.
	cfg := &river.Config{ID: id, Schema: db.RiverSchema, Logger: warnAndAbove(log), RescueStuckJobsAfter: RescueStuckJobsAfter,
		FetchCooldown: FetchCooldown, FetchPollInterval: FetchPollInterval, SkipUnknownJobCheck: true, Middleware: middleware}
	if workers != nil {
		cfg.Workers = workers
		cfg.PeriodicJobs = periodic
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 8}}
		for _, q := range queues {
			cfg.Queues[q] = river.QueueConfig{MaxWorkers: 8}
		}
	}
	return river.NewClient(riverpgxv5.New(pool), cfg)
}

// warnAndAbove passes on river's warnings and errors only: at info level
// it reports every producer's job counts and every maintenance run, which
// with the periodic sweeps is a line every few seconds per process.
func warnAndAbove(log *slog.Logger) *slog.Logger {
	if log == nil {
		return nil
	}
	return slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(a), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
