// Package edge is the platform's only public surface for agents: it maps
// the request Host to a merchant (tenant), serves the merchant's discovery
// profile at /.well-known/bcp and the BCP shopping service over MCP
// (/bcp/mcp) and REST (/bcp/rest), both derived from one operation table
// (operations.go) and run through one executor (executor.go). It holds no
// business rules: everything it knows it asks the services for, through
// their connect clients.
package edge

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	edgev1 "github.com/bcpdev/bcp/proto/gen/bcp/edge/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentauth"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// Config is what the edge needs to know about how it is reached.
type Config struct {
	// PublicScheme is the scheme agents use ("https" in production).
	PublicScheme string
	// PublicPort is appended to advertised URLs when not the scheme's
	// default. Empty: the port the agent used in its Host header, if any.
	PublicPort string
	// Profiles fetches agent profiles (nil: a fetcher with the defaults).
	Profiles *agentprofile.Fetcher
	// UsageFlush is how often request counts are sent to the tenant
	// service (0: 10 s).
	UsageFlush time.Duration
	// Metrics registers the edge's metrics (nil: not exported).
	Metrics prometheus.Registerer
	// SignatureWindow bounds the age of an agent signature's created
	// (0: agentauth.DefaultSignatureWindow, 5 min; negative: unbounded);
	// SignatureClockSkew is the clock difference tolerated on created and
	// expires (0: agentauth.DefaultClockSkew, 30 s; negative: none).
	SignatureWindow, SignatureClockSkew time.Duration
	// RequestTimeout is the request deadline of the agents' API (MCP and
	// REST operations): how long the edge works on one before it
	// answers (0: DefaultRequestTimeout; negative: none). Past it, whatever
	// the request still waits for (a service, the database during a
	// failover, the first request holding its idempotency key) is given
	// up and the agent is answered 503 unavailable with Retry-After
	// (-32000 on MCP); a retry with the same idempotency key replays what
	// completed. Keep it below the agents' patience, so that they get that
	// answer instead of none. (The buyers' pages and the merchant admin,
	// on the same hosts, have none: a catalog import may take longer.)
	RequestTimeout time.Duration
}

// DefaultRequestTimeout is Config.RequestTimeout's default: the failover
// target (deploy/README.md, "Database"), below the 30 s agents commonly
// wait.
const DefaultRequestTimeout = 15 * time.Second

// Clients are the services the edge fronts.
type Clients struct {
	Tenants  tenantsv1connect.TenantServiceClient
	Checkout checkoutv1connect.CheckoutServiceClient
	Orders   ordersv1connect.OrdersServiceClient
	Catalog  catalogv1connect.CatalogServiceClient
}

// Edge is the public HTTP handler and its caches.
type Edge struct {
	cfg   Config
	log   *slog.Logger
	hosts *hostCache
	data  *tenantData
	disc  *discovery
	mcp   *mcpEdge
	rest  *restEdge
	auth  *agentauth.Authenticator
	feed  *changeFeed
	usage *usageCounter
	mux   *http.ServeMux
	// limits are the per-merchant and per-agent rate limits (ratelimit.go).
	limits *rateLimiter
	// tools count and time every operation (toolmetrics.go).
	tools *toolMetrics
}

