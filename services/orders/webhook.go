package orders

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/httpdeadline"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/merchantsign"
	"github.com/bcpdev/bcp/internal/netguard"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/tracing"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/orders/ordersdb"
)

// WebhookMaxAttempts bounds the deliveries of one webhook message. With
// DefaultWebhookBackoff the last attempt comes three to four days after
// the first, covering a receiver that is down over a long weekend.
const WebhookMaxAttempts = 25

// WebhookSigner signs an order webhook as the merchant: it sets
// Content-Type and BCP-Agent (profile="<businessProfileURL>"), adds
// Content-Digest over body, and an RFC 9421 signature (Signature-Input,
// Signature) made with the tenant's current key, whose keyid is that key's
// kid in the merchant's /.well-known/bcp. It covers @method @authority
// @path, content-digest, content-type, bcp-agent, webhook-id and
// webhook-timestamp. The private key never leaves the tenants service;
// *merchantsign.Signer (SignWithCurrentKey) is the implementation.
type WebhookSigner interface {
	SignWebhook(ctx context.Context, tenantID uuid.UUID, r *http.Request, body []byte, businessProfileURL string) (kid string, err error)
}

// DefaultWebhookBackoff waits 10 s before the first retry, doubling up to
// 6 h, with up to 10% jitter so a receiver coming back is not hit by every
// queued message at once.
func DefaultWebhookBackoff(attempt int) time.Duration {
	d := 6 * time.Hour
	if attempt >= 1 && attempt <= 12 {
		d = min(d, 10*time.Second<<(attempt-1))
	}
	return d + time.Duration(rand.Int64N(int64(d/10)+1))
}

// WebhookArgs is the durable job that delivers one webhook message. It is
// inserted with the change that caused it; DeliveryID is the message's
// Webhook-Id, the same on every retry.
type WebhookArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	OrderID    string    `json:"order_id"`
	DeliveryID uuid.UUID `json:"delivery_id"`
}

// Kind names the job.
func (WebhookArgs) Kind() string { return "order_webhook" }

// InsertOpts routes it to the orders queue.
func (WebhookArgs) InsertOpts() river.InsertOpts { return jobs.In(jobs.QueueOrders) }

// WebhookWorker works WebhookArgs jobs.
type WebhookWorker struct {
	river.WorkerDefaults[WebhookArgs]
	Service *Service
}

// AddWorkers registers the service's durable jobs; with a nil s, stand-ins
// for them (jobs.AddWorker), for a process that does not host orders.
func AddWorkers(w *river.Workers, s *Service) {
	hosted := s != nil
	jobs.AddWorker(w, &WebhookWorker{Service: s}, hosted)
	jobs.AddWorker(w, &RefundWorker{Service: s}, hosted)
}

// NextRetry applies the service's webhook backoff.
func (w *WebhookWorker) NextRetry(job *river.Job[WebhookArgs]) time.Time {
	return time.Now().Add(w.Service.cfg.WebhookBackoff(job.Attempt))
}

// Timeout leaves room for signing and recording around the HTTP call.
func (w *WebhookWorker) Timeout(*river.Job[WebhookArgs]) time.Duration {
	return w.Service.cfg.WebhookTimeout + 30*time.Second
}

// Work makes one delivery attempt; an error makes river retry it.
func (w *WebhookWorker) Work(ctx context.Context, job *river.Job[WebhookArgs]) error {
	return w.Service.deliver(tenancy.With(ctx, job.Args.TenantID), job.Args, job.Attempt)
}

// errPermanent marks a delivery that no retry can fix (a URL the tenant's
// environment does not allow).
type errPermanent struct{ msg string }

func (e errPermanent) Error() string { return e.msg }

