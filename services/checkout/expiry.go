package checkout

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/tenancy"
)

// ExpireArgs is the durable job that closes one session at its expiry. It
// is inserted with the session, scheduled at expires_at.
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

// scheduleExpiry inserts the expiry job in the session's transaction.
func (s *Service) scheduleExpiry(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, id string, at time.Time) error {
	if s.jobs == nil {
		return nil // a process without a job client relies on expiry on read
	}
	_, err := s.jobs.InsertTx(ctx, tx, ExpireArgs{TenantID: tenantID, CheckoutID: id}, &river.InsertOpts{ScheduledAt: at, MaxAttempts: 10})
	return err
}
