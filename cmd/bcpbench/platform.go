package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/pgserver"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/loadkit"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/services/edge"
)

// benchDB is the application database's name in the private PostgreSQL.
const benchDB = "bcpbench"

const (
	benchOperatorToken = "bench-operator-token"
	benchInternalToken = "bench-internal-token"
)

// env is the system under test: a private PostgreSQL, a `bcpd all`
// platform in process on loopback, the PSP simulator its sandbox handlers
// pay through, the seeded merchants and the agent profile server.
type env struct {
	pg  *pgserver.Server
	tmp string
	// With --target: the target's processes and its cluster's data
	// directory, whose CPU the figures count (cpu.go).
	targetPIDs []string
	pgdata     string
	r          *platform.Running // nil with --target
	// sim hosts the PSP simulator (the pspsim role) beside r, on simPG,
	// a cluster of its own: see startSimulator. nil when the workload
	// buys nothing, and with --target (the target's bcpd dev pays at its
	// own: a `bcpbench pspsim` process, or an older bcpd's in process).
	sim   *platform.Running
	simPG *pgserver.Server
	// publicAddr is the edge's host:port; ops are operator clients (seeding,
	// SimulatePixPayment); tenants is a client with the internal token
	// (the baseline's agent authentication); pool is nil with --target.
	publicAddr string
	ops        *platform.Clients
	tenants    tenantsv1connect.TenantServiceClient
	pool       *pgxpool.Pool
	stats      *pgx.Conn // superuser, pg_stat_statements (nil when off or with --target)
	hostSuffix string    // makes the seeded hosts unique on a shared platform
	profile    string    // agent profile URL
	profSrv    *http.Server
	merchants  []*loadkit.Merchant
	key        crypto.Signer // agent signing key (signature mode)
	// urls are the bench database's role URLs (none with --target);
	// catalogAgent: the agent profile also speaks catalog search.
	urls         db.URLs
	catalogAgent bool
}

// envOptions say what startEnv seeds and measures.
type envOptions struct {
	tenants int
	// statements: pg_stat_statements loaded (a restart of the fresh
	// cluster).
	statements bool
	// catalogAgent: the agent's profile speaks catalog search and lookup
	// too (bcpbench search).
	catalogAgent bool
	// pays: the workload completes checkouts, so the PSP simulator runs
	// beside the platform (startSimulator); the scale and search benches
	// buy nothing and go without it.
	pays bool
}

func (e *env) stop() {
	if e.r != nil {
		e.r.Stop()
	}
	if e.sim != nil {
		e.sim.Stop()
	}
	if e.simPG != nil {
		_ = e.simPG.Stop()
	}
	if e.stats != nil {
		_ = e.stats.Close(context.Background())
	}
	if e.profSrv != nil {
		_ = e.profSrv.Close()
	}
	if e.pg != nil {
		_ = e.pg.Stop()
	}
	if e.tmp != "" {
		_ = os.RemoveAll(e.tmp)
	}
}

// startEnv starts PostgreSQL as production runs it (fsync, full-page
// writes and synchronous commit on: a figure bought with durability does
// not count; --no-fsync keeps the earlier mode for comparison), migrates,
// starts the PSP simulator (startSimulator: when the workload pays) and
// every service, and seeds `tenants` merchants through the operator APIs.
func startEnv(ctx context.Context, opts envOptions, logf func(string, ...any)) (*env, error) {
	tenants, statements := opts.tenants, opts.statements
	e := &env{catalogAgent: opts.catalogAgent}
	ok := false
	defer func() {
		if !ok {
			e.stop()
		}
	}()
	tmp, err := os.MkdirTemp("", "bcpbench-")
	if err != nil {
		return nil, err
	}
	e.tmp = tmp
	_ = os.Chmod(tmp, 0o755)
	logf("starting PostgreSQL in %s", tmp)
	e.pg, err = pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(tmp, "pgdata"), NoFsync: noFsync})
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	if statements {
		if err := e.enableStatements(ctx); err != nil {
			return nil, fmt.Errorf("pg_stat_statements: %w", err)
		}
	}
	urls, err := db.Bootstrap(ctx, e.pg.URL("postgres"), benchDB)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	e.urls = urls
	if statements {
		if err := e.openStats(ctx, benchDB); err != nil {
			return nil, fmt.Errorf("pg_stat_statements: %w", err)
		}
	}
	if _, err := db.MigrateUp(ctx, urls.Owner, nil); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}

	if err := e.serveProfile("127.0.0.1:0"); err != nil {
		return nil, err
	}

	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if os.Getenv("BCPBENCH_LOG") != "" {
		quiet = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg := platform.Config{
		Services: platform.AllServices, DatabaseURL: urls.App, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: benchInternalToken, OperatorToken: benchOperatorToken, MasterKey: []byte("0123456789abcdef0123456789abcdef"),
		Edge: edge.Config{PublicScheme: "http"}, Logger: quiet,
	}
	if opts.pays {
		if err := e.startSimulator(ctx, quiet, logf); err != nil {
			return nil, err
		}
		// Sandbox payments go to the simulator over HTTPS, and its Pix
		// webhooks come back to the edge's TLS webhook listener, as when
		// bcpd dev hosts both (both trust the process's dev PKI).
		cfg.ServiceURLs, cfg.WebhookAddr = map[string]string{platform.PSPSim: e.sim.PSPSim.ControlURL()}, "127.0.0.1:0"
	}
	e.r, err = platform.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start platform: %w", err)
	}
	e.publicAddr, e.ops, e.tenants, e.pool = e.r.PublicAddr, e.r.ClientsWithToken(benchOperatorToken), e.r.Clients.Tenants, e.r.Pool
	hooks := ""
	if e.r.WebhookAddr != "" {
		hooks = ", webhooks " + e.r.WebhookAddr
	}
	logf("platform: public %s, internal %s%s; seeding %d merchants", e.r.PublicAddr, e.r.InternalAddr, hooks, tenants)
	if err := e.seed(ctx, tenants); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

