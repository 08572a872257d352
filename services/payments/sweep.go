package payments

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
)

// The resolve sweep (one periodic job, ResolveSweepArgs) resolves every
// tenant's card attempts still pending past their resolve_after (set at
// the insert, cardResolveDelay later) from the processor's record: the
// safety net for a charge call that never answered. It lists ids only, in
// the read-only payments_sweep scope, and resolves each in its own
// tenant's scope. It replaced a durable job inserted with every card
// attempt.

// resolveRetry is when the sweep tries again after a resolve that failed.
const resolveRetry = time.Minute

// ResolveSweepArgs is the periodic resolve sweep.
type ResolveSweepArgs struct{}

// Kind names the job.
func (ResolveSweepArgs) Kind() string { return "payments_resolve_sweep" }

type resolveSweepWorker struct {
	river.WorkerDefaults[ResolveSweepArgs]
	s *Service
}

func (w *resolveSweepWorker) Work(ctx context.Context, _ *river.Job[ResolveSweepArgs]) error {
	_, err := w.s.SweepResolves(ctx)
	return err
}

// SweepJob is the periodic job that inserts a resolve sweep every
// interval.
func SweepJob(every time.Duration) *river.PeriodicJob {
	return jobs.Periodic(every, ResolveSweepArgs{})
}

// SweepResolves resolves the due card attempts and says how many it
// resolved. After a resolve that went through, resolve_after is cleared;
// after a failure it is pushed resolveRetry later (logged).
func (s *Service) SweepResolves(ctx context.Context) (int, error) {
	return jobs.Sweep(ctx, func(ctx context.Context) ([]paymentsdb.ListDueResolvesRow, error) {
		var due []paymentsdb.ListDueResolvesRow
		err := pgstore.InPaymentsSweep(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			due, err = paymentsdb.New(tx).ListDueResolves(ctx, paymentsdb.ListDueResolvesParams{Now: s.now(), MaxRows: jobs.SweepBatch})
			return err
		})
		return due, err
	}, func(d paymentsdb.ListDueResolvesRow) (bool, error) {
		tctx := tenancy.With(ctx, d.TenantID)
		err := s.resolveCard(tctx, d.ID)
		var next *time.Time
		if err != nil {
			t := s.now().Add(resolveRetry)
			next = &t
		}
		if uerr := pgstore.Single(tctx, s.pool, func(q *pgstore.SingleQuerier) error {
			_, err := paymentsdb.New(q).SetResolveAfter(tctx, paymentsdb.SetResolveAfterParams{ResolveAfter: next, TenantID: d.TenantID, ID: d.ID})
			return err
		}); uerr != nil && err == nil {
			err = uerr
		}
		return err == nil, err
	}, func(d paymentsdb.ListDueResolvesRow, err error) {
		slog.WarnContext(ctx, "payments: resolve sweep could not resolve a card attempt", "tenant_id", d.TenantID, "attempt_id", d.ID, "err", err)
	})
}
