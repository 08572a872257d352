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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/pgserver"
	"github.com/bcpdev/bcp/internal/platform"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/services/edge"
)

const (
	benchOperatorToken = "bench-operator-token"
	benchInternalToken = "bench-internal-token"
)

// env is the system under test: a private PostgreSQL, a `bcpd all`
// platform in process on loopback, the seeded merchants and the agent
// profile server.
type env struct {
	pg  *pgserver.Server
	tmp string
	r   *platform.Running // nil with --target
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
	merchants  []*merchant
	key        crypto.Signer // agent signing key (signature mode)
}

type merchant struct {
	host     string
	tenantID uuid.UUID
	pix      string // Pix handler id
	pacRate  string // shipping rate id
	apiKey   string
}

func (e *env) stop() {
	if e.r != nil {
		e.r.Stop()
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

// startEnv starts PostgreSQL (fsync off: we measure the platform, not the
// disk; see docs/performance.md), migrates, starts every service and
// seeds `tenants` merchants through the operator APIs.
func startEnv(ctx context.Context, tenants int, statements bool, logf func(string, ...any)) (*env, error) {
	e := &env{}
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
	e.pg, err = pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(tmp, "pgdata"), NoFsync: true})
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	if statements {
		if err := e.enableStatements(ctx); err != nil {
			return nil, fmt.Errorf("pg_stat_statements: %w", err)
		}
	}
	urls, err := db.Bootstrap(ctx, e.pg.URL("postgres"), "bcpbench")
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	if statements {
		if err := e.openStats(ctx, "bcpbench"); err != nil {
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
	e.r, err = platform.Start(ctx, platform.Config{
		Services: platform.AllServices, DatabaseURL: urls.App, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: benchInternalToken, OperatorToken: benchOperatorToken, MasterKey: []byte("0123456789abcdef0123456789abcdef"),
		Edge: edge.Config{PublicScheme: "http"}, Logger: quiet,
	})
	if err != nil {
		return nil, fmt.Errorf("start platform: %w", err)
	}
	e.publicAddr, e.ops, e.tenants, e.pool = e.r.PublicAddr, e.r.ClientsWithToken(benchOperatorToken), e.r.Clients.Tenants, e.r.Pool
	logf("platform: public %s, internal %s; seeding %d merchants", e.r.PublicAddr, e.r.InternalAddr, tenants)
	if err := e.seed(ctx, tenants); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
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
	doc := agentProfileJSON(string(jwk))
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
	e.ops = remoteClients(internal, operatorToken)
	if internalToken != "" {
		e.tenants = remoteClients(internal, internalToken).Tenants
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e.hostSuffix = "-" + hex.EncodeToString(b[:])
	if err := e.serveProfile(profileAddr); err != nil {
		return nil, err
	}
	logf("target: public %s, internal %s; seeding %d merchants (hosts loja####%s.bench.localhost)", public, internal, tenants, e.hostSuffix)
	if err := e.seed(ctx, tenants); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func remoteClients(base, token string) *platform.Clients {
	opts := connect.WithInterceptors(svcauth.Client(token))
	hc := &http.Client{Timeout: 30 * time.Second}
	return &platform.Clients{
		Tenants:  tenantsv1connect.NewTenantServiceClient(hc, base, opts),
		Catalog:  catalogv1connect.NewCatalogServiceClient(hc, base, opts),
		Pricing:  pricingv1connect.NewPricingServiceClient(hc, base, opts),
		Payments: paymentsv1connect.NewPaymentsServiceClient(hc, base, opts),
	}
}

func agentProfileJSON(jwk string) string {
	cap := func(name, extends string) string {
		s := fmt.Sprintf(`"br.dev.bcp.shopping.%s":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/%s","schema":"https://bcp.dev.br/draft/schemas/shopping/%s.json"`, name, name, name)
		if extends != "" {
			s += `,"extends":"` + extends + `"`
		}
		return s + `}]`
	}
	return `{"ucp":{"version":"2026-07-28",
	"services":{"br.dev.bcp.shopping":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/overview","transport":"mcp","schema":"https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
	"capabilities":{` + strings.Join([]string{cap("checkout", ""), cap("fulfillment", "br.dev.bcp.shopping.checkout"), cap("discount", "br.dev.bcp.shopping.checkout")}, ",") + `},
	"payment_handlers":{"br.dev.bcp.pix":[{"id":"agent_pix","version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/pix","schema":"https://bcp.dev.br/draft/schemas/handlers/pix.json"}],
	"com.example.vendor.delegate_payment":[{"id":"agent_card","version":"2026-07-28","spec":"https://example.vendor.com/specs/delegate-payment","schema":"https://example.vendor.com/schemas/delegate-payment-config.json"}]}},
	"signing_keys":[` + jwk + `]}`
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
	e.merchants = append(e.merchants, make([]*merchant, n-from)...)
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
			m, err := seedOne(ctx, ops, fmt.Sprintf("loja%04d%s.bench.localhost", i, e.hostSuffix), e.profile)
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

func seedOne(ctx context.Context, ops *platform.Clients, host, profile string) (*merchant, error) {
	tr, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja " + host, Domains: []string{host}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		return nil, err
	}
	slug := tr.Msg.GetTenant().GetSlug()
	m := &merchant{host: host, tenantID: uuid.MustParse(tr.Msg.GetTenant().GetId()), pix: "pix_" + slug}
	tid := m.tenantID.String()
	if _, err := ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid,
		Handler: &tenantsv1.PaymentHandler{Id: m.pix, Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}})); err != nil {
		return nil, err
	}
	if _, err := ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid,
		Handler: &tenantsv1.PaymentHandler{Id: "card", Name: "com.example.vendor.delegate_payment", Position: 1,
			AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`}})); err != nil {
		return nil, err
	}
	if _, err := ops.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tid, Settings: &tenantsv1.Settings{
		Links: []*tenantsv1.Link{{Type: "privacy_policy", Url: "https://" + host + "/privacidade"}, {Type: "terms_of_service", Url: "https://" + host + "/termos"}},
	}})); err != nil {
		return nil, err
	}
	tctx := tenancy.With(ctx, m.tenantID)
	if _, err := ops.Catalog.CreateProduct(tctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Id: "prd_cam", Title: "Camiseta", Active: true,
		Variants: []*catalogv1.Variant{{Id: "var_cam", Sku: "CAM", Title: "Camiseta M", Price: 5990, Stock: 100_000_000, Active: true}},
	}})); err != nil {
		return nil, err
	}
	for _, rate := range []*pricingv1.ShippingRate{
		{Title: "SEDEX", Price: 3000, MinDays: 1, MaxDays: 3, Active: true, Carrier: "Correios"},
		{Title: "PAC", Price: 1500, MinDays: 5, MaxDays: 9, Active: true, Carrier: "Correios"},
	} {
		resp, err := ops.Pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rate}))
		if err != nil {
			return nil, err
		}
		if rate.GetTitle() == "PAC" {
			m.pacRate = resp.Msg.GetRate().GetId()
		}
	}
	if _, err := ops.Pricing.SetDiscount(tctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "BEMVINDO10", Title: "10% de boas-vindas", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, Active: true, Combinable: true, Priority: 1,
	}})); err != nil {
		return nil, err
	}
	key, err := ops.Tenants.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: host, AgentProfileUrl: profile, Label: "bcpbench"}))
	if err != nil {
		return nil, err
	}
	m.apiKey = key.Msg.GetSecret()
	return m, nil
}
