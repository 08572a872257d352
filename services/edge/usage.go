package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Usage counting for the operator console (issue 6).
//
// Counted: every MCP tools/call and every request under the REST base, per
// tenant and São Paulo calendar day (America/Sao_Paulo, like the checkout,
// order and payment stats and the admin dashboard, so the console's days
// line up with theirs). An error is a JSON-RPC error, an HTTP status >= 400
// (including authentication failures, which never reach the MCP server)
// or a BCP error_response payload (ucp.status "error": not found,
// capabilities incompatible). Other MCP traffic (initialize, tools/list,
// notifications) is not counted unless its POST fails at the HTTP level.
//
// The request path only bumps two atomics in a map entry; counts are
// flushed every few seconds (and on shutdown) through the tenant service's
// RecordUsage, which adds them to tenants.request_usage. A failed flush
// keeps its counts for the next one.

const defaultUsageFlush = 10 * time.Second

type usageKey struct {
	tenant string
	day    int64 // the São Paulo calendar date, as days since 1970-01-01
}

// saoPaulo is where usage days begin and end; without the time zone
// database, Brasília time (UTC−3, no daylight saving since 2019).
var saoPaulo = func() *time.Location {
	if l, err := time.LoadLocation("America/Sao_Paulo"); err == nil {
		return l
	}
	return time.FixedZone("BRT", -3*3600)
}()

// usageDay is t's São Paulo calendar date as days since 1970-01-01 (the
// date read as a UTC midnight, so usageDate can format it back).
func usageDay(t time.Time) int64 {
	y, m, d := t.In(saoPaulo).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// usageDate is a usageDay as RecordUsage wants it: YYYY-MM-DD.
func usageDate(day int64) string { return time.Unix(day*86400, 0).UTC().Format("2006-01-02") }

type usageCount struct{ requests, errors atomic.Int64 }

type usageCounter struct {
	client   tenantsv1connect.TenantServiceClient
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu     sync.RWMutex
	counts map[usageKey]*usageCount
	// flushMu serialises flushes (the ticker, shutdown and tests).
	flushMu sync.Mutex
}

func newUsageCounter(client tenantsv1connect.TenantServiceClient, interval time.Duration, log *slog.Logger) *usageCounter {
	if interval <= 0 {
		interval = defaultUsageFlush
	}
	return &usageCounter{client: client, log: log, interval: interval, now: time.Now, counts: map[usageKey]*usageCount{}}
}

// record counts one request of tenantID.
func (u *usageCounter) record(tenantID string, failed bool) {
	if tenantID == "" {
		return
	}
	k := usageKey{tenant: tenantID, day: usageDay(u.now())}
	u.mu.RLock()
	c := u.counts[k]
	if c != nil {
		// Under the read lock: a flush swaps the map only after every
		// increment on the old one is done.
		add(c, failed)
		u.mu.RUnlock()
		return
	}
	u.mu.RUnlock()
	u.mu.Lock()
	if c = u.counts[k]; c == nil {
		c = &usageCount{}
		u.counts[k] = c
	}
	add(c, failed)
	u.mu.Unlock()
}

func add(c *usageCount, failed bool) {
	c.requests.Add(1)
	if failed {
		c.errors.Add(1)
	}
}

// run flushes every interval until ctx ends, then once more.
func (u *usageCounter) run(ctx context.Context) {
	t := time.NewTicker(u.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = u.flush(fctx)
			cancel()
			return
		case <-t.C:
			_ = u.flush(ctx)
		}
	}
}

// flush sends everything counted so far. On failure the counts go back
// into the current map, to be sent with the next flush.
func (u *usageCounter) flush(ctx context.Context) error {
	u.flushMu.Lock()
	defer u.flushMu.Unlock()
	u.mu.Lock()
	taken := u.counts
	u.counts = make(map[usageKey]*usageCount, len(taken))
	u.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	req := &tenantsv1.RecordUsageRequest{Counts: make([]*tenantsv1.UsageCount, 0, len(taken))}
	for k, c := range taken {
		req.Counts = append(req.Counts, &tenantsv1.UsageCount{
			TenantId: k.tenant, Day: usageDate(k.day),
			Requests: c.requests.Load(), Errors: c.errors.Load(),
		})
	}
	if _, err := u.client.RecordUsage(ctx, connect.NewRequest(req)); err != nil {
		u.log.Warn("edge: usage flush failed; counts kept for the next flush", "err", err, "rows", len(taken))
		u.mu.Lock()
		for k, c := range taken {
			cur := u.counts[k]
			if cur == nil {
				u.counts[k] = c
				continue
			}
			cur.requests.Add(c.requests.Load())
			cur.errors.Add(c.errors.Load())
		}
		u.mu.Unlock()
		return err
	}
	return nil
}

// mcpMiddleware counts tool calls, for the tenant of the request (servers
// are shared by merchants with the same capabilities).
func (u *usageCounter) mcpMiddleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				// Counted here: the HTTP hook must not count it again when
				// the SDK answers a JSON-RPC error with an HTTP 400/404.
				if er := requestFrom(ctx); er != nil && er.usage != nil {
					er.usage.counted.Store(true)
				}
			}
			res, err := next(ctx, method, req)
			if method == "tools/call" {
				failed := err != nil
				if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
					raw, _ := r.StructuredContent.(json.RawMessage)
					failed = failed || r.IsError || isErrorEnvelope(raw)
				}
				u.record(tenantFrom(ctx).GetId(), failed)
			}
			return res, err
		}
	}
}

// httpHook counts requests answered by next: every one (all: REST) or,
// for MCP, only POSTs failing at the HTTP level before any tool call was
// dispatched (authentication, malformed messages): tool calls are counted
// by the middleware, which marks the request through its context.
func (u *usageCounter) httpHook(next http.Handler, all bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uw := &usageWriter{ResponseWriter: w}
		if !all {
			if er := requestFrom(r.Context()); er != nil {
				er.usage = uw
			}
		}
		next.ServeHTTP(uw, r)
		status := uw.status
		if status == 0 {
			status = http.StatusOK
		}
		failed := status >= 400 || uw.errBody
		// MCP: only POSTs carry JSON-RPC messages; the GET (SSE stream) and
		// DELETE a client may try are refused by the stateless server as a
		// matter of course and say nothing about the agent's calls.
		if all || status >= 400 && r.Method == http.MethodPost && !uw.counted.Load() {
			u.record(tenantFrom(r.Context()).GetId(), failed)
		}
	})
}

// usageWriter notes the status and whether the body starts as an
// error_response.
type usageWriter struct {
	http.ResponseWriter
	status  int
	wrote   bool
	errBody bool
	counted atomic.Bool // the MCP middleware counted this request
}

func (w *usageWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *usageWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.wrote = true
		if w.status == 0 {
			w.status = http.StatusOK
		}
		w.errBody = isErrorEnvelope(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *usageWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *usageWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errorEnvelopePrefix is how every error_response payload starts (wrap
// puts the "ucp" envelope first): a prefix test instead of parsing.
var errorEnvelopePrefix = []byte(`{"ucp":{"version":"` + bcpnames.Version + `","status":"error"`)

func isErrorEnvelope(b []byte) bool { return bytes.HasPrefix(b, errorEnvelopePrefix) }

// FlushUsage sends the counts gathered so far (shutdown, tests).
func (e *Edge) FlushUsage(ctx context.Context) error { return e.usage.flush(ctx) }
