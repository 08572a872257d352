package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bcpdev/bcp/internal/obs"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform/loadkit"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentauth"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// The no-op baseline: the edge's MCP stack with the services taken out.
//
// Shared with the real edge (same packages, same options):
//   - obs.Metrics middleware (request id, Prometheus RED metrics),
//   - Host → tenant routing result in the context (tenancy.With and
//     agentauth.WithTenantPolicy, as edge.ServeHTTP sets them) and a
//     ServeMux route "/bcp/mcp",
//   - agentauth.Authenticator (API key checked against the tenants
//     service with its cache, or RFC 9421 verified with the keys of the
//     agent profile from an agentprofile.Fetcher), same body limit,
//   - mcp.NewStreamableHTTPHandler with the edge's options (stateless,
//     JSON responses, 1 MiB bodies), one prebuilt *mcp.Server per tenant,
//   - a loopback http.Server.
//
// Not shared: the edge's host cache (a map here), argument validation
// against the BCP schemas, agent-profile negotiation, the checkout
// service call and the envelope splice. The tool's input schema is
// {"type":"object"}; it answers {"ok":true} as structured and text
// content.
//
// With a database (the bench's own PostgreSQL), a second tool,
// noop_durable, is the no-op plus the one thing no create_checkout can
// skip: its checkout is durable before the answer ("success means
// durable"). It inserts one small row (tenant, new UUIDv7) in an
// autocommit statement, one round trip, into a table of its own
// (floorTable) — less than any real create writes, so its throughput is
// a ceiling for create_checkout's on this machine, measured in the same
// run as the no-op.
func startBaseline(ctx context.Context, e *env, floor *pgxpool.Pool, log *slog.Logger) (addr string, stop func(), err error) {
	v, err := bcpschema.NewValidator()
	if err != nil {
		return "", nil, err
	}
	profiles, err := agentprofile.New(agentprofile.Options{Validator: v})
	if err != nil {
		return "", nil, err
	}
	keys := agentauth.KeySourceFunc(func(ctx context.Context, url string, dev, force bool) ([]json.RawMessage, error) {
		get := profiles.Get
		if force {
			get = profiles.ForceRefresh
		}
		p, err := get(ctx, url, dev)
		if err != nil {
			return nil, err
		}
		return p.SigningKeys(), nil
	})
	auth := agentauth.New(agentauth.Options{Tenants: e.tenants, Keys: keys, MaxBodyBytes: 1 << 20, Scheme: "http", Logger: log})

	servers := map[string]*mcp.Server{}
	tenantsByHost := map[string]*loadkit.Merchant{}
	for _, m := range e.merchants {
		s := mcp.NewServer(&mcp.Implementation{Name: "bcp-noop", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
		s.AddTool(&mcp.Tool{Name: "noop", Description: "Does nothing.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return okResult(), nil
			})
		if floor != nil {
			s.AddTool(&mcp.Tool{Name: "noop_durable", Description: "Stores one row, then does nothing.", InputSchema: json.RawMessage(`{"type":"object"}`)},
				durableNoop(floor))
		}
		servers[m.Host] = s
		tenantsByHost[m.Host] = m
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return servers[r.Host] },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true, MaxRequestBodyBytes: 1 << 20})
	mux := http.NewServeMux()
	mux.Handle("/bcp/mcp", auth.Handler(mcpHandler))
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, ok := tenantsByHost[r.Host]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ctx := tenancy.With(r.Context(), m.TenantID)
		ctx = agentauth.WithTenantPolicy(ctx, agentauth.TenantPolicy{Auth: agentauth.PolicyEither, Development: true})
		inner := r.WithContext(ctx)
		mux.ServeHTTP(w, inner)
		r.Pattern = inner.Pattern
	})
	metrics := obs.NewMetrics(prometheus.NewRegistry())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: metrics.Middleware("public", log, route), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// floorTable is noop_durable's table, in the bench's database only;
// floorInsert its one statement (an implicit transaction, which
// stmtDelta counts as one).
const (
	floorTable  = "bench_floor.writes"
	floorInsert = "INSERT INTO " + floorTable + " (tenant_id, id) VALUES ($1, $2)"
)

// durableNoop is noop_durable: the no-op's answer after one durable
// insert for the request's tenant (fail-closed without one).
func durableNoop(floor *pgxpool.Pool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tenant, err := tenancy.From(ctx)
		if err != nil {
			return nil, err
		}
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		if _, err := floor.Exec(ctx, floorInsert, tenant, id); err != nil {
			return nil, err
		}
		return okResult(), nil
	}
}

// okResult is both baseline tools' answer: {"ok":true} as structured and
// as text content.
func okResult() *mcp.CallToolResult {
	out := json.RawMessage(`{"ok":true}`)
	return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
}

// openFloor creates floorTable in the database at url (a superuser's) and
// returns a pool of maxConns connections for noop_durable, all dialled
// (the platform's pool is warm when its phases start; so is this one).
func openFloor(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS bench_floor;
		CREATE TABLE IF NOT EXISTS `+floorTable+` (tenant_id uuid NOT NULL, id uuid NOT NULL, PRIMARY KEY (tenant_id, id))`); err != nil {
		pool.Close()
		return nil, err
	}
	conns := make([]*pgxpool.Conn, 0, maxConns)
	for range maxConns {
		var c *pgxpool.Conn
		if c, err = pool.Acquire(ctx); err != nil {
			break
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	if err != nil {
		pool.Close() // after the releases: Close waits for them
		return nil, err
	}
	return pool, nil
}
