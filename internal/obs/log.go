// Package obs is the platform's observability plumbing: JSON slog logs that
// pick up the request id and tenant from the context, a request-id
// middleware, Prometheus HTTP metrics labelled by route and outcome, and
// the health endpoints.
package obs

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/bcpdev/bcp/internal/tenancy"
)

type requestIDKey struct{}

// WithRequestID returns ctx carrying id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id of ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NewLogger returns a JSON logger writing to w that adds request_id and
// tenant_id from the context to every record that does not carry them
// already (each key once per line: a log call naming the tenant it acts
// on, or a logger made With it, keeps its own value), and the trace_id and
// span_id of a traced request (internal/tracing).
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(&ctxHandler{Handler: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})})
}

type ctxHandler struct {
	slog.Handler
	// The logger's own attributes (WithAttrs) already hold these keys.
	hasRequestID, hasTenantID bool
}

const (
	keyRequestID = "request_id"
	keyTenantID  = "tenant_id"
	keyTraceID   = "trace_id"
	keySpanID    = "span_id"
)

func (h *ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	needID, needTenant := !h.hasRequestID, !h.hasTenantID
	if needID || needTenant {
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case keyRequestID:
				needID = false
			case keyTenantID:
				needTenant = false
			}
			return needID || needTenant
		})
	}
	if id := RequestID(ctx); needID && id != "" {
		r.AddAttrs(slog.String(keyRequestID, id))
	}
	if t, err := tenancy.From(ctx); needTenant && err == nil {
		r.AddAttrs(slog.String(keyTenantID, t.String()))
	}
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String(keyTraceID, sc.TraceID().String()), slog.String(keySpanID, sc.SpanID().String()))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h *ctxHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &ctxHandler{Handler: h.Handler.WithAttrs(as), hasRequestID: h.hasRequestID, hasTenantID: h.hasTenantID}
	for _, a := range as {
		switch a.Key {
		case keyRequestID:
			n.hasRequestID = true
		case keyTenantID:
			n.hasTenantID = true
		}
	}
	return n
}

func (h *ctxHandler) WithGroup(name string) slog.Handler {
	return &ctxHandler{Handler: h.Handler.WithGroup(name), hasRequestID: h.hasRequestID, hasTenantID: h.hasTenantID}
}