// startSimulator hosts the PSP simulator (the pspsim role of
// platform.DevServices) in this process, as an instance of its own beside
// the platform (as a `bcpd pspsim` process would be): the card and Pix
// purchases pay at it over the wire, and what the outside world costs
// stays out of the platform's figures:
//
//   - its ledgers are on a PostgreSQL cluster of its own (fsync off: its
//     durability is not measured, and its I/O should disturb the
//     platform's commits as little as it can), so the bench cluster's
//     CPU, WAL, write commits and pg_stat_statements are the platform's
//     alone;
//   - its database pool is its own, so the platform pool's acquires and
//     waits are the platform's;
//   - its goroutines (listeners, connections, webhook deliveries, which
//     inherit the labels of the goroutine that starts them) carry the CPU
//     profile label side=pspsim, as the agents' carry side=agents. The
//     process CPU figure includes them.
func (e *env) startSimulator(ctx context.Context, log *slog.Logger, logf func(string, ...any)) error {
	var err error
	e.simPG, err = pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(e.tmp, "pspsim-pgdata"), NoFsync: true})
	if err != nil {
		return fmt.Errorf("start the PSP simulator's PostgreSQL: %w", err)
	}
	urls, err := db.Bootstrap(ctx, e.simPG.URL("postgres"), "pspsim")
	if err != nil {
		return fmt.Errorf("bootstrap the PSP simulator's database: %w", err)
	}
	if _, err := db.MigrateUp(ctx, urls.Owner, nil); err != nil {
		return fmt.Errorf("migrate the PSP simulator's database: %w", err)
	}
	pprof.Do(ctx, pprof.Labels("side", "pspsim"), func(ctx context.Context) {
		e.sim, err = platform.Start(ctx, platform.Config{
			Services: []string{platform.PSPSim}, DatabaseURL: urls.App, InternalAddr: "127.0.0.1:0",
			InternalToken: benchInternalToken, Logger: log,
		})
	})
	if err != nil {
		return fmt.Errorf("start the PSP simulator: %w", err)
	}
	logf("PSP simulator: API Pix %s, control %s (its own PostgreSQL in %s)", e.sim.PSPSim.PixURL(), e.sim.PSPSim.ControlURL(), e.simPG.DataDir)
	return nil
}

// serveProfile serves the agent's profile (checkout, fulfillment,
// discount; Pix and card handlers; the signing key used in signature mode).
func (e *env) serveProfile(addr string) error {
	var err error
	e.key, err = agentclient.GenerateES256()
	if err != nil {
		return err
	}
	jwk, err := agentclient.PublicJWK(e.key, "")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	doc := loadkit.AgentProfileJSON(string(jwk), "")
	if e.catalogAgent {
		doc = loadkit.CatalogAgentProfileJSON(string(jwk))
	}
	e.profSrv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = io.WriteString(w, doc)
	})}
	go func() { _ = e.profSrv.Serve(ln) }()
	e.profile = "http://" + ln.Addr().String() + "/agent.json"
	return nil
}

// startRemoteEnv targets a running `bcpd all` (or dev): its public
// listener, and its internal listener for seeding (operator token),
// SimulatePixPayment and the baseline's API-key checks (internal token).
// Its database pool and PostgreSQL CPU are not visible from here.
func startRemoteEnv(ctx context.Context, public, internal, operatorToken, internalToken, profileAddr string, tenants int, logf func(string, ...any)) (*env, error) {
	e := &env{publicAddr: public}
	internal = strings.TrimRight(internal, "/")
	if !strings.Contains(internal, "://") {
		internal = "http://" + internal
	}
	e.ops = loadkit.RemoteClients(internal, operatorToken)
	if internalToken != "" {
		e.tenants = loadkit.RemoteClients(internal, internalToken).Tenants
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e.hostSuffix = "-" + hex.EncodeToString(b[:])
	if err := e.serveProfile(profileAddr); err != nil {
		return nil, err
	}
	logf("target: public %s, internal %s; seeding %d merchants (hosts loja####%s-bench.localhost)", public, internal, tenants, e.hostSuffix)
	if err := e.seed(ctx, tenants); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// seed onboards n development merchants, 4 at a time, each with a catalog
// (stock large enough for the run), two shipping rates, a discount code, a
// Pix and a card handler, and an API key bound to the agent profile.
func (e *env) seed(ctx context.Context, n int) error {
	return e.seedMore(ctx, n, 4, nil)
}

// seedMore adds merchants until there are n, conc at a time, calling
// progress (if any) every 500.
func (e *env) seedMore(ctx context.Context, n, conc int, progress func(done int)) error {
	ops := e.ops
	from := len(e.merchants)
	if n <= from {
		return nil
	}
	e.merchants = append(e.merchants, make([]*loadkit.Merchant, n-from)...)
	var wg sync.WaitGroup
	errs := make(chan error, n-from)
	sem := make(chan struct{}, conc)
	var done atomic.Int64
	for i := from; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// One label under localhost: the dev PKI's certificates (the
			// webhook listener's, which the PSP simulator posts to on
			// the merchant's host) name *.localhost, which matches no
			// deeper name.
			m, err := loadkit.SeedMerchant(ctx, ops, fmt.Sprintf("loja%04d%s-bench.localhost", i, e.hostSuffix), e.profile)
			if err != nil {
				errs <- fmt.Errorf("seed merchant %d: %w", i, err)
				return
			}
			e.merchants[i] = m
			if d := done.Add(1); progress != nil && d%500 == 0 {
				progress(from + int(d))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}
