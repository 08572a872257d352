package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// The resolve sweep (one periodic job, ResolveSweepArgs) takes every
// tenant's attempts still pending past their resolve_after (set at the
// insert) and:
//   - card (cardResolveDelay after the start): resolves it from the
//     processor's record, the safety net for a charge call that never
//     answered; one waiting for 3-D Secure is asked about until the
//     processor has the buyer's answer (pollCardAction);
//   - Pix (pollEvery after the start, or its expiry if sooner): asks the
//     PSP whether it was paid, the safety net for a lost webhook, and
//     from expires_at on removes the charge and expires the attempt; while
//     it stays pending it is due again pollEvery later (pixDue). One that
//     ended otherwise (canceled, failed) is taken once more to make sure
//     its charge ended too: a charge whose creation landed after the
//     cancel, or whose removal failed, is removed, or refunded if paid.
//
// It also reconciles the stored Pix notifications still undecided past
// their reconcile_after: the webhook's request reconciles each receipt it
// stores (reconcileOrRetry), so these are the ones whose process died
// first, or whose PSP did not answer or does not confirm the Pix yet
// (tried again with a growing delay, left unconfirmed after
// reconcileTries).
//
// It lists ids only, in the read-only payments_sweep scope, and acts on
// each in its own tenant's scope. It replaced durable jobs inserted with
// every attempt (one per card attempt, two per Pix attempt: poll and
// expire) and every Pix receipt (reconcile).

// resolveRetry is when the sweep tries again after a resolve that failed.
const resolveRetry = time.Minute

// ResolveSweepArgs is the periodic resolve sweep.
type ResolveSweepArgs struct{}

// Kind names the job.
func (ResolveSweepArgs) Kind() string { return "payments_resolve_sweep" }

// InsertOpts routes it to the payments queue.
func (ResolveSweepArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

type resolveSweepWorker struct {
	river.WorkerDefaults[ResolveSweepArgs]
	s *Service
}

func (w *resolveSweepWorker) Work(ctx context.Context, _ *river.Job[ResolveSweepArgs]) error {
	_, err := w.s.SweepResolves(ctx)
	// Listings first: the receipts they find are reconciled just after.
	_, lerr := w.s.SweepPixLists(ctx)
	_, rerr := w.s.SweepReceipts(ctx)
	return errors.Join(err, lerr, rerr)
}

// SweepJob is the periodic job that inserts a resolve sweep every
// interval.
func SweepJob(every time.Duration) *river.PeriodicJob {
	return jobs.Periodic(every, ResolveSweepArgs{})
}

// sweep lists due rows of every tenant in the read-only payments_sweep
// scope, in batches, and acts on each (jobs.Sweep); failed logs what act
// could not do.
func sweep[T any](ctx context.Context, s *Service, list func(q *paymentsdb.Queries, now time.Time) ([]T, error), act func(T) (bool, error), failed func(T, error)) (int, error) {
	return jobs.Sweep(ctx, func(ctx context.Context) ([]T, error) {
		var due []T
		err := pgstore.InPaymentsSweep(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			due, err = list(paymentsdb.New(tx), s.now())
			return err
		})
		return due, err
	}, act, failed)
}

// SweepResolves acts on the due attempts and says how many it settled
// (card resolved, Pix expired or found paid or removed). After that
// resolve_after is cleared; for a Pix still pending it is the next poll;
// after a failure it is pushed resolveRetry later (logged).
func (s *Service) SweepResolves(ctx context.Context) (int, error) {
	return sweep(ctx, s, func(q *paymentsdb.Queries, now time.Time) ([]paymentsdb.ListDueResolvesRow, error) {
		return q.ListDueResolves(ctx, paymentsdb.ListDueResolvesParams{Now: now, MaxRows: jobs.SweepBatch})
	}, func(d paymentsdb.ListDueResolvesRow) (bool, error) {
		tctx := tenancy.With(ctx, d.TenantID)
		next, err := s.resolveDue(tctx, d.ID)
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
		return err == nil && next == nil, err
	}, func(d paymentsdb.ListDueResolvesRow, err error) {
		slog.WarnContext(ctx, "payments: resolve sweep could not resolve an attempt", "tenant_id", d.TenantID, "attempt_id", d.ID, "err", err)
	})
}

// resolveDue is the sweep's turn at one due attempt; it says when the
// attempt is due again (nil: not any more).
func (s *Service) resolveDue(ctx context.Context, id string) (*time.Time, error) {
	a, err := s.getAttempt(ctx, id)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if a.Txid != nil && finalStatus(a.Status) {
		// A Pix attempt that ended (canceled, failed, expired) while its
		// charge was being created, or whose removal could not be
		// confirmed: its charge must end too. Removed (or never made):
		// done; paid meanwhile: the Pix is refunded (decidePix).
		return nil, s.removeCharge(ctx, a, a.Status, false)
	}
	if a.Txid != nil {
		return s.pixDue(ctx, a)
	}
	if a.Status == stRequiresAction {
		return s.pollCardAction(ctx, a)
	}
	return nil, s.resolveCard(ctx, id)
}

// Reconciling a stored Pix receipt: reconcileBackstop after it is stored
// the sweep takes it if the webhook's request did not decide it; a failed
// try is tried again reconcileRetry << (tries - 1) later (1, 2, 4, 8
// minutes), and reconcile leaves it unconfirmed at try reconcileTries.
const (
	reconcileBackstop = time.Minute
	reconcileRetry    = time.Minute
	reconcileTries    = 5
	reconcileTimeout  = 30 * time.Second
)

