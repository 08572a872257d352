// Package platform assembles bcpd: which services a process hosts (its
// role), their connect handlers on the internal listener, the clients they
// use to reach each other (in-process when co-hosted, HTTP otherwise), the
// public edge, metrics and health.
package platform

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/direct"
	"github.com/bcpdev/bcp/internal/hostname"
	"github.com/bcpdev/bcp/internal/inproc"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/lease"
	"github.com/bcpdev/bcp/internal/obs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/sealer"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1direct"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1direct"
	"github.com/bcpdev/bcp/proto/gen/bcp/edge/v1/edgev1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/edge/v1/edgev1direct"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1direct"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1direct"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1direct"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1direct"
	"github.com/bcpdev/bcp/services/catalog"
	"github.com/bcpdev/bcp/services/checkout"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/services/orders"
	"github.com/bcpdev/bcp/services/payments"
	"github.com/bcpdev/bcp/services/payments/paymentshttp"
	"github.com/bcpdev/bcp/services/pricing"
	"github.com/bcpdev/bcp/sim/pspsim"
	"github.com/bcpdev/bcp/tenants"
	"github.com/bcpdev/bcp/web"
	"github.com/bcpdev/bcp/web/admin"
	"github.com/bcpdev/bcp/web/operator"
)

// Service names, which are also the roles that host exactly one of them.
const (
	Edge     = "edge"
	Tenants  = "tenants"
	Catalog  = "catalog"
	Pricing  = "pricing"
	Checkout = "checkout"
	Payments = "payments"
	Orders   = "orders"
)

// AllServices lists every service `bcpd all` hosts.
var AllServices = []string{Tenants, Catalog, Pricing, Checkout, Payments, Orders, Edge}

// PSPSim is the PSP simulator's role: the sandbox's bank (an HTTPS API Pix
// with OAuth2 and mTLS, and a Stripe-compatible card API), which sandbox
// handlers without settings of their own pay through. Not a service of
// the platform and not in AllServices: `bcpd dev`, `make ha` and the tests
// host it (DevServices), a production deployment does not.
const PSPSim = "pspsim"

// DevServices is AllServices with the PSP simulator (bcpd dev, tests).
var DevServices = append(slices.Clone(AllServices), PSPSim)

// Config is a process's configuration.
type Config struct {
	Services     []string // what this process hosts
	DatabaseURL  string   // application role; required unless only the edge runs
	PublicAddr   string   // edge listener (agents, browsers)
	InternalAddr string   // connect services, /metrics, /healthz, /readyz
	// ServiceURLs locate services hosted by other processes, by name.
	ServiceURLs   map[string]string
	InternalToken string
	OperatorToken string
	// OperatorHost serves the operator console on the public listener
	// (matched before Host → tenant routing; no tenant may own it).
	// Empty: no console.
	OperatorHost string
	MasterKey    []byte // required when hosting tenants
	Edge         edge.Config
	// InternalRoutes adds handlers to the internal listener (bcpd dev
	// serves the demo agent's profile there).
	InternalRoutes map[string]http.Handler
	// WebhookBackoff overrides the order webhooks' retry delays (tests).
	WebhookBackoff func(attempt int) time.Duration
	// SweepEvery overrides how often the periodic sweeps run (checkout
	// expiry and settle, card resolve; 15 s by default; tests).
	SweepEvery time.Duration
	// CheckoutHooks stop the checkout's money path between two steps
	// (tests only; checkout.Hooks).
	CheckoutHooks *checkout.Hooks
	// BodyTimeout bounds how long a public request's body may take to
	// arrive (0: DefaultBodyTimeout); IdleTimeout how long a public
	// keep-alive connection may wait for its next request (0:
	// DefaultIdleTimeout). Slow or stalled clients are cut off instead
	// of holding a connection and a descriptor for good.
	BodyTimeout     time.Duration
	IdleTimeout     time.Duration
	Logger          *slog.Logger
	AllowPrivileged bool
	// HTTPInProcess makes calls between co-hosted services go through
	// the internal connect handlers over an in-process HTTP transport
	// instead of direct calls (tests: the HTTP path one role per process
	// uses, in one process).
	HTTPInProcess bool

	// DevPKIDir keeps the development PKI (devpki.go): the CA of the
	// simulator's and the webhook listener's server certificates, and the
	// simulator's own CA. Used when the process hosts the simulator,
	// reaches one (ServiceURLs[PSPSim]) or serves webhooks without
	// WebhookCert. "": in memory (tests).
	DevPKIDir string
	// PSPSimPixAddr and PSPSimControlAddr are the simulator's listeners
	// when hosted ("": 127.0.0.1, any port); PSPSimFaults its initial
	// fault settings (pspsim.ParseFaults).
	PSPSimPixAddr, PSPSimControlAddr, PSPSimFaults string
	// PSPSimToken is the simulator's control API token (hosted, or at
	// ServiceURLs[PSPSim]); "": the internal token.
	PSPSimToken string
	// WebhookAddr is the TLS listener PSPs post Pix webhooks to: it asks
	// for their client certificate, which the payments service checks
	// against the handler's PSP settings. "": none (a TLS-terminating
	// proxy forwards webhooks to the public listener with the certificate
	// in WebhookClientCertHeader), except that a process hosting the
	// simulator and the edge listens on 127.0.0.1, any port.
	WebhookAddr string
	// WebhookCert is the webhook listener's certificate (nil: issued by
	// the dev PKI).
	WebhookCert *tls.Certificate
	// WebhookPort is the port PSPs are told to post to on merchant hosts
	// (the payments role, when the webhook listener is in another
	// process; "": this process's webhook listener's, else the merchant
	// origin as it is).
	WebhookPort string
	// WebhookClientCertHeader names the header a trusted TLS-terminating
	// proxy puts the PSP's verified client certificate in (URL-escaped
	// PEM, as nginx's $ssl_client_escaped_cert). "": headers are never
	// trusted for it.
	WebhookClientCertHeader string
	// Tracing configures distributed tracing (internal/tracing): off
	// unless it, or the OTEL_EXPORTER_OTLP_* environment, names an
	// exporter. The process's roles and instance are added here.
	Tracing tracing.Config
}

