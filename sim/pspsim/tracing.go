package pspsim

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/bcpdev/bcp/internal/tracing"
)

// deliveryTraces remembers, per webhook delivery, the trace of the call
// that caused it (a payment through the control API), so the webhook
// continues it: a real PSP does not, but the simulator is the test's bank
// and its webhook belongs to the purchase the test follows. In memory
// only: a delivery made by another process, or after a restart, starts
// its own trace.
type deliveryTraces struct {
	mu sync.Mutex
	m  map[int64]trace.SpanContext
}

// maxDeliveryTraces bounds what is remembered for deliveries never made.
const maxDeliveryTraces = 4096

func (d *deliveryTraces) remember(ctx context.Context, id int64) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[int64]trace.SpanContext{}
	}
	if len(d.m) >= maxDeliveryTraces {
		clear(d.m)
	}
	d.m[id] = sc
}

// start starts the span of one attempt at delivery id: in the trace of the
// call that caused it, when remembered (forgotten once the first attempt
// is made: retries start their own).
func (d *deliveryTraces) start(ctx context.Context, p *tracing.Provider, id int64) (context.Context, trace.Span) {
	if !p.Enabled() {
		return ctx, trace.SpanFromContext(context.Background()) // a no-op span
	}
	d.mu.Lock()
	sc, ok := d.m[id]
	delete(d.m, id)
	d.mu.Unlock()
	if ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return p.Tracer().Start(ctx, "pspsim webhook delivery", trace.WithSpanKind(trace.SpanKindProducer), //nolint:spancheck // the caller ends the span
		trace.WithAttributes(attribute.Int64("bcp.pspsim.delivery_id", id)))
}