// reconcileOrRetry reconciles receipt e2e (try is this try's number,
// from 1); when that fails, it counts the try and sets when the sweep
// tries again.
func (s *Service) reconcileOrRetry(ctx context.Context, e2e string, try int, known *webhookPSP) error {
	err := s.reconcileWith(ctx, e2e, try, known)
	if err == nil {
		return nil
	}
	s.log.WarnContext(ctx, "payments: Pix receipt not reconciled; the resolve sweep tries again", "e2e_id", e2e, "try", try, "err", err.Error())
	next := s.now().Add(reconcileRetry << min(try-1, 10))
	if rerr := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		_, err := q.RetryReconcile(ctx, paymentsdb.RetryReconcileParams{ReconcileAfter: &next, TenantID: tid, E2eID: e2e})
		return err
	}); rerr != nil {
		s.log.WarnContext(ctx, "payments: could not delay a Pix receipt's next reconciliation", "e2e_id", e2e, "err", rerr.Error())
	}
	return err
}

// SweepReceipts reconciles the due Pix receipts and says how many it
// decided.
func (s *Service) SweepReceipts(ctx context.Context) (int, error) {
	return sweep(ctx, s, func(q *paymentsdb.Queries, now time.Time) ([]paymentsdb.ListDueReceiptsRow, error) {
		return q.ListDueReceipts(ctx, paymentsdb.ListDueReceiptsParams{Now: now, MaxRows: jobs.SweepBatch})
	}, func(d paymentsdb.ListDueReceiptsRow) (bool, error) {
		rctx, cancel := context.WithTimeout(tenancy.With(ctx, d.TenantID), reconcileTimeout)
		defer cancel()
		err := s.reconcileOrRetry(rctx, d.E2eID, int(d.ReconcileTries)+1, nil)
		return err == nil, err
	}, func(paymentsdb.ListDueReceiptsRow, error) {
		// reconcileOrRetry logged it.
	})
}

// Listing what the PSP received (GET /pix?inicio&fim): every pixListEvery
// while a handler's account is in use (a Pix charge keeps it listed for
// pixListFor), each window overlapping the last by pixListOverlap (a Pix
// may show up in the PSP's list a little after its time), the first one
// reaching back pixListFirst.
const (
	pixListEvery   = 10 * time.Minute
	pixListFor     = 48 * time.Hour
	pixListOverlap = 10 * time.Minute
	pixListFirst   = 24 * time.Hour
	pixListTimeout = time.Minute
)

// SweepPixLists lists the Pix each due handler's account received and
// stores, for reconciliation, those of our charges no notification
// brought (a Pix whose txid is none of ours is left alone: a merchant's
// account may take Pix from its other channels too). It says how many
// hooks it listed.
func (s *Service) SweepPixLists(ctx context.Context) (int, error) {
	return sweep(ctx, s, func(q *paymentsdb.Queries, now time.Time) ([]paymentsdb.ListHooksToListRow, error) {
		return q.ListHooksToList(ctx, paymentsdb.ListHooksToListParams{Now: now, Before: now.Add(-pixListEvery), MaxRows: jobs.SweepBatch})
	}, func(h paymentsdb.ListHooksToListRow) (bool, error) {
		lctx, cancel := context.WithTimeout(tenancy.With(ctx, h.TenantID), pixListTimeout)
		defer cancel()
		return true, s.listPix(lctx, h)
	}, func(h paymentsdb.ListHooksToListRow, err error) {
		slog.WarnContext(ctx, "payments: could not list the Pix a handler's account received", "tenant_id", h.TenantID, "handler_id", h.HandlerID, "err", err)
	})
}

func (s *Service) listPix(ctx context.Context, h paymentsdb.ListHooksToListRow) error {
	now := s.now()
	from := now.Add(-pixListFirst)
	if h.ListedUntil != nil {
		from = h.ListedUntil.Add(-pixListOverlap)
	}
	psp, _, err := s.pixOf(ctx, h.TenantID.String(), h.HandlerID, h.Environment)
	if err != nil {
		return err
	}
	received, err := psp.ListPix(ctx, from, now)
	if err != nil {
		return err
	}
	var txids []string
	for _, p := range received {
		if p.Txid != "" {
			txids = append(txids, p.Txid)
		}
	}
	ours := map[string]bool{}
	if len(txids) > 0 {
		err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
			found, err := q.AttemptTxidsIn(ctx, paymentsdb.AttemptTxidsInParams{TenantID: tid, Txids: txids})
			for _, t := range found {
				ours[t] = true
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	for _, p := range received {
		if !ours[p.Txid] {
			continue
		}
		amount, err := pix.ParseValor(p.Valor)
		if err != nil {
			return fmt.Errorf("payments: PSP value for Pix %s: %w", p.EndToEndID, err)
		}
		raw, _ := json.Marshal(p)
		var n int64
		err = s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
			var err error
			n, err = q.InsertReceipt(ctx, paymentsdb.InsertReceiptParams{TenantID: tid, E2eID: p.EndToEndID, HookID: h.ID, HandlerID: h.HandlerID,
				Txid: p.Txid, Amount: amount, Horario: p.Horario, Raw: raw, ReconcileAfter: &now})
			return err
		})
		if err != nil {
			return err
		}
		if n == 1 {
			// No notification brought it (yet): the receipt sweep decides it
			// from the PSP's answer, as any other.
			s.metrics.webhooks.WithLabelValues("missed_found_by_listing").Inc()
			s.log.WarnContext(ctx, "payments: a Pix no notification brought, found by listing", "handler_id", h.HandlerID, "e2e_id", p.EndToEndID, "txid", p.Txid)
		}
	}
	return s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		return q.SetHookListed(ctx, paymentsdb.SetHookListedParams{TenantID: tid, ID: h.ID, ListedUntil: &now})
	})
}
