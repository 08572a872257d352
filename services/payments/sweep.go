package payments

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

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

// SweepEvery is how often the resolve sweep runs by default.
const SweepEvery = 15 * time.Second

const (
	sweepBatch   = 500
	sweepBatches = 20
	resolveRetry = time.Minute // after a resolve that failed
)

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
// interval (on the elected leader only).
func SweepJob(every time.Duration) *river.PeriodicJob {
	if every <= 0 {
		every = SweepEvery
	}
	return river.NewPeriodicJob(river.PeriodicInterval(every), func() (river.JobArgs, *river.InsertOpts) {
		return ResolveSweepArgs{}, &river.InsertOpts{MaxAttempts: 1}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}

// SweepResolves resolves the due card attempts and says how many it
// resolved. After a resolve that went through, resolve_after is cleared;
// after a failure it is pushed resolveRetry later (logged).
func (s *Service) SweepResolves(ctx context.Context) (int, error) {
	done := 0
	for range sweepBatches {
		var due []paymentsdb.ListDueResolvesRow
		err := pgstore.InPaymentsSweep(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			due, err = paymentsdb.New(tx).ListDueResolves(ctx, paymentsdb.ListDueResolvesParams{Now: s.now(), MaxRows: sweepBatch})
			return err
		})
		if err != nil {
			return done, err
		}
		failed := 0
		for _, d := range due {
			tctx := tenancy.With(ctx, d.TenantID)
			err := s.resolveCard(tctx, d.ID)
			var next *time.Time
			if err != nil {
				failed++
				slog.WarnContext(ctx, "payments: resolve sweep could not resolve a card attempt", "tenant_id", d.TenantID, "attempt_id", d.ID, "err", err)
				t := s.now().Add(resolveRetry)
				next = &t
			}
			if uerr := pgstore.Single(tctx, s.pool, func(q *pgstore.SingleQuerier) error {
				_, err := paymentsdb.New(q).SetResolveAfter(tctx, paymentsdb.SetResolveAfterParams{ResolveAfter: next, TenantID: d.TenantID, ID: d.ID})
				return err
			}); uerr != nil {
				slog.WarnContext(ctx, "payments: resolve sweep could not record its result", "attempt_id", d.ID, "err", uerr)
			} else if err == nil {
				done++
			}
		}
		if len(due) < sweepBatch || failed == len(due) {
			break
		}
	}
	return done, nil
}
