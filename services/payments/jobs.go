package payments

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/paymentevents"
	"github.com/bcpdev/bcp/internal/tenancy"
)

// Durable jobs. Each carries its tenant; workers run in its scope. Every
// job is idempotent: it re-reads the state it acts on.

// expireArgs removed a Pix charge at expires_at (inserted with the
// attempt, scheduled at its expiry, until the resolve sweep took that
// over: sweep.go). The worker stays for the jobs already queued.
type expireArgs struct {
	TenantID  uuid.UUID `json:"tenant_id"`
	AttemptID string    `json:"attempt_id"`
}

func (expireArgs) Kind() string { return "payments_pix_expire" }

func (expireArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

type expireWorker struct {
	river.WorkerDefaults[expireArgs]
	s *Service
}

func (w *expireWorker) Work(ctx context.Context, job *river.Job[expireArgs]) error {
	return w.s.expire(tenancy.With(ctx, job.Args.TenantID), job.Args.AttemptID)
}

// pollArgs asked the PSP about a pending Pix charge every pollEvery until
// it expired: the safety net for webhooks that never arrive, now the
// resolve sweep's (sweep.go). The worker stays for the jobs already
// queued.
type pollArgs struct {
	TenantID  uuid.UUID `json:"tenant_id"`
	AttemptID string    `json:"attempt_id"`
}

func (pollArgs) Kind() string { return "payments_pix_poll" }

func (pollArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

type pollWorker struct {
	river.WorkerDefaults[pollArgs]
	s *Service
}

func (w *pollWorker) Work(ctx context.Context, job *river.Job[pollArgs]) error {
	return w.s.poll(tenancy.With(ctx, job.Args.TenantID), job.Args.AttemptID)
}

// pollEvery spaces the polls of a pending Pix charge (the resolve sweep's).
const pollEvery = 2 * time.Minute

// reconcileArgs reconciled one stored Pix receipt against the PSP
// (inserted with the receipt, until the webhook's request did that with
// the resolve sweep as its backstop: sweep.go). The worker stays for the
// jobs already queued.
type reconcileArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	E2EID    string    `json:"e2e_id"`
}

func (reconcileArgs) Kind() string { return "payments_pix_reconcile" }

func (reconcileArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

type reconcileWorker struct {
	river.WorkerDefaults[reconcileArgs]
	s *Service
}

func (w *reconcileWorker) Work(ctx context.Context, job *river.Job[reconcileArgs]) error {
	return w.s.reconcile(tenancy.With(ctx, job.Args.TenantID), job.Args.E2EID, job.Attempt)
}

// settleArgs asked this service to call the checkout service's
// SettlePayment for an attempt that changed on its own. Those changes are
// now announced with a checkout job (announce); the worker stays for jobs
// queued before, and hands each one on the same way.
type settleArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	CheckoutID string    `json:"checkout_id"`
	AttemptID  string    `json:"attempt_id"`
}

func (settleArgs) Kind() string { return "payments_settle" }

func (settleArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

type settleWorker struct {
	river.WorkerDefaults[settleArgs]
	s *Service
}

func (w *settleWorker) Work(ctx context.Context, job *river.Job[settleArgs]) error {
	if w.s.jobs == nil {
		return errNoJobs
	}
	_, err := w.s.jobs.Insert(ctx, paymentevents.AttemptChanged{TenantID: job.Args.TenantID, CheckoutID: job.Args.CheckoutID, AttemptID: job.Args.AttemptID}, nil)
	return err
}

// refundArgs executes (or follows up) one refund at the PSP/processor.
type refundArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	RefundID string    `json:"refund_id"`
}

func (refundArgs) Kind() string { return "payments_refund" }

func (refundArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

type refundWorker struct {
	river.WorkerDefaults[refundArgs]
	s *Service
}

func (w *refundWorker) Work(ctx context.Context, job *river.Job[refundArgs]) error {
	_, err := w.s.executeRefund(tenancy.With(ctx, job.Args.TenantID), job.Args.RefundID)
	return err
}

// cardResolveArgs settled a card attempt whose charge call never
// returned (crash or processor timeout), by asking the processor; it was
// inserted with every card attempt before the resolve sweep (sweep.go)
// existed. The worker stays for the jobs already queued.
type cardResolveArgs struct {
	TenantID  uuid.UUID `json:"tenant_id"`
	AttemptID string    `json:"attempt_id"`
}

func (cardResolveArgs) Kind() string { return "payments_card_resolve" }

func (cardResolveArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

type cardResolveWorker struct {
	river.WorkerDefaults[cardResolveArgs]
	s *Service
}

func (w *cardResolveWorker) Work(ctx context.Context, job *river.Job[cardResolveArgs]) error {
	return w.s.resolveCard(tenancy.With(ctx, job.Args.TenantID), job.Args.AttemptID)
}

// cardResolveDelay leaves the synchronous charge call time to finish
// before the resolve sweep asks the processor.
const cardResolveDelay = 2 * time.Minute

// refundBackstop: a refund the synchronous call could not finish is
// retried by its job after this delay.
const refundBackstop = 30 * time.Second

func (s *Service) insertJob(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) error {
	if s.jobs == nil {
		return errNoJobs
	}
	_, err := jobs.InsertTx(ctx, s.jobs, tx, args, opts)
	return err
}

// announce tells the checkout service, in the caller's transaction, that
// attempt a changed on its own (a Pix decided, a card charge resolved or
// stopped): a durable checkout job (paymentevents), so the news is never
// lost and never sent for a change that rolled back, and this service
// never calls the checkout service.
func (s *Service) announce(ctx context.Context, tx pgx.Tx, a attempt) error {
	return s.insertJob(ctx, tx, paymentevents.AttemptChanged{TenantID: a.TenantID, CheckoutID: a.CheckoutID, AttemptID: a.ID}, nil)
}

// isNotFound matches a missing row however it surfaced.
func isNotFound(err error) bool {
	return errors.Is(err, pgx.ErrNoRows) || apperr.IsKind(err, apperr.KindNotFound)
}