// Defaults for the public listener's time limits (Config.BodyTimeout,
// Config.IdleTimeout). A BCP body is at most 1 MiB: 30 s is enough at
// ~35 KB/s; agents keep connections warm between calls of a checkout.
const (
	DefaultBodyTimeout = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
	readHeaderTimeout  = 10 * time.Second
)

// Running is a started process.
type Running struct {
	PublicAddr   string // resolved listener address ("" when no edge)
	InternalAddr string
	// WebhookAddr is the webhook listener's address ("" when none).
	WebhookAddr string
	// PSPSim is the hosted simulator (nil when not hosted).
	PSPSim *pspsim.Server
	// DevCAPEM is the dev PKI's CA certificate (PEM) when one is in use:
	// what trusts the simulator's and the webhook listener's certificates.
	DevCAPEM []byte
	Clients  *Clients
	Pool     *pgxpool.Pool

	cfg        Config
	edge       *edge.Edge
	local      *http.Client
	handlers   *handlers
	tokens     svcauth.Tokens
	log        *slog.Logger
	publicAddr atomic.Pointer[string]
	// webhookPort is the port PSPs post webhooks to (set when known).
	webhookPort atomic.Pointer[string]
	jobs        *jobs.Client
	tracer      *tracing.Provider // nil: tracing off
	holder      *lease.Holder
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	srvs        []*http.Server
	errc        chan error
}

// Clients reach every service, co-hosted or remote, the same way.
type Clients struct {
	Tenants  tenantsv1connect.TenantServiceClient
	Catalog  catalogv1connect.CatalogServiceClient
	Pricing  pricingv1connect.PricingServiceClient
	Checkout checkoutv1connect.CheckoutServiceClient
	Payments paymentsv1connect.PaymentsServiceClient
	Orders   ordersv1connect.OrdersServiceClient
	Edge     edgev1connect.EdgeServiceClient
}

func (c *Config) hosts(name string) bool { return slices.Contains(c.Services, name) }

