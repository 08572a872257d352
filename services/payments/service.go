// Package payments is the payments service: it runs the payment attempts
// the checkout service starts, through the merchant's payment handlers —
// the built-in Pix handler br.dev.bcp.pix (asynchronous: a charge at the
// merchant's PSP through the BCB API Pix, client apipix; notified by an
// mTLS webhook and read back from the PSP) and delegated card handlers
// (synchronous: a verified token charged at Stripe, client stripecard).
// A handler's connection is its settings from the tenant registry
// (psp.go); a sandbox handler without settings gets an account at the PSP
// simulator (sandbox.go) and uses the same clients. It owns the
// PostgreSQL schema "payments" and is reached only through its connect
// API.
//
// Every change that needs later work is durable before it is acted on:
// refunds and every notice to the checkout service are jobs inserted in
// the change's transaction (notices are checkout jobs, package
// paymentevents: this service never calls the checkout service, which
// calls it); polls, expiries and reconciliations are due times the
// resolve sweep acts on (sweep.go). Nothing is lost and nothing runs for
// a change that rolled back. The attempt's statuses and transitions are
// in machine.go. Every id the PSP or processor sees (txid, devolução id,
// idempotency key) is chosen and stored before the call, so any call can
// be retried.
package payments

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/lease"
	"github.com/bcpdev/bcp/internal/sealer"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenantcache"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
	"github.com/bcpdev/bcp/sim/pspsim/simcontrol"
)

// Options tune the service. The zero value is the production default.
type Options struct {
	Logger *slog.Logger
	// Now is the clock (tests move it).
	Now func() time.Time
	// Sandbox is the PSP simulator sandbox handlers without settings of
	// their own use (zero: such handlers cannot take payments).
	Sandbox SandboxPSP
	// WebhookOrigin maps a merchant's origin (https://loja.com.br) to the
	// origin PSPs post its Pix webhooks to: the listener that asks for
	// their client certificates. Nil: the merchant origin itself (a
	// TLS-terminating proxy in front forwards the certificate).
	WebhookOrigin func(merchantOrigin string) string
	// PSPDial dials PSPs, processors and the simulator (nil: the system's
	// resolver; dev sends *.localhost to loopback).
	PSPDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// PSPWrap wraps the transport of every PSP and processor client
	// (tests: the API Pix contract checker).
	PSPWrap func(http.RoundTripper) http.RoundTripper
	// Metrics registers the service's counters (nil: not exported).
	Metrics prometheus.Registerer
}

// Service implements paymentsv1connect.PaymentsServiceHandler.
type Service struct {
	pool    *pgxpool.Pool
	tenants tenantsv1connect.TenantServiceClient
	seal    sealer.Sealer
	hashKey []byte
	jobs    *jobs.Client
	now     func() time.Time
	log     *slog.Logger
	opts    Options
	metrics *metrics
	// handlerCache holds each merchant's payment handlers and their
	// secret settings (two registry calls per payment otherwise); Run
	// keeps it current.
	handlerCache *tenantcache.Cache[merchantHandlers]
	// pixClients and cardClients keep one client per handler settings,
	// with its OAuth2 token and connections (keyed by settingsKey).
	pixClients  *tenantcache.Cache[*apipix.Client]
	cardClients *tenantcache.Cache[*stripecard.Processor]
	sim         *simcontrol.Client // the PSP simulator's control API
	// sandboxAccounts keeps the simulator accounts read (never changed
	// once stored), keyed tenant/handler.
	sandboxAccounts *tenantcache.Cache[sandboxAccount]
	// holder names this process incarnation as the owner of the attempts
	// it starts (nil: no recovery; tests); recovering is what its
	// recovery took over (recover.go).
	holder     *lease.Holder
	recovering *recovering
}

// New returns the service. masterKey (32 bytes) seals the sandbox
// accounts' credentials and keys the request hashes; tenants resolves the
// merchant's handlers and their settings. It calls no other service: the
// checkout service learns of asynchronous changes from the jobs announce
// inserts.
func New(pool *pgxpool.Pool, tenants tenantsv1connect.TenantServiceClient, masterKey []byte, opts Options) (*Service, error) {
	seal, err := sealer.NewAESGCM(masterKey)
	if err != nil {
		return nil, err
	}
	simHTTP, err := newSimHTTP(opts.Sandbox, opts.PSPDial)
	if err != nil {
		return nil, err
	}
	// A key of its own for request hashes: never the sealing key itself.
	m := hmac.New(sha256.New, masterKey)
	m.Write([]byte("bcp/payments/request-hash/v1"))
	s := &Service{
		pool: pool, tenants: tenants, seal: seal, hashKey: m.Sum(nil),
		now: opts.Now, log: opts.Logger, opts: opts, metrics: newMetrics(opts.Metrics),
		handlerCache: tenantcache.New[merchantHandlers](tenantcache.Options{}),
		// Settings change rarely and a change makes a new key: an hour
		// keeps tokens and connections warm, the LRU bounds the count.
		pixClients:      tenantcache.New[*apipix.Client](tenantcache.Options{TTL: time.Hour, UnwatchedTTL: time.Hour}),
		cardClients:     tenantcache.New[*stripecard.Processor](tenantcache.Options{TTL: time.Hour, UnwatchedTTL: time.Hour}),
		sandboxAccounts: tenantcache.New[sandboxAccount](tenantcache.Options{TTL: time.Hour, UnwatchedTTL: time.Hour}),
		sim:             &simcontrol.Client{BaseURL: opts.Sandbox.ControlURL, Token: opts.Sandbox.AdminToken, HTTP: simHTTP},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

var _ paymentsv1connect.PaymentsServiceHandler = (*Service)(nil)

// Run follows the tenant registry's changes so cached payment handlers are
// dropped as soon as a merchant's handlers (or the tenant) change; without
// it they live 2 s.
func (s *Service) Run(ctx context.Context, log *slog.Logger) {
	tenantcache.Follow(ctx, s.tenants, log, s.handlerCache)
}

// UseJobs gives the service its job client (set after construction because
// the client's workers need the service).
func (s *Service) UseJobs(c *jobs.Client) { s.jobs = c }

// AddWorkers registers the service's durable jobs; with a nil s, stand-ins
// for them (jobs.AddWorker), for a process that does not host payments.
func AddWorkers(w *river.Workers, s *Service) {
	hosted := s != nil
	jobs.AddWorker(w, &expireWorker{s: s}, hosted)
	jobs.AddWorker(w, &pollWorker{s: s}, hosted)
	jobs.AddWorker(w, &reconcileWorker{s: s}, hosted)
	jobs.AddWorker(w, &settleWorker{s: s}, hosted)
	jobs.AddWorker(w, &refundWorker{s: s}, hosted)
	jobs.AddWorker(w, &cardResolveWorker{s: s}, hosted) // jobs queued before the resolve sweep
	jobs.AddWorker(w, &resolveSweepWorker{s: s}, hosted)
}

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == paymentsv1connect.PaymentsServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[paymentsv1.PingRequest]) (*connect.Response[paymentsv1.PingResponse], error) {
	return connect.NewResponse(&paymentsv1.PingResponse{Service: "payments", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}

var errNoJobs = errors.New("payments: no job client")