// New builds the edge over the clients of the services it fronts.
func New(cfg Config, clients Clients, log *slog.Logger) (*Edge, error) {
	tenants := clients.Tenants
	if cfg.PublicScheme == "" {
		cfg.PublicScheme = "https"
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Profiles == nil {
		v, err := bcpschema.NewValidator()
		if err != nil {
			return nil, err
		}
		if cfg.Profiles, err = agentprofile.New(agentprofile.Options{Validator: v}); err != nil {
			return nil, err
		}
	}
	e := &Edge{cfg: cfg, log: log, feed: &changeFeed{client: tenants, log: log}, usage: newUsageCounter(tenants, cfg.UsageFlush, log)}
	e.hosts = newHostCache(tenants, &e.feed.watched)
	e.data = newTenantData(tenants)
	e.disc = &discovery{data: e.data, baseURL: e.BaseURL, cache: map[string]renderedProfile{}}
	e.mcp = newMCPEdge(e, clients, cfg.Profiles, log)
	// Agents authenticate (API key or RFC 9421 signature, per merchant
	// policy) before any processing; the responses of the operations marked
	// signed (complete_checkout) are signed.
	e.auth = agentauth.New(agentauth.Options{Tenants: tenants, Keys: profileKeys{cfg.Profiles},
		MaxBodyBytes: maxMCPBody, Scheme: cfg.PublicScheme, Logger: log, Operations: AuthOperations(),
		SignatureWindow: cfg.SignatureWindow, ClockSkew: cfg.SignatureClockSkew})
	e.feed.onReset = []func(){e.hosts.reset, e.data.reset, e.disc.reset, e.mcp.reset, e.auth.Reset}
	e.feed.onEvent = []func(string){e.hosts.invalidate, e.data.invalidate, e.disc.invalidate, e.mcp.invalidate, e.auth.Invalidate}
	e.limits = newRateLimiter(tenants, cfg.Metrics, log)
	e.tools = newToolMetrics(cfg.Metrics)
	e.feed.onReset = append(e.feed.onReset, e.limits.reset)
	e.feed.onEvent = append(e.feed.onEvent, e.limits.invalidate)

	e.mux = http.NewServeMux()
	e.mux.Handle("GET /.well-known/bcp", e.disc)
	e.mux.HandleFunc("/.well-known/bcp", methodNotAllowed("GET, HEAD"))
	e.mux.Handle("/bcp/mcp", e.checkOrigin(e.usage.httpHook(e.auth.Handler(e.mcp), false)))
	// The REST binding: same executor, same authentication (REST mode:
	// credentials always, flat error bodies), complete responses signed.
	// Its OpenAPI document is public, like the profile.
	e.rest = newRESTEdge(e.mcp)
	e.mux.Handle("GET "+restBase+"/openapi.json", openAPIHandler())
	e.mux.Handle(restBase+"/", e.usage.httpHook(e.auth.RESTHandler(e.rest), true))
	e.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, "not_found", "no such resource on this merchant host")
	})
	return e, nil
}

// Run follows registry changes until ctx ends, keeping caches fresh, and
// flushes usage counts.
func (e *Edge) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() { defer close(done); e.usage.run(ctx) }()
	e.feed.run(ctx)
	<-done
}

// BaseURL is the merchant's public origin as agents reach it, given the
// request's Host header.
func (e *Edge) BaseURL(hostHeader string) string {
	u := e.cfg.PublicScheme + "://" + normalizeHost(hostHeader)
	p := e.cfg.PublicPort
	if p == "" {
		_, p, _ = net.SplitHostPort(hostHeader)
	}
	if p != "" && !(e.cfg.PublicScheme == "https" && p == "443") && !(e.cfg.PublicScheme == "http" && p == "80") {
		u += ":" + p
	}
	return u
}

// withRequestDeadline gives ctx the request deadline (Config.RequestTimeout)
// it carries as a value (edgeRequest.deadline), if any: ServeHTTP hands
// it to the executor that way because the MCP SDK hands its tool handlers
// the request context's values but neither its deadline nor its
// cancellation (internal/jsonrpc2's notDone).
func withRequestDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if er := requestFrom(ctx); er != nil && !er.deadline.IsZero() {
		return context.WithDeadline(ctx, er.deadline)
	}
	return ctx, func() {}
}

// edgeRequest is what the edge's own layers know about one request, in
// one context value (Edge.ServeHTTP puts it there) instead of one value
// and one request copy per layer: the merchant, the Host, the request
// deadline, and for MCP the usage writer (httpHook) and the status slot
// (withRPCStatus). The later fields are set before the MCP SDK starts the
// tool call that reads them.
type edgeRequest struct {
	tenant   *tenantsv1.Tenant
	host     string
	deadline time.Time // zero: none
	usage    *usageWriter
	status   rpcStatus
	statusOn bool // status is the request's slot (withRPCStatus)
	// server is the MCP server serverFor found (the SDK asks twice).
	server *mcp.Server
}

type edgeRequestKey struct{}

func requestFrom(ctx context.Context) *edgeRequest {
	er, _ := ctx.Value(edgeRequestKey{}).(*edgeRequest)
	return er
}

// agentPath reports whether r is a request of the agents' API, which
// Config.RequestTimeout bounds.
func agentPath(r *http.Request) bool {
	return isMCPPath(r) || strings.HasPrefix(r.URL.Path, restBase+"/")
}

