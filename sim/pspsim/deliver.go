package pspsim

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bcpdev/bcp/internal/hostname"
	"github.com/bcpdev/bcp/internal/httpdeadline"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

const (
	// WebhookCertCN is the common name of the certificate webhooks come
	// with (issued by Config.CA).
	WebhookCertCN = "pspsim-webhook"
	// webhookTimeout bounds one POST to a receiver.
	webhookTimeout = 10 * time.Second
	// deliveryLease is how long a claimed delivery is this process's: more
	// than two POSTs (a duplicated delivery) can take. A process that dies
	// leaves it to another when the lease ends.
	deliveryLease = 3 * webhookTimeout
	// claimBatch is how many deliveries one claim takes; deliverParallel
	// how many of them are posted at once.
	claimBatch      = 16
	deliverParallel = 8
)

// Delivery statuses.
const (
	deliveryPending   = "pending"
	deliveryDelivered = "delivered"
	deliveryDropped   = "dropped"
	deliveryNoWebhook = "no_webhook"
)

// webhookClient posts webhooks over TLS with the simulator's own client
// certificate, trusting WebhookRootCAs for the receivers.
func (s *Server) webhookClient() (*http.Client, error) {
	cert, err := s.cfg.CA.IssueClient(WebhookCertCN, 365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("pspsim: webhook certificate: %w", err)
	}
	dial := s.cfg.WebhookDial
	if dial == nil {
		dial = hostname.DialLocalhost(&net.Dialer{Timeout: 5 * time.Second})
	}
	tr := &http.Transport{
		DialContext: dial,
		TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert.TLS()},
			RootCAs:      s.cfg.WebhookRootCAs,
			MinVersion:   tls.VersionTLS12,
		},
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
	return &http.Client{
		// The timeout as a context deadline (no goroutine and timer per
		// request, see httpdeadline).
		Transport:     &httpdeadline.Transport{Next: tracing.Transport(tr), Timeout: webhookTimeout},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// deliverLoop works the outbox until ctx ends: every DeliverEvery, and at
// once when this process queued a delivery.
func (s *Server) deliverLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.DeliverEvery)
	defer t.Stop()
	for {
		s.deliverDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// deliverDue claims and handles due deliveries until none is left.
func (s *Server) deliverDue(ctx context.Context) {
	for ctx.Err() == nil {
		now := s.clock()
		var due []pspsimdb.PspsimDelivery
		err := s.allAccounts(ctx, func(q *pspsimdb.Queries) error {
			var err error
			due, err = q.ClaimDeliveries(ctx, pspsimdb.ClaimDeliveriesParams{Now: now, LeaseUntil: now.Add(deliveryLease), Max: claimBatch})
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "pspsim: claim webhook deliveries", "err", err)
			}
			return
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, deliverParallel)
		for _, d := range due {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				s.deliver(ctx, d)
			})
		}
		wg.Wait()
		if len(due) < claimBatch {
			return
		}
	}
}

// deliver handles one claimed delivery: it posts the current state of its
// Pix to the key's webhook, or records why it did not. On an error it
// leaves the row leased; the lease's end makes it due again.
func (s *Server) deliver(ctx context.Context, d pspsimdb.PspsimDelivery) {
	ctx, span := s.traces.start(ctx, s.cfg.Tracing, d.ID)
	defer span.End()
	log := s.log.With("account", d.TenantID, "delivery", d.ID)
	var content pspsimdb.DeliveryContentRow
	err := s.single(ctx, d.TenantID, func(q *pspsimdb.Queries) error {
		var err error
		content, err = q.DeliveryContent(ctx, pspsimdb.DeliveryContentParams{TenantID: d.TenantID, Chave: d.Chave, E2eIds: d.E2eIds})
		return err
	})
	if err != nil {
		log.WarnContext(ctx, "pspsim: read webhook delivery", "err", err)
		return
	}
	now := s.clock()
	rec := pspsimdb.RecordDeliveryParams{TenantID: d.TenantID, ID: d.ID, Status: deliveryPending, Url: content.Url,
		LastStatus: d.LastStatus, LastError: d.LastError, NextAttemptAt: now}
	set := s.faults.settings()
	first := d.Attempts == 0 && !d.Delayed
	switch {
	case content.Url == "":
		// Like a PSP: no webhook for the key, nothing sent.
		rec.Status, rec.DoneAt = deliveryNoWebhook, &now
	case first && s.faults.hit(FaultDropWebhook, set.DropWebhook):
		rec.Status, rec.DoneAt = deliveryDropped, &now
	case first && s.faults.hit(FaultDelayWebhook, set.DelayWebhook):
		rec.Delayed, rec.NextAttemptAt = true, now.Add(time.Duration(set.WebhookDelay))
	default:
		s.post(ctx, d, content, &rec)
	}
	// Recorded even when Stop cancelled the POST: the attempt was made.
	rctx := context.WithoutCancel(ctx)
	if err := s.single(rctx, d.TenantID, func(q *pspsimdb.Queries) error { return q.RecordDelivery(rctx, rec) }); err != nil {
		log.WarnContext(ctx, "pspsim: record webhook delivery", "err", err)
		return
	}
	log.DebugContext(ctx, "pspsim: webhook delivery", "status", rec.Status, "last_status", rec.LastStatus, "err", rec.LastError)
}

// post sends the notification (twice under the duplicate_webhook fault)
// and fills rec with the outcome.
func (s *Server) post(ctx context.Context, d pspsimdb.PspsimDelivery, content pspsimdb.DeliveryContentRow, rec *pspsimdb.RecordDeliveryParams) {
	pix, err := decodePixList(content.Pix)
	if err == nil && len(pix) != len(d.E2eIds) {
		err = fmt.Errorf("%d of the %d Pix to notify exist", len(pix), len(d.E2eIds))
	}
	var body []byte
	if err == nil {
		body, err = json.Marshal(Notification{Pix: pix})
	}
	rec.Attempted = 1
	var status int
	if err == nil {
		status, err = s.send(ctx, content.Url, body)
		rec.Sent = 1
	}
	now := s.clock()
	if err == nil && status/100 == 2 {
		if s.faults.hit(FaultDuplicateWebhook, s.faults.settings().DuplicateWebhook) {
			// The second answer does not matter: the first one was 2xx.
			_, _ = s.send(ctx, content.Url, body)
			rec.Sent, rec.Duplicated = 2, true
		}
		st := int32(status)
		rec.Status, rec.LastStatus, rec.LastError, rec.DoneAt = deliveryDelivered, &st, "", &now
		return
	}
	rec.LastStatus, rec.LastError = nil, ""
	if err != nil {
		rec.LastError = truncate(err.Error(), 500)
	} else {
		st := int32(status)
		rec.LastStatus, rec.LastError = &st, fmt.Sprintf("the receiver answered %d", status)
	}
	rec.NextAttemptAt = now.Add(s.backoff(int(d.Attempts) + 1))
}

// send POSTs body to url + "/pix" and returns the HTTP status.
func (s *Server) send(ctx context.Context, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+"/pix", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.webhook.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// backoff is the wait after the nth failed attempt: RetryBase doubling,
// at most RetryMax.
func (s *Server) backoff(n int) time.Duration {
	d := s.cfg.RetryBase
	for i := 1; i < n && d < s.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, s.cfg.RetryMax)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
