package payments

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
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

type reconcileWorker struct {
	river.WorkerDefaults[reconcileArgs]
	s *Service
}

func (w *reconcileWorker) Work(ctx context.Context, job *river.Job[reconcileArgs]) error {
	return w.s.reconcile(tenancy.With(ctx, job.Args.TenantID), job.Args.E2EID, job.Attempt)
}

// settleArgs tells the checkout service that an attempt changed
// asynchronously; retried until the checkout service answers.
type settleArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	CheckoutID string    `json:"checkout_id"`
	AttemptID  string    `json:"attempt_id"`
}

func (settleArgs) Kind() string { return "payments_settle" }

type settleWorker struct {
	river.WorkerDefaults[settleArgs]
	s *Service
}

func (w *settleWorker) Work(ctx context.Context, job *river.Job[settleArgs]) error {
	ctx = tenancy.With(ctx, job.Args.TenantID)
	_, err := w.s.checkout.SettlePayment(ctx, connect.NewRequest(&checkoutv1.SettlePaymentRequest{
		CheckoutId: job.Args.CheckoutID, AttemptId: job.Args.AttemptID,
	}))
	if err != nil {
		w.s.log.WarnContext(ctx, "payments: SettlePayment failed; will retry", "tenant_id", job.Args.TenantID,
			"checkout_id", job.Args.CheckoutID, "attempt_id", job.Args.AttemptID, "attempt", job.Attempt, "err", err.Error())
	}
	return err
}

// Timeout bounds one SettlePayment call (it may create the order).
func (w *settleWorker) Timeout(*river.Job[settleArgs]) time.Duration { return settleTimeout }

// refundArgs executes (or follows up) one refund at the PSP/processor.
type refundArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	RefundID string    `json:"refund_id"`
}

func (refundArgs) Kind() string { return "payments_refund" }

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

// settleNow tells the checkout service, once the decision on a Pix has
// committed, that its attempt changed. That attempt's checkout is
// complete_in_progress with a settle_after, and checkout's settle sweep
// looks at it every settleRetry until it has left that state, so a call
// lost here (a crash, checkout unavailable) delays the order by at most
// about a minute; a job in the decision's transaction would cost three
// more round trips and a queue hop on every paid Pix.
func (s *Service) settleNow(ctx context.Context, a attempt) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if _, err := s.checkout.SettlePayment(ctx, connect.NewRequest(&checkoutv1.SettlePaymentRequest{
		CheckoutId: a.CheckoutID, AttemptId: a.ID,
	})); err != nil {
		s.log.WarnContext(ctx, "payments: SettlePayment failed; checkout's settle sweep will settle it", "tenant_id", a.TenantID,
			"checkout_id", a.CheckoutID, "attempt_id", a.ID, "err", err.Error())
	}
}

// settleTimeout bounds one SettlePayment call (it may create the order).
const settleTimeout = time.Minute

// settleLater queues SettlePayment for a in the caller's transaction.
func (s *Service) settleLater(ctx context.Context, tx pgx.Tx, a attempt) error {
	return s.insertJob(ctx, tx, settleArgs{TenantID: a.TenantID, CheckoutID: a.CheckoutID, AttemptID: a.ID}, nil)
}

// isNotFound matches a missing row however it surfaced.
func isNotFound(err error) bool {
	return errors.Is(err, pgx.ErrNoRows) || apperr.IsKind(err, apperr.KindNotFound)
}
