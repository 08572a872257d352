// Command bcpd runs the BCP hosted checkout platform.
//
//	bcpd all        every service, the edge and workers in one process
//	bcpd <service>  one of edge|tenants|catalog|pricing|checkout|payments|orders
//	bcpd pspsim     the PSP simulator sandbox handlers pay through
//	bcpd dev        private PostgreSQL + migrations + demo merchant + all + pspsim
//	                (--pspsim-url: a simulator elsewhere, none in process)
//	bcpd migrate up|status
//	bcpd demo       the demo merchant, seeded through services elsewhere (make ha)
//
// Every flag has an environment variable (shown in -h).
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/gctune"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/obs"
	"github.com/bcpdev/bcp/internal/pgserver"
	"github.com/bcpdev/bcp/internal/sealer"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/devenv"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

func main() {
	gctune.Apply()
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bcpd:", err)
		if errors.Is(err, pgserver.ErrBinariesMissing) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

const usage = `usage: bcpd <role> [flags]

roles:
  all                      every service, the edge and workers in one process
  edge|tenants|catalog|pricing|checkout|payments|orders
                           one service per process (set --<service>-url for the others)
  pspsim                   the PSP simulator: an API Pix (OAuth2 + mTLS) and a Stripe-compatible
                           card API that sandbox handlers pay through (payments: --pspsim-url)
  dev                      private PostgreSQL, migrations, demo merchant, then all and pspsim
                           (with --pspsim-url: all, paying at a simulator hosted elsewhere)
  migrate up|status        apply or show database migrations
  demo                     seed the demo merchant through the services at --<service>-url and
                           serve the demo agent's profile on --internal-addr (make ha)
`

type flags struct {
	fs                                      *flag.FlagSet
	databaseURL, ownerURL                   *string
	publicAddr, internalAddr                *string
	internalToken, operatorToken            *string
	operatorHost                            *string
	masterKeyFile, publicScheme, publicPort *string
	dataDir, logLevel                       *string
	serviceURLs                             map[string]*string
	allowPrivileged                         *bool
	noDemoHistory                           *bool
	sweepEvery                              *string
	bodyTimeout, idleTimeout                *string
	sigWindow, sigSkew                      *string
	requestTimeout                          *string
	devPKIDir                               *string
	simPixAddr, simControlAddr, simFaults   *string
	simToken                                *string
	webhookAddr, webhookCert, webhookKey    *string
	webhookPort, webhookCertHeader          *string
	otlpEndpoint, traceSampleRatio          *string
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// envBool is a boolean environment variable: set to anything but "", 0
// or false.
func envBool(name string) bool {
	v := strings.ToLower(os.Getenv(name))
	return v != "" && v != "0" && v != "false"
}

func newFlags(role string) *flags {
	fs := flag.NewFlagSet("bcpd "+role, flag.ContinueOnError)
	f := &flags{fs: fs, serviceURLs: map[string]*string{}}
	f.databaseURL = fs.String("database-url", env("BCP_DATABASE_URL", ""), "PostgreSQL URL for the application role [BCP_DATABASE_URL]")
	f.ownerURL = fs.String("owner-database-url", env("BCP_OWNER_DATABASE_URL", ""), "PostgreSQL URL for migrations (schema owner); defaults to --database-url [BCP_OWNER_DATABASE_URL]")
	f.publicAddr = fs.String("public-addr", env("BCP_PUBLIC_ADDR", "127.0.0.1:8080"), "listen address for agents and browsers [BCP_PUBLIC_ADDR]")
	f.internalAddr = fs.String("internal-addr", env("BCP_INTERNAL_ADDR", "127.0.0.1:9090"), "listen address for connect services, /metrics, /healthz, /readyz [BCP_INTERNAL_ADDR]")
	f.internalToken = fs.String("internal-token", env("BCP_INTERNAL_TOKEN", ""), "token services use to call each other [BCP_INTERNAL_TOKEN]")
	f.operatorToken = fs.String("operator-token", env("BCP_OPERATOR_TOKEN", ""), "token bcpctl uses for the operator API [BCP_OPERATOR_TOKEN]")
	f.operatorHost = fs.String("operator-host", env("BCP_OPERATOR_HOST", ""), "host name serving the operator console on the public listener, e.g. operador.example.com (dev: operador.localhost; empty: no console) [BCP_OPERATOR_HOST]")
	f.masterKeyFile = fs.String("master-key-file", env("BCP_MASTER_KEY_FILE", ""), "file with the base64 32-byte master key sealing secrets at rest (or BCP_MASTER_KEY) [BCP_MASTER_KEY_FILE]")
	f.publicScheme = fs.String("public-scheme", env("BCP_PUBLIC_SCHEME", "https"), "scheme of the URLs advertised to agents [BCP_PUBLIC_SCHEME]")
	f.publicPort = fs.String("public-port", env("BCP_PUBLIC_PORT", ""), "port of the URLs advertised to agents, when not the default [BCP_PUBLIC_PORT]")
	f.dataDir = fs.String("data-dir", env("BCP_DATA_DIR", ".bcp"), "dev: directory for the private PostgreSQL and dev secrets [BCP_DATA_DIR]")
	f.logLevel = fs.String("log-level", env("BCP_LOG_LEVEL", "info"), "debug|info|warn|error [BCP_LOG_LEVEL]")
	f.sweepEvery = fs.String("sweep-every", env("BCP_SWEEP_EVERY", jobs.SweepEvery.String()), "how often the sweeps run: expired checkouts closed, completions nothing settled settled, unanswered card charges resolved; e.g. 15s [BCP_SWEEP_EVERY]")
	f.bodyTimeout = fs.String("body-timeout", env("BCP_BODY_TIMEOUT", platform.DefaultBodyTimeout.String()), "public listener: how long a request body may take to arrive [BCP_BODY_TIMEOUT]")
	f.idleTimeout = fs.String("idle-timeout", env("BCP_IDLE_TIMEOUT", platform.DefaultIdleTimeout.String()), "public listener: how long a keep-alive connection may wait for its next request [BCP_IDLE_TIMEOUT]")
	f.sigWindow = fs.String("signature-window", env("BCP_SIGNATURE_WINDOW", agentauth.DefaultSignatureWindow.String()), "edge: an agent signature whose created is older than this (plus the clock skew) is refused as a replay (RFC 9421 §3.2.1); nonces are remembered as long [BCP_SIGNATURE_WINDOW]")
	f.sigSkew = fs.String("signature-clock-skew", env("BCP_SIGNATURE_CLOCK_SKEW", agentauth.DefaultClockSkew.String()), "edge: clock difference tolerated on an agent signature's created and expires; 0s: none [BCP_SIGNATURE_CLOCK_SKEW]")
	f.requestTimeout = fs.String("request-timeout", env("BCP_REQUEST_TIMEOUT", edge.DefaultRequestTimeout.String()), "edge: the request deadline of the agents' API (MCP, REST); a request still waiting then (for a service, the database during a failover, a repeat of an idempotency key in flight) is answered 503 with Retry-After; keep it below the agents' patience [BCP_REQUEST_TIMEOUT]")
	f.noDemoHistory = fs.Bool("no-demo-history", envBool("BCP_NO_DEMO_HISTORY"), "dev: do not buy the demo merchant's first-day history when seeding it [BCP_NO_DEMO_HISTORY]")
	f.otlpEndpoint = fs.String("otlp-endpoint", env("BCP_OTLP_ENDPOINT", ""), "OpenTelemetry collector (OTLP over HTTP) to send traces to, e.g. http://otel-collector:4318 (empty: "+tracing.EnvEndpoint+", else no tracing) [BCP_OTLP_ENDPOINT]")
	f.traceSampleRatio = fs.String("trace-sample-ratio", env("BCP_TRACE_SAMPLE_RATIO", ""), "share of purchases traced, in (0, 1], decided where a trace starts, e.g. 0.01 (empty: "+tracing.EnvSamplerArg+", else 1) [BCP_TRACE_SAMPLE_RATIO]")
	f.allowPrivileged = fs.Bool("insecure-allow-privileged-db-role", false, "allow a superuser/BYPASSRLS database role (disables tenant isolation)")
	for _, s := range platform.AllServices {
		f.serviceURLs[s] = fs.String(s+"-url", env("BCP_"+strings.ToUpper(s)+"_URL", ""), "base URL of the "+s+" service when hosted elsewhere [BCP_"+strings.ToUpper(s)+"_URL]")
	}
	f.serviceURLs[platform.PSPSim] = fs.String("pspsim-url", env("BCP_PSPSIM_URL", ""), "payments: the PSP simulator's control URL (https://host:port) for sandbox handlers without settings of their own; needs --dev-pki-dir; dev: a simulator hosted elsewhere (bcpbench pspsim), dev then hosts none [BCP_PSPSIM_URL]")
	f.devPKIDir = fs.String("dev-pki-dir", env("BCP_DEV_PKI_DIR", ""), "development PKI: the CA of the simulator's and the webhook listener's certificates and the simulator's own CA, created there on first use (dev: <data-dir>/pki) [BCP_DEV_PKI_DIR]")
	f.simPixAddr = fs.String("pspsim-pix-addr", env("BCP_PSPSIM_PIX_ADDR", "127.0.0.1:9443"), "pspsim: the API Pix listener (mTLS) [BCP_PSPSIM_PIX_ADDR]")
	f.simControlAddr = fs.String("pspsim-control-addr", env("BCP_PSPSIM_CONTROL_ADDR", "127.0.0.1:9444"), "pspsim: the control and card API listener [BCP_PSPSIM_CONTROL_ADDR]")
	f.simToken = fs.String("pspsim-token", env("BCP_PSPSIM_TOKEN", ""), "the PSP simulator's control API token (pspsim, and payments with --pspsim-url; empty: the internal token; dev: <data-dir>/pspsim-token) [BCP_PSPSIM_TOKEN]")
	f.simFaults = fs.String("pspsim-faults", env("BCP_PSPSIM_FAULTS", ""), "pspsim: faults to inject, e.g. error5xx=0.05,reset_after_write=0.05,drop_webhook=0.1 [BCP_PSPSIM_FAULTS]")
	f.webhookAddr = fs.String("webhook-addr", env("BCP_WEBHOOK_ADDR", ""), "edge: TLS listener for PSP webhooks, asking for the PSP's client certificate (empty: none; webhooks then come through a proxy, see --webhook-client-cert-header) [BCP_WEBHOOK_ADDR]")
	f.webhookCert = fs.String("webhook-tls-cert", env("BCP_WEBHOOK_TLS_CERT", ""), "edge: PEM certificate of the webhook listener (empty: issued by --dev-pki-dir) [BCP_WEBHOOK_TLS_CERT]")
	f.webhookKey = fs.String("webhook-tls-key", env("BCP_WEBHOOK_TLS_KEY", ""), "edge: PEM key of --webhook-tls-cert [BCP_WEBHOOK_TLS_KEY]")
	f.webhookPort = fs.String("webhook-port", env("BCP_WEBHOOK_PORT", ""), "payments: the port PSPs post webhooks to on merchant hosts, when the webhook listener is another process's [BCP_WEBHOOK_PORT]")
	f.webhookCertHeader = fs.String("webhook-client-cert-header", env("BCP_WEBHOOK_CLIENT_CERT_HEADER", ""), "edge: header in which a trusted TLS-terminating proxy forwards the PSP's client certificate (URL-escaped PEM, e.g. nginx $ssl_client_escaped_cert) [BCP_WEBHOOK_CLIENT_CERT_HEADER]")
	return f
}

func (f *flags) logger() *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(*f.logLevel))
	return obs.NewLogger(os.Stderr, lvl)
}

