package tracing

import (
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// metaTraceparent is the job metadata key carrying the trace context of
// the code that inserted the job.
const metaTraceparent = "traceparent"

// RiverMiddleware links river jobs to the trace that enqueued them: an
// insert inside a trace records its traceparent in the job's metadata, and
// the job is worked in a span that continues that trace, in whichever
// process works it (jobs inserted outside any trace, such as the periodic
// sweeps, start their own). Nil when p is nil.
func (p *Provider) RiverMiddleware() []rivertype.Middleware {
	if p == nil {
		return nil
	}
	return []rivertype.Middleware{&riverMiddleware{tracer: p.Tracer()}}
}

type riverMiddleware struct {
	river.MiddlewareDefaults
	tracer trace.Tracer
}

func (m *riverMiddleware) InsertMany(ctx context.Context, many []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	if tp := carrier[metaTraceparent]; tp != "" {
		for _, p := range many {
			meta := map[string]any{}
			if len(p.Metadata) > 0 {
				if err := json.Unmarshal(p.Metadata, &meta); err != nil {
					continue // not an object: left alone
				}
			}
			meta[metaTraceparent] = tp
			if b, err := json.Marshal(meta); err == nil {
				p.Metadata = b
			}
		}
	}
	return doInner(ctx)
}

func (m *riverMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var meta struct {
		Traceparent string `json:"traceparent"`
	}
	if len(job.Metadata) > 0 {
		_ = json.Unmarshal(job.Metadata, &meta)
	}
	if meta.Traceparent != "" {
		ctx = propagator.Extract(ctx, propagation.MapCarrier{metaTraceparent: meta.Traceparent})
	}
	ctx, sp := m.tracer.Start(ctx, "job "+job.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(AttrJobKind.String(job.Kind), attribute.String("messaging.system", "river"),
			attribute.String("messaging.destination.name", job.Queue), attribute.Int("bcp.job.attempt", job.Attempt)))
	defer sp.End()
	if sp.IsRecording() {
		var ids struct {
			TenantID   string `json:"tenant_id"`
			CheckoutID string `json:"checkout_id"`
		}
		if json.Unmarshal(job.EncodedArgs, &ids) == nil {
			if ids.TenantID != "" {
				sp.SetAttributes(AttrTenant.String(ids.TenantID))
			}
			if ids.CheckoutID != "" {
				sp.SetAttributes(AttrCheckout.String(ids.CheckoutID))
			}
		}
	}
	err := doInner(ctx)
	sp.SetAttributes(AttrOutcome.String(jobOutcome(err)))
	if err != nil {
		sp.SetStatus(codes.Error, "")
	}
	return err
}

func jobOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	return "error"
}