// deliver posts the order's current snapshot to the agent's webhook URL.
// Nothing is held open across the HTTP call: the order is read in one
// short transaction and the attempt recorded in another.
func (s *Service) deliver(ctx context.Context, a WebhookArgs, attempt int) error {
	var row ordersdb.OrdersOrder
	var d ordersdb.OrdersWebhookDelivery
	err := pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := ordersdb.New(tx)
		var err error
		if d, err = q.GetDelivery(ctx, ordersdb.GetDeliveryParams{TenantID: a.TenantID, ID: a.DeliveryID}); err != nil {
			return err
		}
		row, err = q.GetOrder(ctx, ordersdb.GetOrderParams{TenantID: a.TenantID, ID: a.OrderID})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	if d.DeliveredAt != nil {
		return nil // delivered by an attempt whose completion river did not record
	}
	status, err := s.post(ctx, a, row, d.CreatedAt)
	delivered := err == nil
	var perm errPermanent
	outcome := "retry"
	switch {
	case delivered:
		outcome = "delivered"
	case errors.As(err, &perm) || attempt >= WebhookMaxAttempts:
		outcome = "abandoned"
	}
	s.metrics.deliveries.WithLabelValues(outcome).Inc()
	log := s.log.With("tenant_id", a.TenantID, "order_id", a.OrderID, "webhook_id", a.DeliveryID, "attempt", attempt, "status", status)
	if delivered {
		log.InfoContext(ctx, "order webhook delivered")
	} else {
		log.WarnContext(ctx, "order webhook not delivered", "outcome", outcome, "err", err)
	}
	// Record even when the job's context is ending: the attempt happened.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	p := ordersdb.RecordDeliveryAttemptParams{TenantID: a.TenantID, ID: a.DeliveryID, Delivered: delivered}
	if status > 0 {
		st := int32(status)
		p.LastStatus = &st
	}
	if err != nil {
		p.LastError = truncate(err.Error(), 500)
	}
	record := func() error {
		return pgstore.InTenant(rctx, s.pool, func(tx pgx.Tx) error { return ordersdb.New(tx).RecordDeliveryAttempt(rctx, p) })
	}
	rerr := record()
	// A delivery left unrecorded would stay "not delivered" for ever (the
	// job would end as done): wait out a short database outage, and if
	// that is not enough, fail the job so river sends it again with the
	// same Webhook-Id (receivers deduplicate on it) and records that one.
	// Found by cmd/bcpchaos: PostgreSQL restarted between the POST and
	// this write.
	for i := 0; rerr != nil && delivered && i < recordRetries && rctx.Err() == nil; i++ {
		select {
		case <-rctx.Done():
		case <-time.After(recordRetryEvery):
		}
		rerr = record()
	}
	if rerr != nil && delivered {
		log.ErrorContext(ctx, "order webhook delivered but not recorded; it will be sent again", "err", rerr)
		return fmt.Errorf("orders: webhook %s delivered but not recorded: %w", a.DeliveryID, rerr)
	}
	if errors.As(err, &perm) {
		return river.JobCancel(err)
	}
	return err
}

// Recording a delivery attempt: how long it may take in all, and how often
// it is retried while the database is unreachable.
const (
	recordTimeout    = 20 * time.Second
	recordRetries    = 8
	recordRetryEvery = 2 * time.Second
)