func run(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, usage)
		if len(args) == 0 {
			return errors.New("missing role")
		}
		return nil
	}
	role, rest := args[0], args[1:]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch role {
	case "migrate":
		return runMigrate(ctx, rest)
	case "dev":
		return runDev(ctx, rest)
	case "demo":
		return runDemo(ctx, rest)
	case "all":
		return runServices(ctx, platform.AllServices, rest)
	case platform.PSPSim:
		return runServices(ctx, []string{platform.PSPSim}, rest)
	}
	for _, s := range platform.AllServices {
		if role == s {
			return runServices(ctx, []string{s}, rest)
		}
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown role %q", role)
}

func runServices(ctx context.Context, services []string, args []string) error {
	f := newFlags(strings.Join(services, ","))
	if err := f.fs.Parse(args); err != nil {
		return helpIsNoError(err)
	}
	sweepEvery, err := time.ParseDuration(*f.sweepEvery)
	if err != nil || sweepEvery <= 0 {
		return fmt.Errorf("--sweep-every (BCP_SWEEP_EVERY) %q: want a positive duration such as 15s", *f.sweepEvery)
	}
	bodyTimeout, err := positiveDuration("--body-timeout (BCP_BODY_TIMEOUT)", *f.bodyTimeout)
	if err != nil {
		return err
	}
	idleTimeout, err := positiveDuration("--idle-timeout (BCP_IDLE_TIMEOUT)", *f.idleTimeout)
	if err != nil {
		return err
	}
	sigWindow, err := positiveDuration("--signature-window (BCP_SIGNATURE_WINDOW)", *f.sigWindow)
	if err != nil {
		return err
	}
	sigSkew, err := time.ParseDuration(*f.sigSkew)
	if err != nil || sigSkew < 0 {
		return fmt.Errorf("--signature-clock-skew (BCP_SIGNATURE_CLOCK_SKEW) %q: want a duration such as 30s (0s: none)", *f.sigSkew)
	}
	if sigSkew == 0 {
		sigSkew = -1 // edge.Config: negative is none, 0 the default
	}
	requestTimeout, err := positiveDuration("--request-timeout (BCP_REQUEST_TIMEOUT)", *f.requestTimeout)
	if err != nil {
		return err
	}
	tcfg, err := f.tracing()
	if err != nil {
		return err
	}
	log := f.logger()
	tracing.LogErrors(log)
	cfg := platform.Config{
		Services: services, DatabaseURL: *f.databaseURL, PublicAddr: *f.publicAddr, InternalAddr: *f.internalAddr,
		InternalToken: *f.internalToken, OperatorToken: *f.operatorToken, OperatorHost: *f.operatorHost, ServiceURLs: map[string]string{},
		Edge: edge.Config{PublicScheme: *f.publicScheme, PublicPort: *f.publicPort, SignatureWindow: sigWindow, SignatureClockSkew: sigSkew,
			RequestTimeout: requestTimeout}, Logger: log,
		AllowPrivileged: *f.allowPrivileged, SweepEvery: sweepEvery, BodyTimeout: bodyTimeout, IdleTimeout: idleTimeout,
		DevPKIDir: *f.devPKIDir, PSPSimPixAddr: *f.simPixAddr, PSPSimControlAddr: *f.simControlAddr, PSPSimFaults: *f.simFaults, PSPSimToken: *f.simToken,
		WebhookAddr: *f.webhookAddr, WebhookPort: *f.webhookPort, WebhookClientCertHeader: *f.webhookCertHeader,
		Tracing: tcfg,
	}
	for s, u := range f.serviceURLs {
		cfg.ServiceURLs[s] = *u
	}
	if *f.webhookCert != "" || *f.webhookKey != "" {
		cert, err := tls.LoadX509KeyPair(*f.webhookCert, *f.webhookKey)
		if err != nil {
			return fmt.Errorf("--webhook-tls-cert/--webhook-tls-key: %w", err)
		}
		cfg.WebhookCert = &cert
	}
	// The tenants and payments services seal secrets under the master key.
	if slices.Contains(services, platform.Tenants) || slices.Contains(services, platform.Payments) {
		key, err := loadMasterKey(*f.masterKeyFile)
		if err != nil {
			return err
		}
		cfg.MasterKey = key
	}
	r, err := platform.Start(ctx, cfg)
	if err != nil {
		return err
	}
	log.Info("bcpd started", "services", services, "public_addr", r.PublicAddr, "internal_addr", r.InternalAddr)
	select {
	case <-ctx.Done():
	case err = <-r.Err():
	}
	log.Info("bcpd stopping")
	r.Stop()
	return err
}

