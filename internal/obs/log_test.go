package obs

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/bcpdev/bcp/internal/tenancy"
)

// recorder keeps every record's attributes, With ones included.
type recorder struct {
	with []slog.Attr
	got  *[][]slog.Attr
}

func (r recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	as := append([]slog.Attr(nil), r.with...)
	rec.Attrs(func(a slog.Attr) bool { as = append(as, a); return true })
	*r.got = append(*r.got, as)
	return nil
}
func (r recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return recorder{with: append(append([]slog.Attr(nil), r.with...), as...), got: r.got}
}
func (r recorder) WithGroup(string) slog.Handler { return r }

// Each key once per record: the context's tenant and request id are added
// only when the call (or the logger's With) does not name them itself,
// as "order created", "refund settled" and key rotation do.
func TestContextAttrsAreNotDuplicated(t *testing.T) {
	var got [][]slog.Attr
	log := slog.New(&ctxHandler{Handler: recorder{got: &got}})
	tid, other := uuid.New(), uuid.New()
	ctx := WithRequestID(tenancy.With(context.Background(), tid), "req-1")

	log.InfoContext(ctx, "order created", "tenant_id", tid, "order_id", "ord_1")
	log.InfoContext(ctx, "signing key rotated", "tenant_id", other.String()) // acts on another tenant: its value wins
	log.With("tenant_id", tid, "request_id", "req-2").InfoContext(ctx, "refund settled")
	log.InfoContext(ctx, "plain")

	want := []map[string]string{
		{"tenant_id": tid.String(), "request_id": "req-1"},
		{"tenant_id": other.String(), "request_id": "req-1"},
		{"tenant_id": tid.String(), "request_id": "req-2"},
		{"tenant_id": tid.String(), "request_id": "req-1"},
	}
	for i, as := range got {
		count := map[string]int{}
		for _, a := range as {
			count[a.Key]++
			if w, ok := want[i][a.Key]; ok && a.Value.String() != w {
				t.Errorf("record %d: %s = %s, want %s", i, a.Key, a.Value, w)
			}
		}
		for k := range want[i] {
			if count[k] != 1 {
				t.Errorf("record %d: %s appears %d times (%v)", i, k, count[k], as)
			}
		}
	}

	// And on the JSON lines the platform writes.
	var buf bytes.Buffer
	NewLogger(&buf, slog.LevelInfo).InfoContext(ctx, "order created", "tenant_id", tid)
	if n := strings.Count(buf.String(), `"tenant_id"`); n != 1 {
		t.Fatalf("tenant_id %d times: %s", n, buf.String())
	}
}

// A line logged in a traced request carries its trace and span ids; one
// outside a trace carries neither.
func TestTraceIDsInLogLines(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo)
	log.InfoContext(ctx, "traced")
	log.InfoContext(context.Background(), "untraced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"`) || !strings.Contains(lines[0], `"span_id":"00f067aa0ba902b7"`) {
		t.Fatalf("traced line without its ids: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") || strings.Contains(lines[1], "span_id") {
		t.Fatalf("untraced line with trace ids: %s", lines[1])
	}
}
