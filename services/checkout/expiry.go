package checkout

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// Sessions are closed at their expiry by a periodic sweep (SweepArgs):
// the leader's job client inserts one every SweepEvery; it lists every
// tenant's due open sessions (ids only, in the read-only checkout_expiry
// scope) and closes each in its tenant's scope, exactly as a read after
// the expiry would. Until the sweep comes round, any read, update or
// completion of an expired session closes it first, so an agent never
// sees one open past its expires_at. The sweep replaced a durable job per
// checkout (one more statement in every create, and a job worked even for
// the checkouts that completed).

// SweepEvery is how often the expiry sweep runs by default.
const SweepEvery = 15 * time.Second

// sweepBatch bounds one listing; a sweep lists again while batches come
// back full, up to sweepBatches of them (the next sweep takes the rest).
const (
	sweepBatch   = 500
	sweepBatches = 20
)

// SweepArgs is the periodic expiry sweep.
type SweepArgs struct{}

// Kind names the job.
func (SweepArgs) Kind() string { return "checkout_expiry_sweep" }

// SweepWorker works SweepArgs jobs.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	Service *Service
}

// Work runs one sweep.
func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, err := w.Service.Sweep(ctx)
	return err
}

// SweepJob is the periodic job that inserts a sweep every interval (river
// runs periodic jobs on the elected leader only: one sweep at a time
// across processes).
func SweepJob(every time.Duration) *river.PeriodicJob {
	if every <= 0 {
		every = SweepEvery
	}
	return river.NewPeriodicJob(river.PeriodicInterval(every), func() (river.JobArgs, *river.InsertOpts) {
		return SweepArgs{}, &river.InsertOpts{MaxAttempts: 3}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}

// Sweep closes every tenant's open sessions past their expiry and says how
// many it closed. A session that changed meanwhile is left to its own
// path (expire re-reads it); one that fails is logged and retried by the
// next sweep.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	closed := 0
	for range sweepBatches {
		var due []checkoutdb.ListDueSessionsRow
		err := pgstore.InCheckoutExpiry(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			due, err = checkoutdb.New(tx).ListDueSessions(ctx, checkoutdb.ListDueSessionsParams{Now: s.now(), MaxRows: sweepBatch})
			return err
		})
		if err != nil {
			return closed, err
		}
		failed := 0
		for _, d := range due {
			res, err := s.expire(tenancy.With(ctx, d.TenantID), d.ID)
			switch {
			case err != nil:
				failed++
				slog.WarnContext(ctx, "checkout: expiry sweep could not close a session", "tenant_id", d.TenantID, "checkout_id", d.ID, "err", err)
			case res.GetStatus() == bcp.StatusCanceled:
				closed++
			}
		}
		if len(due) < sweepBatch || failed == len(due) {
			break
		}
	}
	return closed, nil
}

// ExpireArgs is the durable job that closed one session at its expiry,
// inserted with the session before the sweep existed. New sessions no
// longer get one; the worker stays for the jobs already queued.
type ExpireArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	CheckoutID string    `json:"checkout_id"`
}

// Kind names the job.
func (ExpireArgs) Kind() string { return "checkout_expire" }

// ExpireWorker works ExpireArgs jobs.
type ExpireWorker struct {
	river.WorkerDefaults[ExpireArgs]
	Service *Service
}

// Work cancels the session if it is still open and past its expiry (an
// open completion is left to the payment).
func (w *ExpireWorker) Work(ctx context.Context, job *river.Job[ExpireArgs]) error {
	_, err := w.Service.expire(tenancy.With(ctx, job.Args.TenantID), job.Args.CheckoutID)
	return err
}

// UseJobs gives the service its job client (set after construction because
// the client's workers need the service).
func (s *Service) UseJobs(c *jobs.Client) { s.jobs = c }