// Start opens the database (when needed), mounts the hosted services and
// starts the listeners. It returns once they accept connections.
func Start(ctx context.Context, cfg Config) (*Running, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.InternalToken == "" {
		return nil, errors.New("an internal service token is required (BCP_INTERNAL_TOKEN)")
	}
	if cfg.OperatorHost != "" {
		if msg := hostname.Validate(hostname.Normalize(cfg.OperatorHost)); msg != "" {
			return nil, fmt.Errorf("operator host %q: %s", cfg.OperatorHost, msg)
		}
	}
	needDB := slices.ContainsFunc(cfg.Services, func(s string) bool { return s != Edge })
	ctx, cancel := context.WithCancel(ctx)
	r := &Running{cancel: cancel, errc: make(chan error, 4)}
	fail := func(err error) (*Running, error) {
		r.Stop()
		return nil, err
	}
	tcfg := cfg.Tracing
	tcfg.Roles, tcfg.Instance = cfg.Services, cmp.Or(tcfg.Instance, instanceName(cfg))
	tracer, err := tracing.New(ctx, tcfg)
	if err != nil {
		return fail(fmt.Errorf("tracing: %w", err))
	}
	r.tracer = tracer
	if needDB {
		if cfg.DatabaseURL == "" {
			return fail(errors.New("a database URL is required (--database-url or BCP_DATABASE_URL)"))
		}
		pool, err := pgstore.Open(ctx, cfg.DatabaseURL, pgstore.Options{AllowPrivileged: cfg.AllowPrivileged, Tracer: tracer.PgxTracer()})
		if err != nil {
			return fail(fmt.Errorf("open database: %w", err))
		}
		r.Pool = pool
		if cfg.hosts(Checkout) || cfg.hosts(Payments) || cfg.hosts(Orders) {
			// The owner of the money-path work this process starts and of
			// the jobs it runs, so that any process finishes them at once
			// if this one dies (internal/lease; the services' recover.go,
			// jobs.RescueGone).
			h, err := lease.Start(ctx, cfg.DatabaseURL, instanceName(cfg), log)
			if err != nil {
				return fail(err)
			}
			r.holder = h
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := obs.NewMetrics(reg)
	if r.Pool != nil {
		reg.MustRegister(pgstore.PoolCollector(r.Pool)) // the pool's saturation
	}

	internal := http.NewServeMux()
	tokens := svcauth.Tokens{Internal: cfg.InternalToken, Operator: cfg.OperatorToken}
	traceOuter, traceInner := tracer.ServerInterceptors()
	handlerOpts := func(policy func(string) svcauth.Access) connect.HandlerOption {
		ics := append(slices.Clone(traceOuter), apperr.Interceptor(log), svcauth.Server(tokens, policy))
		return connect.WithInterceptors(append(ics, traceInner...)...)
	}
	// Clients of co-hosted services call their handlers directly (or,
	// with HTTPInProcess, through the internal mux in process).
	r.local = inproc.Client(internal)
	r.cfg, r.tokens, r.log, r.handlers = cfg, tokens, log, &handlers{}
	clients, err := r.newClients(cfg.InternalToken)
	if err != nil {
		return fail(err)
	}
	r.Clients = clients

	// Durable jobs: services register workers, then one client per process
	// works them all.
	workers := river.NewWorkers()
	var periodic []*river.PeriodicJob
	var queues []string
	var jobUsers []func(*jobs.Client)
	// The services' recovery of the work a dead process left (their
	// recover.go), started once the job client is: it settles, orders
	// and announces.
	var recoveries []func()
	checks := map[string]obs.Check{}
	if r.Pool != nil {
		checks["database"] = r.Pool.Ping
	}
	var dev *devPKI
	if cfg.hosts(PSPSim) || cfg.ServiceURLs[PSPSim] != "" || cfg.DevPKIDir != "" ||
		(cfg.hosts(Edge) && cfg.WebhookAddr != "" && cfg.WebhookCert == nil) {
		if dev, err = loadDevPKI(cfg.DevPKIDir); err != nil {
			return fail(err)
		}
		r.DevCAPEM = dev.ca.CertPEM
	}
	if cfg.hosts(PSPSim) {
		cert, err := dev.serverCert()
		if err != nil {
			return fail(err)
		}
		// Its goroutines carry side=pspsim, so a CPU profile of a process
		// hosting it tells the bank's work from the platform's.
		var sim *pspsim.Server
		pprof.Do(ctx, pprof.Labels("side", "pspsim"), func(ctx context.Context) {
			sim, err = pspsim.Start(ctx, pspsim.Config{
				Pool: r.Pool, PixAddr: cmp.Or(cfg.PSPSimPixAddr, "127.0.0.1:0"), ControlAddr: cmp.Or(cfg.PSPSimControlAddr, "127.0.0.1:0"),
				ServerCert: cert, CA: dev.simCA, AdminToken: cmp.Or(cfg.PSPSimToken, cfg.InternalToken), WebhookRootCAs: dev.ca.Pool(),
				Faults: cfg.PSPSimFaults, Logger: log, Metrics: reg, Tracing: tracer,
			})
		})
		if err != nil {
			return fail(fmt.Errorf("PSP simulator: %w", err))
		}
		r.PSPSim = sim
	}
	for _, name := range cfg.Services {
		switch name {
		case Tenants:
			seal, err := sealer.NewAESGCM(cfg.MasterKey)
			if err != nil {
				return fail(fmt.Errorf("master key: %w", err))
			}
			b := tenants.NewBroadcaster(r.Pool, log)
			r.goRun(func() { b.Run(ctx) })
			svc := tenants.New(r.Pool, seal, b, log)
			// The go-live checklist asks the catalog and pricing services.
			svc.UseClients(tenants.Clients{Catalog: clients.Catalog, Pricing: clients.Pricing})
			if cfg.OperatorHost != "" {
				svc.ReserveHosts(cfg.OperatorHost)
			}
			r.handlers.tenants.Set(svc)
			internal.Handle(tenantsv1connect.NewTenantServiceHandler(svc, handlerOpts(tenants.Policy)))
		case Catalog:
			svc := catalog.New(r.Pool)
			r.goRun(func() { svc.Run(ctx, log) })
			r.handlers.catalog.Set(svc)
			internal.Handle(catalogv1connect.NewCatalogServiceHandler(svc, handlerOpts(catalog.Policy)))
		case Pricing:
			svc := pricing.New(r.Pool)
			r.goRun(func() { svc.Run(ctx, log) })
			r.handlers.pricing.Set(svc)
			internal.Handle(pricingv1connect.NewPricingServiceHandler(svc, handlerOpts(pricing.Policy)))
		case Checkout:
			svc := checkout.New(r.Pool, checkout.Clients{Catalog: clients.Catalog, Pricing: clients.Pricing, Tenants: clients.Tenants, Payments: clients.Payments, Orders: clients.Orders})
			svc.UseHooks(cfg.CheckoutHooks)
			svc.UseHolder(r.holder)
			recoveries = append(recoveries, func() { svc.RunRecovery(ctx, log) })
			svc.Metrics(reg)
			checkout.AddWorkers(workers, svc)
			queues = append(queues, jobs.QueueCheckout)
			r.goRun(func() { svc.Run(ctx, log) })
			r.handlers.checkout.Set(svc)
			internal.Handle(checkoutv1connect.NewCheckoutServiceHandler(svc, handlerOpts(checkout.Policy)))
		case Payments:
			popts := payments.Options{Logger: log, Metrics: reg, PSPDial: hostname.DialLocalhost(&net.Dialer{Timeout: 5 * time.Second})}
			// Sandbox handlers without settings of their own pay through
			// the simulator: co-hosted, or at its URL.
			switch {
			case r.PSPSim != nil:
				popts.Sandbox = payments.SandboxPSP{ControlURL: r.PSPSim.ControlURL(), AdminToken: cmp.Or(cfg.PSPSimToken, cfg.InternalToken), RootCAsPEM: dev.ca.CertPEM}
			case cfg.ServiceURLs[PSPSim] != "":
				popts.Sandbox = payments.SandboxPSP{ControlURL: cfg.ServiceURLs[PSPSim], AdminToken: cmp.Or(cfg.PSPSimToken, cfg.InternalToken), RootCAsPEM: dev.ca.CertPEM}
			}
			if cfg.WebhookPort != "" {
				port := cfg.WebhookPort
				r.webhookPort.Store(&port)
			}
			popts.WebhookOrigin = func(origin string) string { return webhookOrigin(origin, r.webhookPort.Load()) }
			svc, err := payments.New(r.Pool, clients.Tenants, cfg.MasterKey, popts)
			if err != nil {
				return fail(fmt.Errorf("payments (needs the master key): %w", err))
			}
			payments.AddWorkers(workers, svc)
			svc.UseHolder(r.holder)
			recoveries = append(recoveries, func() { svc.RunRecovery(ctx, log) })
			queues = append(queues, jobs.QueuePayments)
			r.goRun(func() { svc.Run(ctx, log) })
			jobUsers = append(jobUsers, svc.UseJobs)
			r.handlers.payments.Set(svc)
			internal.Handle(paymentsv1connect.NewPaymentsServiceHandler(svc, handlerOpts(payments.Policy)))
		case Orders:
			svc := orders.New(r.Pool, orders.Config{Payments: clients.Payments, Tenants: clients.Tenants, Signer: orders.NewTenantSigner(clients.Tenants), Logger: log, Metrics: reg, WebhookBackoff: cfg.WebhookBackoff})
			orders.AddWorkers(workers, svc)
			queues = append(queues, jobs.QueueOrders)
			jobUsers = append(jobUsers, svc.UseJobs)
			r.handlers.orders.Set(svc)
			internal.Handle(ordersv1connect.NewOrdersServiceHandler(svc, handlerOpts(orders.Policy)))
		case Edge, PSPSim:
		default:
			return fail(fmt.Errorf("unknown service %q", name))
		}
	}
	if len(jobUsers) > 0 || len(queues) > 0 { // a service inserts jobs or works a queue
		// Every process with a job client may be elected river's leader,
		// which alone inserts the periodic jobs: each registers every
		// service's sweep, and the sweep's queue takes it to a process
		// hosting that service (with one role per process, a leader that
		// registered only its own sweeps left the others never run).
		periodic = append(periodic, checkout.SweepJob(cfg.SweepEvery), payments.SweepJob(cfg.SweepEvery))
		// Stand-ins for the job kinds of the services hosted elsewhere:
		// the leader, whichever process it is, rescues their stuck jobs
		// instead of discarding them (jobs.AddWorker).
		for name, add := range map[string]func(){
			Checkout: func() { checkout.AddWorkers(workers, nil) },
			Payments: func() { payments.AddWorkers(workers, nil) },
			Orders:   func() { orders.AddWorkers(workers, nil) },
		} {
			if !cfg.hosts(name) {
				add()
			}
		}
		jc, err := jobs.NewClientWith(r.holder.ID(), r.Pool, workers, periodic, queues, log, tracer.RiverMiddleware())
		if err != nil {
			return fail(fmt.Errorf("job client: %w", err))
		}
		for _, use := range jobUsers {
			use(jc)
		}
		if err := jc.Start(ctx); err != nil {
			return fail(fmt.Errorf("start job client: %w", err))
		}
		r.jobs = jc
	}
	if r.jobs != nil && r.holder != nil {
		recoveries = append(recoveries, func() { r.rescueJobs(ctx, log) })
	}
	for _, run := range recoveries {
		r.goRun(run)
	}
	internal.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Profiles on demand (net/http/pprof), for the operator token only.
	obs.Profiles(internal, func(h http.Handler) http.Handler { return svcauth.OperatorOnly(tokens, h) })
	for pattern, h := range cfg.InternalRoutes {
		internal.Handle(pattern, h)
	}
	obs.Health(internal, checks)

	if cfg.hosts(Edge) {
		ecfg := cfg.Edge
		if ecfg.Metrics == nil {
			ecfg.Metrics = reg // rate limit counters on /metrics
		}
		e, err := edge.New(ecfg, edge.Clients{Tenants: clients.Tenants, Checkout: clients.Checkout, Orders: clients.Orders, Catalog: clients.Catalog}, log)
		if err != nil {
			return fail(err)
		}
		// The buyer-facing pages live on the merchant hosts too.
		hosted := web.New(web.Options{
			Checkout: clients.Checkout, Payments: clients.Payments, Tenants: clients.Tenants, Orders: clients.Orders,
			Logger: log, PublicScheme: cfg.Edge.PublicScheme, CSRFKey: csrfKey(cfg.InternalToken),
		})
		for pattern, h := range hosted.Routes() {
			e.Handle(pattern, h)
		}
		// The merchant admin, under /admin on the merchant's own hosts.
		merchantAdmin := admin.New(admin.Options{
			Tenants: clients.Tenants, Catalog: clients.Catalog, Checkout: clients.Checkout, Orders: clients.Orders, Pricing: clients.Pricing,
			Payments: clients.Payments, Logger: log, PublicScheme: cfg.Edge.PublicScheme, CSRFKey: csrfKey(cfg.InternalToken),
		})
		for pattern, h := range merchantAdmin.Routes() {
			e.Handle(pattern, h)
		}
		// PSP webhooks and Pix QR images, forwarded to the payments service.
		for pattern, h := range paymentshttp.Routes(clients.Payments, paymentshttp.Options{ClientCertHeader: cfg.WebhookClientCertHeader}) {
			e.Handle(pattern, h)
		}
		r.handlers.edge.Set(e)
		internal.Handle(edgev1connect.NewEdgeServiceHandler(e, handlerOpts(edgePolicy)))
		r.edge = e
		r.goRun(func() { e.Run(ctx) })
		var public http.Handler = e
		if cfg.OperatorHost != "" {
			if cfg.OperatorToken == "" {
				return fail(errors.New("the operator console (--operator-host) needs the operator token (BCP_OPERATOR_TOKEN)"))
			}
			ops, err := r.newClients(cfg.OperatorToken)
			if err != nil {
				return fail(err)
			}
			console := operator.New(operator.Options{
				Tenants: ops.Tenants, Checkout: ops.Checkout, Orders: ops.Orders,
				OperatorToken: cfg.OperatorToken, PublicScheme: cfg.Edge.PublicScheme, Logger: log,
			})
			public = byHost(hostname.Normalize(cfg.OperatorHost), console, e)
		}
		bodyTimeout, idle := cmp.Or(cfg.BodyTimeout, DefaultBodyTimeout), cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
		addr, err := r.listen(ctx, cfg.PublicAddr, tracer.Handler("public", true, bodyDeadline(bodyTimeout, metrics.Middleware("public", log, public))), idle, log)
		if err != nil {
			return fail(fmt.Errorf("public listener: %w", err))
		}
		r.PublicAddr = addr
		r.publicAddr.Store(&addr)
		if waddr := cfg.WebhookAddr; waddr != "" || r.PSPSim != nil {
			// Ask for the caller's certificate without judging it here:
			// which CA a PSP's certificate must chain to is a setting of
			// each merchant's handler, checked by the payments service.
			tlsCfg := &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
			if cfg.WebhookCert != nil {
				tlsCfg.Certificates = []tls.Certificate{*cfg.WebhookCert}
			} else {
				c, err := dev.serverCert()
				if err != nil {
					return fail(err)
				}
				tlsCfg.GetCertificate = dev.byName(c)
			}
			waddr, err := r.listenTLS(ctx, cmp.Or(waddr, "127.0.0.1:0"), tlsCfg, tracer.Handler("webhooks", true, bodyDeadline(bodyTimeout, metrics.Middleware("webhooks", log, public))), idle, log)
			if err != nil {
				return fail(fmt.Errorf("webhook listener: %w", err))
			}
			r.WebhookAddr = waddr
			if r.webhookPort.Load() == nil {
				_, port, _ := net.SplitHostPort(waddr)
				r.webhookPort.Store(&port)
			}
		}
	}
	addr, err := r.listen(ctx, cfg.InternalAddr, metrics.Middleware("internal", log, internal), DefaultIdleTimeout, log)
	if err != nil {
		return fail(fmt.Errorf("internal listener: %w", err))
	}
	r.InternalAddr = addr
	return r, nil
}

// rescueJobs hands back, at start-up and every half second, the jobs
// processes that are gone left running (jobs.RescueGone), instead of
// river's two minutes.
func (r *Running) rescueJobs(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	failing := false // logged once, not every pass (the database is down)
	for {
		n, err := jobs.RescueGone(ctx, r.Pool, r.holder.Gone)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.WarnContext(ctx, "jobs: could not hand back the jobs of processes that are gone; trying every pass", "err", err)
		case err == nil && n > 0:
			log.InfoContext(ctx, "jobs: handed back the jobs of processes that are gone", "jobs", n)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// instanceName names this process across its restarts, for its work's
// recovery (lease.Start): the host, the roles and the internal address,
// when that is fixed (a process listening on any free port has no
// successor to recognise).
func instanceName(cfg Config) string {
	_, port, err := net.SplitHostPort(cfg.InternalAddr)
	if err != nil || port == "" || port == "0" {
		return ""
	}
	host, _ := os.Hostname()
	return host + " " + strings.Join(cfg.Services, ",") + " " + cfg.InternalAddr
}

// ClientsWithToken returns clients that authenticate with token (e.g. the
// operator token, for seeding and operator tooling in process).
func (r *Running) ClientsWithToken(token string) *Clients {
	c, _ := r.newClients(token)
	return c
}

func (r *Running) newClients(token string) (*Clients, error) {
	cfg := r.cfg
	ics := []connect.Interceptor{svcauth.Client(token)}
	if ti := r.tracer.ClientInterceptor(); ti != nil {
		ics = append([]connect.Interceptor{ti}, ics...)
	}
	remote := connect.WithClientOptions(connect.WithInterceptors(ics...))
	// In process there is no wire: compressing answers only costs CPU
	// (bcpbench measured 12–18 % of a purchase's process CPU).
	local := connect.WithClientOptions(remote, connect.WithAcceptCompression("gzip", nil, nil))
	c := &Clients{}
	for _, name := range AllServices {
		hc, base, opts := r.local, "http://inproc", local
		hosted := cfg.hosts(name)
		if !hosted {
			opts = remote
			hc, base = http.DefaultClient, strings.TrimRight(cfg.ServiceURLs[name], "/")
			if base == "" {
				// Only what this process uses must be reachable: the edge
				// needs tenants. Calls to other unset services fail loudly.
				if name == Tenants && cfg.hosts(Edge) {
					return nil, fmt.Errorf("service %s is not hosted here and has no URL (--%s-url)", name, name)
				}
				base = "http://unconfigured-" + name + ".invalid"
			}
		}
		// A co-hosted service is called directly: the same authorization,
		// tenant and error mapping as its internal handler, without HTTP
		// and protobuf encoding (internal/direct).
		useDirect := hosted && !cfg.HTTPInProcess
		chain := direct.Chain{Authorize: svcauth.Direct(r.tokens, policies[name], token), Logger: r.log, Trace: r.tracer.DirectTrace()}
		switch name {
		case Tenants:
			c.Tenants = tenantsv1connect.NewTenantServiceClient(hc, base, opts)
			if useDirect {
				c.Tenants = tenantsv1direct.NewTenantServiceClient(&r.handlers.tenants, chain, c.Tenants)
			}
		case Catalog:
			c.Catalog = catalogv1connect.NewCatalogServiceClient(hc, base, opts)
			if useDirect {
				c.Catalog = catalogv1direct.NewCatalogServiceClient(&r.handlers.catalog, chain)
			}
		case Pricing:
			c.Pricing = pricingv1connect.NewPricingServiceClient(hc, base, opts)
			if useDirect {
				c.Pricing = pricingv1direct.NewPricingServiceClient(&r.handlers.pricing, chain)
			}
		case Checkout:
			c.Checkout = checkoutv1connect.NewCheckoutServiceClient(hc, base, opts)
			if useDirect {
				c.Checkout = checkoutv1direct.NewCheckoutServiceClient(&r.handlers.checkout, chain)
			}
		case Payments:
			c.Payments = paymentsv1connect.NewPaymentsServiceClient(hc, base, opts)
			if useDirect {
				c.Payments = paymentsv1direct.NewPaymentsServiceClient(&r.handlers.payments, chain)
			}
		case Orders:
			c.Orders = ordersv1connect.NewOrdersServiceClient(hc, base, opts)
			if useDirect {
				c.Orders = ordersv1direct.NewOrdersServiceClient(&r.handlers.orders, chain)
			}
		case Edge:
			c.Edge = edgev1connect.NewEdgeServiceClient(hc, base, opts)
			if useDirect {
				c.Edge = edgev1direct.NewEdgeServiceClient(&r.handlers.edge, chain)
			}
		}
	}
	return c, nil
}

// handlers are the co-hosted services, for direct clients; each is set
// once its service is built.
type handlers struct {
	tenants  direct.Slot[tenantsv1connect.TenantServiceHandler]
	catalog  direct.Slot[catalogv1connect.CatalogServiceHandler]
	pricing  direct.Slot[pricingv1connect.PricingServiceHandler]
	checkout direct.Slot[checkoutv1connect.CheckoutServiceHandler]
	payments direct.Slot[paymentsv1connect.PaymentsServiceHandler]
	orders   direct.Slot[ordersv1connect.OrdersServiceHandler]
	edge     direct.Slot[edgev1connect.EdgeServiceHandler]
}

// edgePolicy: the edge's internal procedures are for services only.
func edgePolicy(string) svcauth.Access { return svcauth.Internal }

// policies is each service's access policy, as its handler enforces it.
var policies = map[string]func(string) svcauth.Access{
	Tenants: tenants.Policy, Catalog: catalog.Policy, Pricing: pricing.Policy, Checkout: checkout.Policy,
	Payments: payments.Policy, Orders: orders.Policy, Edge: edgePolicy,
}

// byHost sends requests for the operator console's host to the console
// and everything else to the edge's Host → tenant routing, so the console
// host never resolves to a tenant and merchant hosts never reach the
// console.
func byHost(host string, console, rest http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hostname.Normalize(r.Host) == host {
			console.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}

// FlushUsage sends the edge's request counts to the tenant service now
// (tests; the edge flushes every 10 s and on shutdown by itself).
func (r *Running) FlushUsage(ctx context.Context) error {
	if r.edge == nil {
		return nil
	}
	return r.edge.FlushUsage(ctx)
}

// csrfKey derives the hosted pages' CSRF key from the internal token, so
// every edge process of a deployment agrees on it.
func csrfKey(internalToken string) []byte {
	m := hmac.New(sha256.New, []byte(internalToken))
	m.Write([]byte("bcp/web/csrf"))
	return m.Sum(nil)
}

func (r *Running) goRun(fn func()) {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); fn() }()
}

func (r *Running) listen(ctx context.Context, addr string, h http.Handler, idle time.Duration, log *slog.Logger) (string, error) {
	return r.listenTLS(ctx, addr, nil, h, idle, log)
}

// listenTLS is listen over TLS (tlsCfg nil: plain HTTP).
func (r *Running) listenTLS(ctx context.Context, addr string, tlsCfg *tls.Config, h http.Handler, idle time.Duration, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	r.srvs = append(r.srvs, srv)
	r.goRun(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.errc <- err
		}
	})
	return ln.Addr().String(), nil
}

// bodyDeadline gives each request's body d to arrive, through a read
// deadline on the connection that is lifted once the body is read. Not
// http.Server.ReadTimeout: that deadline stays on the connection while
// the handler runs, and net/http cancels the request's context when its
// background read hits it, so a call slower than the limit (a card charge
// waiting on the PSP) would be cut off after its body had long arrived.
//
// A body that missed its deadline leaves the connection closed once the
// answer is written (Connection: close): net/http does so itself when it
// finds the request's own body unfinished, so the body is wrapped in a
// copy of the request and the server's keeps its original. Wrapping it in
// place hid the timeout from net/http, which then kept the connection
// for its idle timeout after the 400 (issue 32: 30 s + 120 s).
func bodyDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body != nil && req.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				req = req.WithContext(req.Context()) // a shallow copy
				req.Body = &deadlineBody{ReadCloser: req.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, req)
	})
}