// Handle mounts h on the public mux under pattern (behind Host routing).
func (e *Edge) Handle(pattern string, h http.Handler) { e.mux.Handle(pattern, h) }

// ServeHTTP resolves the tenant from the Host and dispatches. Unknown hosts
// get 404, suspended merchants 403, both with a JSON body.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The request deadline is a value the executor applies to the
	// operation (withRequestDeadline): on the request's own context it
	// would also cut off the MCP SDK writing the answer.
	ctx := r.Context()
	er := &edgeRequest{host: r.Host}
	if d := e.cfg.RequestTimeout; d > 0 && agentPath(r) {
		er.deadline = time.Now().Add(d)
	}
	host := normalizeHost(r.Host)
	t, err := e.hosts.resolve(ctx, host)
	// MCP clients get these as JSON-RPC errors, everyone else the flat body.
	writeErr := writeJSONError
	if isMCPPath(r) {
		writeErr = func(w http.ResponseWriter, status int, code, content string) {
			rpc := codeProtocol
			switch status {
			case http.StatusNotFound:
				rpc = codeDiscovery // no merchant here: the agent has the wrong endpoint
			case http.StatusInternalServerError:
				rpc = codeInternal
			}
			writeMCPError(w, r, status, rpc, code, content)
		}
	}
	switch {
	case errors.Is(err, errUnknownHost):
		writeErr(w, http.StatusNotFound, "unknown_host", "no merchant is served at "+strconv.Quote(host))
		return
	case err != nil:
		writeServiceErrorWith(w, r, err, writeErr)
		return
	case t.GetStatus() == tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED:
		writeErr(w, http.StatusForbidden, "tenant_suspended", "this merchant is suspended")
		return
	}
	id, err := parseTenantID(t.GetId())
	if err != nil {
		writeServiceErrorWith(w, r, err, writeErr)
		return
	}
	er.tenant = t
	ctx = context.WithValue(tenancy.With(ctx, id), edgeRequestKey{}, er)
	if p, ok := agentauth.PolicyFromTenant(t); ok {
		ctx = agentauth.WithTenantPolicy(ctx, p)
	}
	inner := r.WithContext(ctx)
	e.mux.ServeHTTP(w, inner)
	r.Pattern = inner.Pattern // for the metrics middleware's route label
}

// tenantFrom returns the tenant resolved for this request. Handlers behind
// ServeHTTP always have one.
func tenantFrom(ctx context.Context) *tenantsv1.Tenant {
	if er := requestFrom(ctx); er != nil {
		return er.tenant
	}
	return nil
}

// Ping implements the edge's internal connect API.
func (e *Edge) Ping(ctx context.Context, _ *connect.Request[edgev1.PingRequest]) (*connect.Response[edgev1.PingResponse], error) {
	return connect.NewResponse(&edgev1.PingResponse{Service: "edge", DatabaseOk: e.feed.watched.Load()}), nil
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use "+allow)
	}
}

// writeJSONError writes the flat error body the platform uses outside
// JSON-RPC: {"code": "...", "content": "..."}.
func writeJSONError(w http.ResponseWriter, status int, code, content string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "content": content})
}

// writeServiceError maps a failed service call to an HTTP error.
func writeServiceError(w http.ResponseWriter, r *http.Request, err error) {
	writeServiceErrorWith(w, r, err, writeJSONError)
}

// writeServiceErrorWith is writeServiceError rendering with write.
func writeServiceErrorWith(w http.ResponseWriter, r *http.Request, err error, write func(http.ResponseWriter, int, string, string)) {
	wire, e := apperr.WireOf(err)
	switch {
	case wire.Retry:
		// Host routing has no resource to conflict over: whatever made a
		// registry call retryable, the platform is briefly unavailable.
		write(w, http.StatusServiceUnavailable, "unavailable", "the platform is temporarily unavailable, retry shortly")
	case wire.RPCCode == apperr.RPCInternal:
		slog.ErrorContext(r.Context(), "edge: service call failed", "err", err)
		write(w, http.StatusInternalServerError, apperr.InternalCode, "internal error")
	default:
		write(w, wire.HTTPStatus, e.Code, e.Message)
	}
}

func parseTenantID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, apperr.New(apperr.KindInternal, "internal", "registry returned a malformed tenant id")
	}
	return id, nil
}