// post signs and sends one attempt. It returns the HTTP status (0 without
// a response) and an error unless the receiver answered 2xx. eventAt is
// the message's event time, its Webhook-Timestamp on every attempt (UCP):
// a retry is the same message, and receivers order and deduplicate
// messages by Webhook-Id and Webhook-Timestamp.
func (s *Service) post(ctx context.Context, a WebhookArgs, row ordersdb.OrdersOrder, eventAt time.Time) (int, error) {
	dev, err := s.tenantInDevelopment(ctx, a.TenantID)
	if err != nil {
		return 0, fmt.Errorf("tenant environment: %w", err)
	}
	target, err := checkWebhookURL(row.WebhookUrl, dev)
	if err != nil {
		return 0, err
	}
	o, err := decodeOrder(row.Snapshot)
	if err != nil {
		return 0, err
	}
	// The full current order, not the version that queued the message: a
	// late retry never takes the agent back to an older state.
	o.UCP = &bcp.UCP{Version: bcpnames.Version, Capabilities: map[string][]bcp.CapabilityRef{bcpnames.Order: {{Version: bcpnames.Version}}}}
	body, err := json.Marshal(o)
	if err != nil {
		return 0, err
	}
	if s.cfg.Signer == nil {
		return 0, errors.New("no webhook signer configured")
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return 0, errPermanent{msg: "webhook URL: " + err.Error()}
	}
	profile := row.BaseUrl + "/.well-known/bcp"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Webhook-Id", a.DeliveryID.String())
	req.Header.Set("Webhook-Timestamp", strconv.FormatInt(eventAt.Unix(), 10))
	req.Header.Set("BCP-Agent", `profile="`+profile+`"`)
	req.Header.Set("User-Agent", "bcp-order-webhooks/1")
	if _, err := s.cfg.Signer.SignWebhook(ctx, a.TenantID, req, body, profile); err != nil {
		return 0, fmt.Errorf("sign webhook: %w", err)
	}
	resp, err := s.hooks.client(dev).Do(req)
	if err != nil {
		return 0, fmt.Errorf("post webhook: %w", err)
	}
	defer resp.Body.Close()
	// Drain a little so the connection can be reused; the body is ignored.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("webhook receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// tenantInDevelopment asks the registry whether the tenant is a
// development one (its webhooks may use http and private addresses).
func (s *Service) tenantInDevelopment(ctx context.Context, tid uuid.UUID) (bool, error) {
	if s.cfg.Tenants == nil {
		return false, nil
	}
	r, err := s.cfg.Tenants.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tid.String()}))
	if err != nil {
		return false, err
	}
	return r.Msg.GetTenant().GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT, nil
}

// checkWebhookURL is the syntactic gate: https (http only for development
// tenants), an absolute URL without credentials or fragment, and no
// literal special-use address outside development. Host names are
// checked where it matters, on the resolved address at dial time.
func checkWebhookURL(raw string, dev bool) (*url.URL, error) {
	bad := func(msg string) (*url.URL, error) { return nil, errPermanent{msg: "webhook URL " + msg} }
	if len(raw) > 2048 {
		return bad("is longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("does not parse")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && dev:
	default:
		return bad("must use https")
	}
	if u.Host == "" || u.Opaque != "" || u.User != nil || u.Fragment != "" {
		return bad("must be absolute, without credentials or fragment")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !dev && netguard.IsForbidden(ip) {
		return bad("points at a special-use address")
	}
	return u, nil
}

// webhookClients are the delivery clients: one per environment so a
// connection a development tenant opened to a private address is never
// reused by a production delivery (the dial-time guard would not run).
type webhookClients struct{ prod, dev *http.Client }

func newWebhookClients(timeout time.Duration) *webhookClients {
	return &webhookClients{prod: newWebhookClient(false, timeout), dev: newWebhookClient(true, timeout)}
}

func (c *webhookClients) client(dev bool) *http.Client {
	if dev {
		return c.dev
	}
	return c.prod
}

func newWebhookClient(allowPrivate bool, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: netguard.DialControl(allowPrivate)}
	t := &http.Transport{
		// No proxy: it would be dialed instead of the receiver, and the
		// guard would check the proxy's address.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
	}
	return &http.Client{
		// traceparent, when the delivery is traced; the timeout as a
		// context deadline (no goroutine and timer per request, see
		// httpdeadline).
		Transport: &httpdeadline.Transport{Next: tracing.Transport(t), Timeout: timeout},
		// A redirect is not a delivery (and could point anywhere): the 3xx
		// is answered as a failure and retried.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// NewTenantSigner is the platform's WebhookSigner: the merchant's current
// key, held by the tenants service, signs through SignWithCurrentKey.
func NewTenantSigner(tenants tenantsv1connect.TenantServiceClient) WebhookSigner {
	return &merchantsign.Signer{Tenants: tenants}
}
