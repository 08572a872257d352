// Package orders is the orders service: it owns orders (one per completed
// checkout), fulfillment events, adjustments and order webhooks. It owns
// the PostgreSQL schema "orders" and is reached only through its connect
// API.
//
// Exactly one order per checkout is a unique constraint on (tenant,
// checkout_id): concurrent CreateOrder calls race on INSERT ... ON
// CONFLICT DO NOTHING and every caller then reads the one stored order.
// Every change to an order (creation, fulfillment event, refund step)
// runs under a row lock, rewrites the stored snapshot (the BCP order
// without "ucp") and, when the agent gave a webhook URL, inserts a
// webhook message and its delivery job in the same transaction, so no
// change is ever committed without its notification, nor notified
// without being committed.
package orders

import (
	"context"
	"io"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/svcauth"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Config holds what the service needs besides its database.
type Config struct {
	// Payments refunds (RefundPayment).
	Payments paymentsv1connect.PaymentsServiceClient
	// Tenants tells a delivery whether the tenant is in development
	// (GetDiscovery), which relaxes the webhook URL rules.
	Tenants tenantsv1connect.TenantServiceClient
	// Signer signs webhooks with the merchant's current key; in the
	// platform a *merchantsign.Signer over the tenants service.
	Signer WebhookSigner
	Logger *slog.Logger
	// Metrics, when set, receives the webhook and refund counters.
	Metrics prometheus.Registerer
	// WebhookBackoff overrides the delay before retry n (1-based) of a
	// webhook delivery; nil means DefaultWebhookBackoff.
	WebhookBackoff func(attempt int) time.Duration
	// WebhookTimeout bounds one delivery attempt (default 15 s).
	WebhookTimeout time.Duration
	// RefundRecheck is when the refund job first asks about a refund the
	// request itself is settling (default 30 s); it matters only when that
	// request died or got no clear answer.
	RefundRecheck time.Duration
}

// Service implements ordersv1connect.OrdersServiceHandler.
type Service struct {
	pool    *pgxpool.Pool
	cfg     Config
	log     *slog.Logger
	jobs    *jobs.Client
	hooks   *webhookClients
	metrics *metrics
	now     func() time.Time
}

// New returns the service.
func New(pool *pgxpool.Pool, cfg Config) *Service {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.WebhookBackoff == nil {
		cfg.WebhookBackoff = DefaultWebhookBackoff
	}
	if cfg.WebhookTimeout <= 0 {
		cfg.WebhookTimeout = 15 * time.Second
	}
	if cfg.RefundRecheck <= 0 {
		cfg.RefundRecheck = 30 * time.Second
	}
	return &Service{
		pool: pool, cfg: cfg, log: log, hooks: newWebhookClients(cfg.WebhookTimeout),
		metrics: newMetrics(cfg.Metrics, pool), now: time.Now,
	}
}

// UseJobs gives the service its job client (set after construction because
// the client's workers need the service). Without one, a change that must
// notify a webhook fails rather than lose the notification.
func (s *Service) UseJobs(c *jobs.Client) { s.jobs = c }

var _ ordersv1connect.OrdersServiceHandler = (*Service)(nil)

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == ordersv1connect.OrdersServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[ordersv1.PingRequest]) (*connect.Response[ordersv1.PingResponse], error) {
	return connect.NewResponse(&ordersv1.PingResponse{Service: "orders", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}

type metrics struct {
	deliveries *prometheus.CounterVec
	refunds    *prometheus.CounterVec
	created    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, pool *pgxpool.Pool) *metrics {
	m := &metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bcp_orders_created_total",
			Help: "Orders created (the last step of the purchase funnel; a retried CreateOrder that found its order is not counted).",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_order_webhook_attempts_total",
			Help: "Order webhook delivery attempts by outcome (delivered, retry, abandoned).",
		}, []string{"outcome"}),
		refunds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_order_refunds_total",
			Help: "Order refund steps by resulting adjustment status.",
		}, []string{"status"}),
	}
	if reg != nil {
		reg.MustRegister(m.deliveries, m.refunds, m.created, webhookBacklog{pool}) // backlog.go
	}
	return m
}
