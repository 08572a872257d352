// Package obs is the platform's observability plumbing: JSON slog logs that
// pick up the request id and tenant from the context, a request-id
// middleware, Prometheus HTTP metrics labelled by route and outcome, and
// the health endpoints.
package obs

import (
	"context"
	"io"
	"log/slog"

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
// tenant_id from the context to every record.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(&ctxHandler{Handler: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})})
}

type ctxHandler struct{ slog.Handler }

func (h *ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if t, err := tenancy.From(ctx); err == nil {
		r.AddAttrs(slog.String("tenant_id", t.String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *ctxHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &ctxHandler{Handler: h.Handler.WithAttrs(as)}
}

func (h *ctxHandler) WithGroup(name string) slog.Handler {
	return &ctxHandler{Handler: h.Handler.WithGroup(name)}
}