// deadlineBody lifts the connection's read deadline at the end of the
// body. If the handler never reads to the end, the deadline stays and
// also bounds net/http's discarding of the rest.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// Err reports a listener that failed after start.
func (r *Running) Err() <-chan error { return r.errc }

// Stop drains the listeners (up to 10 s), stops background work and closes
// the database pool.
func (r *Running) Stop() {
	// Background work first: it ends the long-lived change streams, which
	// would otherwise hold the graceful shutdown open.
	r.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range r.srvs {
		_ = s.Shutdown(sctx)
	}
	r.wg.Wait()
	// Requests the drain let finish were counted after the edge's own
	// final flush: send them too, while the tenant service is still up.
	if r.edge != nil {
		fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = r.edge.FlushUsage(fctx)
		fcancel()
	}
	if r.jobs != nil {
		jctx, jcancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = r.jobs.Stop(jctx)
		jcancel()
	}
	if r.PSPSim != nil {
		r.PSPSim.Stop()
	}
	r.holder.Close()
	if r.Pool != nil {
		r.Pool.Close()
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = r.tracer.Shutdown(tctx) // the spans not exported yet
	tcancel()
}

// FlushTraces exports the spans this process has ended so far (tests).
func (r *Running) FlushTraces(ctx context.Context) error { return r.tracer.ForceFlush(ctx) }

// webhookOrigin is the origin PSPs post a merchant's webhooks to: its
// host, over https, on the webhook listener's port (nil: the merchant
// origin as it is, behind a TLS-terminating proxy).
func webhookOrigin(merchantOrigin string, port *string) string {
	if port == nil {
		return merchantOrigin
	}
	u, err := url.Parse(merchantOrigin)
	if err != nil || u.Host == "" {
		return merchantOrigin
	}
	if *port == "443" {
		return "https://" + u.Hostname()
	}
	return "https://" + net.JoinHostPort(u.Hostname(), *port)
}