// tracing is the tracing configuration of the flags (the OTEL_*
// environment fills in what they leave empty).
func (f *flags) tracing() (tracing.Config, error) {
	cfg := tracing.Config{Endpoint: *f.otlpEndpoint}
	if v := *f.traceSampleRatio; v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 1 {
			return cfg, fmt.Errorf("--trace-sample-ratio (BCP_TRACE_SAMPLE_RATIO) %q: want a number in (0, 1], such as 0.01", v)
		}
		cfg.SampleRatio = r
	}
	if _, err := cfg.Ratio(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func positiveDuration(what, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive duration such as 30s", what, v)
	}
	return d, nil
}

func loadMasterKey(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("master key file: %w", err)
		}
		return sealer.ParseKey(string(b))
	}
	if v := os.Getenv("BCP_MASTER_KEY"); v != "" {
		return sealer.ParseKey(v)
	}
	return nil, errors.New("the tenants and payments services need the master key (--master-key-file or BCP_MASTER_KEY)")
}

func runDev(ctx context.Context, args []string) error {
	f := newFlags("dev")
	if err := f.fs.Parse(args); err != nil {
		return helpIsNoError(err)
	}
	e, err := devenv.Start(ctx, devenv.Options{
		DataDir: *f.dataDir, DatabaseURL: *f.databaseURL, OwnerURL: *f.ownerURL,
		PublicAddr: *f.publicAddr, InternalAddr: *f.internalAddr, OperatorHost: *f.operatorHost, Logger: f.logger(), Out: os.Stdout,
		NoDemoHistory: *f.noDemoHistory, PSPSimPixAddr: *f.simPixAddr, PSPSimControlAddr: *f.simControlAddr, PSPSimFaults: *f.simFaults,
		WebhookAddr: cmp.Or(*f.webhookAddr, "127.0.0.1:8443"),
		PSPSimURL:   *f.serviceURLs[platform.PSPSim], PSPSimToken: *f.simToken, DevPKIDir: *f.devPKIDir,
	})
	if err != nil {
		return err
	}
	// A private PostgreSQL that exits is started again (devenv), and the
	// platform reconnects: only Ctrl-C or a listener failing stops it.
	select {
	case <-ctx.Done():
		fmt.Println("\nstopping ...")
	case err = <-e.Platform.Err():
	}
	e.Stop()
	if err == nil {
		fmt.Println("stopped; PostgreSQL shut down cleanly")
	}
	return err
}

