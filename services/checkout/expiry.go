package checkout

import (
	"context"
	"errors"
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

// Two sweeps, run together by one periodic job (SweepArgs; the leader's
// job client inserts one every jobs.SweepEvery), keep sessions moving without
// a job per checkout:
//   - expiry: every tenant's open sessions past expires_at are closed,
//     exactly as a read after the expiry would (until the sweep comes
//     round, any read, update or completion of an expired session closes
//     it first, so an agent never sees one open past its expires_at);
//   - settle: every completion still in progress past its settle_after
//     (set when the attempt is claimed, settleSafetyNet later) is settled
//     from the payments service's record, e.g. after the process died
//     between charging and writing the order.
// Both list ids only, in the read-only checkout_sweep scope, and act in
// each session's own tenant scope. They replaced two durable jobs per
// checkout (a job insert in every create and every completion, and a job
// worked later even for the checkouts that completed normally).

// settleRetry is when a settle sweep tries again after a failed settle.
const settleRetry = time.Minute

// SweepArgs is the periodic sweep.
type SweepArgs struct{}

// Kind names the job.
func (SweepArgs) Kind() string { return "checkout_sweep" }

// SweepWorker works SweepArgs jobs.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	Service *Service
}

// Work runs both sweeps; a listing that fails fails the job (the next one
// comes round anyway).
func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, expErr := w.Service.SweepExpired(ctx)
	_, setErr := w.Service.SweepSettles(ctx)
	return errors.Join(expErr, setErr)
}

// SweepJob is the periodic job that inserts a sweep every interval.
func SweepJob(every time.Duration) *river.PeriodicJob { return jobs.Periodic(every, SweepArgs{}) }

// sweep lists due sessions with list in the read-only checkout_sweep
// scope and acts on each (a failure is logged; the next sweep sees the
// session again).
func sweep[T any](ctx context.Context, s *Service, list func(checkoutdb.Queries, time.Time) ([]T, error), act func(T) (bool, error)) (int, error) {
	return jobs.Sweep(ctx, func(ctx context.Context) ([]T, error) {
		var due []T
		err := pgstore.InCheckoutSweep(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			due, err = list(*checkoutdb.New(tx), s.now())
			return err
		})
		return due, err
	}, act, func(d T, err error) {
		slog.WarnContext(ctx, "checkout: sweep could not move a session", "session", d, "err", err)
	})
}

// SweepExpired closes every tenant's open sessions past their expiry and
// says how many it closed.
func (s *Service) SweepExpired(ctx context.Context) (int, error) {
	return sweep(ctx, s, func(q checkoutdb.Queries, now time.Time) ([]checkoutdb.ListDueSessionsRow, error) {
		return q.ListDueSessions(ctx, checkoutdb.ListDueSessionsParams{Now: now, MaxRows: jobs.SweepBatch})
	}, func(d checkoutdb.ListDueSessionsRow) (bool, error) {
		res, err := s.expire(tenancy.With(ctx, d.TenantID), d.ID)
		return err == nil && res.GetStatus() == bcp.StatusCanceled, err
	})
}

// SweepSettles settles every tenant's completions still in progress past
// their settle_after and says how many it settled. A settle that leaves
// the session in progress (a Pix not paid yet, a card charge the
// processor has not confirmed) or that failed is looked at again
// settleRetry later: the payments service tells checkout of a decided
// Pix with a call, not a durable job, so this sweep is what makes sure a
// paid Pix gets its order if that call was lost. Once the session has
// left complete_in_progress, settle_after is cleared.
func (s *Service) SweepSettles(ctx context.Context) (int, error) {
	return sweep(ctx, s, func(q checkoutdb.Queries, now time.Time) ([]checkoutdb.ListDueSettlesRow, error) {
		return q.ListDueSettles(ctx, checkoutdb.ListDueSettlesParams{Now: now, MaxRows: jobs.SweepBatch})
	}, func(d checkoutdb.ListDueSettlesRow) (bool, error) {
		if d.PaymentAttemptID == nil {
			return false, nil // not a claimed completion: nothing to settle
		}
		tctx := tenancy.With(ctx, d.TenantID)
		res, err := s.settle(tctx, d.ID, *d.PaymentAttemptID, true)
		var next *time.Time
		if err != nil || res.GetStatus() == bcp.StatusCompleteInProgress {
			t := s.now().Add(settleRetry)
			next = &t
		}
		if uerr := pgstore.Single(tctx, s.pool, func(q *pgstore.SingleQuerier) error {
			_, err := checkoutdb.New(q).SetSettleAfter(tctx, checkoutdb.SetSettleAfterParams{
				SettleAfter: next, TenantID: d.TenantID, ID: d.ID, PaymentAttemptID: d.PaymentAttemptID,
			})
			return err
		}); uerr != nil && err == nil {
			err = uerr
		}
		return err == nil, err
	})
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
