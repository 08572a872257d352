package checkout

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/paymentevents"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// Background work, none of it a job per checkout:
//   - the expiry sweep closes every tenant's open sessions past
//     expires_at, exactly as a read after the expiry would (until it comes
//     round, any read, update or completion of an expired session closes
//     it first, so an agent never sees one open past its expires_at);
//   - the settle sweep takes every session with money-path work due at
//     its settle_after: a completion still in progress (set at the claim,
//     settleSafetyNet later; e.g. its process died between charging and
//     writing the order) is settled from the payments service's record,
//     giving up for good an attempt that service never saw; a closed
//     checkout whose stock release did not confirm is released;
//   - SettleWorker works the payments service's news (paymentevents:
//     a Pix paid or expired, a card charge resolved), inserted in the
//     transaction of the change, so a paid Pix gets its order at once.
// The sweeps run together in one periodic job (SweepArgs), list ids only
// in the read-only checkout_sweep scope, and act in each session's tenant.

// settleRetry is when the settle sweep looks again at a completion still
// in progress (a Pix not paid yet) or whose settle failed.
const settleRetry = time.Minute

// SweepArgs is the periodic sweep.
type SweepArgs struct{}

// Kind names the job.
func (SweepArgs) Kind() string { return "checkout_sweep" }

// InsertOpts routes it to the checkout queue.
func (SweepArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueueCheckout) }

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

// sweep lists due sessions and acts on each (a failure is logged; the next
// sweep sees the session again).
func sweep[T any](ctx context.Context, s *Service, list func(checkoutdb.Queries, time.Time) ([]T, error), act func(T) (bool, error)) (int, error) {
	return jobs.Sweep(ctx, func(ctx context.Context) ([]T, error) {
		return sweepList(ctx, s.store, func(q *checkoutdb.Queries) ([]T, error) { return list(*q, s.now()) })
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
		res, err := s.end(tenancy.With(ctx, d.TenantID), d.ID, endExpire, "", nil)
		return err == nil && res.GetStatus() == bcp.StatusCanceled, err
	})
}

// SweepSettles finishes every tenant's sessions with money-path work due
// and says how many it finished. A completion the settle leaves in
// progress (a Pix not paid yet, a card charge the processor has not
// confirmed) or that failed is looked at again settleRetry later; once it
// has left complete_in_progress, settle_after is cleared.
func (s *Service) SweepSettles(ctx context.Context) (int, error) {
	return sweep(ctx, s, func(q checkoutdb.Queries, now time.Time) ([]checkoutdb.ListDueSettlesRow, error) {
		return q.ListDueSettles(ctx, checkoutdb.ListDueSettlesParams{Now: now, MaxRows: jobs.SweepBatch})
	}, func(d checkoutdb.ListDueSettlesRow) (bool, error) {
		tctx := tenancy.With(ctx, d.TenantID)
		if d.Status == bcp.StatusCanceled {
			return true, s.releaseClosed(tctx, d.ID)
		}
		if d.PaymentAttemptID == nil {
			return false, nil // not a claimed completion: nothing to settle
		}
		res, err := s.settle(tctx, d.ID, *d.PaymentAttemptID, true, nil)
		var next *time.Time
		if err != nil || res.GetStatus() == bcp.StatusCompleteInProgress {
			t := s.now().Add(settleRetry)
			next = &t
		}
		if uerr := s.store.settleAgain(tctx, d.ID, *d.PaymentAttemptID, next); uerr != nil && err == nil {
			err = uerr
		}
		return err == nil, err
	})
}

// SettleArgs is the payments service's news of an attempt that changed on
// its own (paymentevents.AttemptChanged; the same kind and arguments as
// the safety-net job this service inserted itself before the settle
// sweep, so those still queued are worked alike).
type SettleArgs = paymentevents.AttemptChanged

// SettleWorker works SettleArgs jobs.
type SettleWorker struct {
	river.WorkerDefaults[SettleArgs]
	Service *Service
}

// Work settles; an error makes river retry with backoff. The attempt is
// known to the payments service (it sent the news), so nothing is given
// up here.
func (w *SettleWorker) Work(ctx context.Context, job *river.Job[SettleArgs]) error {
	_, err := w.Service.settle(tenancy.With(ctx, job.Args.TenantID), job.Args.CheckoutID, job.Args.AttemptID, false, nil)
	return err
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

// InsertOpts routes it to the checkout queue.
func (ExpireArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueueCheckout) }

// ExpireWorker works ExpireArgs jobs.
type ExpireWorker struct {
	river.WorkerDefaults[ExpireArgs]
	Service *Service
}

// Work cancels the session if it is still open and past its expiry.
func (w *ExpireWorker) Work(ctx context.Context, job *river.Job[ExpireArgs]) error {
	_, err := w.Service.end(tenancy.With(ctx, job.Args.TenantID), job.Args.CheckoutID, endExpire, "", nil)
	return err
}

// AddWorkers registers the service's durable jobs (the payments service's
// news, checkout_settle, among them); with a nil s, stand-ins for them
// (jobs.AddWorker), for a process that does not host checkout.
func AddWorkers(w *river.Workers, s *Service) {
	hosted := s != nil
	jobs.AddWorker(w, &ExpireWorker{Service: s}, hosted)
	jobs.AddWorker(w, &SweepWorker{Service: s}, hosted)
	jobs.AddWorker(w, &SettleWorker{Service: s}, hosted)
}