// runDemo is `bcpd demo`: the demo merchant of a formation whose services
// run one per process (scripts/ha.sh), and its agent's profile.
func runDemo(ctx context.Context, args []string) error {
	f := newFlags("demo")
	if err := f.fs.Parse(args); err != nil {
		return helpIsNoError(err)
	}
	urls := map[string]string{}
	for s, u := range f.serviceURLs {
		urls[s] = *u
	}
	r, err := devenv.StartDemo(ctx, devenv.DemoOptions{
		DataDir: *f.dataDir, InternalAddr: *f.internalAddr, ServiceURLs: urls,
		InternalToken: *f.internalToken, OperatorToken: *f.operatorToken,
		PublicScheme: *f.publicScheme, PublicPort: *f.publicPort, NoDemoHistory: *f.noDemoHistory,
		Logger: f.logger(), Out: os.Stdout,
	})
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err = <-r.Err():
	}
	r.Stop()
	return err
}

// helpIsNoError: -h/--help printed the flags (flag.ContinueOnError does)
// and is a successful run, needing no token, key or database.
func helpIsNoError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

const migrateUsage = "usage: bcpd migrate up|status [--owner-database-url URL]"

func runMigrate(ctx context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(os.Stderr, migrateUsage)
		newFlags("migrate").fs.PrintDefaults()
		return nil
	}
	if len(args) == 0 || (args[0] != "up" && args[0] != "status") {
		return errors.New(migrateUsage)
	}
	f := newFlags("migrate")
	if err := f.fs.Parse(args[1:]); err != nil {
		return helpIsNoError(err)
	}
	url := *f.ownerURL
	if url == "" {
		url = *f.databaseURL
	}
	if url == "" {
		return errors.New("set --owner-database-url (or --database-url / BCP_DATABASE_URL)")
	}
	if args[0] == "up" {
		n, err := db.MigrateUp(ctx, url, f.logger())
		if err != nil {
			return err
		}
		fmt.Printf("applied %d migration(s)\n", n)
		return nil
	}
	p, closeFn, err := db.Provider(url, nil)
	if err != nil {
		return err
	}
	defer func() { _ = closeFn() }()
	st, err := p.Status(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tFILE")
	for _, s := range st {
		at := "-"
		if !s.AppliedAt.IsZero() {
			at = s.AppliedAt.Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Source.Version, s.State, at, s.Source.Path)
	}
	return tw.Flush()
}
