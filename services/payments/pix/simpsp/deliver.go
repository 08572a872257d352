package simpsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// DeliverArgs is one webhook delivery of the simulated PSP: the Pix are
// read again (with the URL, in one statement) when the job runs and
// signed with a fresh timestamp, so a retry hours later still passes the
// receiver's freshness check.
type DeliverArgs struct {
	TenantID  uuid.UUID `json:"tenant_id"`
	HandlerID string    `json:"handler_id"`
	Chave     string    `json:"chave"`
	E2EIDs    []string  `json:"e2e_ids"`
}

// Kind names the job.
func (DeliverArgs) Kind() string { return "payments_simpsp_webhook" }

// InsertOpts routes it to the payments queue (the simulator runs inside
// the payments service).
func (DeliverArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueuePayments) }

// DeliverWorker posts simulated PSP webhooks; a non-2xx answer or a
// network error is retried by the job queue.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	Sim *Sim
}

// Work posts {"pix":[...]} to the registered webhook URL + "/pix".
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	s, a := w.Sim, job.Args
	ctx = tenancy.With(ctx, a.TenantID)
	var d paymentsdb.SimGetDeliveryRow
	err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
		var err error
		d, err = q.SimGetDelivery(ctx, paymentsdb.SimGetDeliveryParams{TenantID: tid, HandlerID: a.HandlerID, Chave: a.Chave, E2eIds: a.E2EIDs})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// Like a PSP, notify only receivers that registered a webhook.
		s.log.WarnContext(ctx, "simpsp: no webhook registered; notification dropped", "tenant_id", a.TenantID, "handler_id", a.HandlerID)
		return nil
	}
	if err != nil {
		return err
	}
	var rows []pixJSON
	if err := json.Unmarshal(d.Pix, &rows); err != nil {
		return err
	}
	if len(rows) != len(a.E2EIDs) {
		return fmt.Errorf("simpsp: %d of the %d Pix to notify exist", len(rows), len(a.E2EIDs))
	}
	var note pix.Notification
	for _, p := range rows {
		note.Pix = append(note.Pix, p.pix())
	}
	body, err := json.Marshal(note)
	if err != nil {
		return err
	}
	secret, err := s.secret(ctx, a.HandlerID)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(d.Url, "/")+"/pix", bytes.NewReader(body))
	if err != nil {
		return river.JobCancel(fmt.Errorf("simpsp: bad webhook url: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(secret, s.now(), body))
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("simpsp: webhook post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("simpsp: webhook answered %d", resp.StatusCode)
	}
	return nil
}
