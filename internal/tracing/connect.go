package tracing

import (
	"context"
	"errors"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bcpdev/bcp/internal/tenancy"
)

// Span attributes the platform sets (besides the libraries' own).
const (
	AttrTenant    = attribute.Key("bcp.tenant_id")
	AttrCheckout  = attribute.Key("bcp.checkout_id")
	AttrTool      = attribute.Key("bcp.tool")
	AttrOperation = attribute.Key("bcp.operation")
	AttrOutcome   = attribute.Key("bcp.outcome")
	AttrJobKind   = attribute.Key("bcp.job.kind")
)

// ServerInterceptors are the connect handler interceptors of p: first (the
// outermost) the server span, continuing the caller's trace; last (inside
// authentication, which puts the tenant in the context) Attributes.
// Nil p: none.
func (p *Provider) ServerInterceptors() (outer, inner []connect.Interceptor) {
	if p == nil {
		return nil, nil
	}
	i, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(p.sdk), otelconnect.WithPropagator(propagator),
		otelconnect.WithTrustRemote(), otelconnect.WithoutMetrics())
	if err != nil {
		panic(err) // only a meter provider's error; metrics are off
	}
	return []connect.Interceptor{i}, []connect.Interceptor{Attributes()}
}

// ClientInterceptor makes connect calls client spans of the caller's
// trace, with its traceparent (nil when p is nil).
func (p *Provider) ClientInterceptor() connect.Interceptor {
	if p == nil {
		return nil
	}
	i, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(contextProvider{}), otelconnect.WithPropagator(propagator),
		otelconnect.WithoutMetrics())
	if err != nil {
		panic(err)
	}
	return i
}

// Attributes is a connect handler interceptor that puts the tenant id,
// the checkout id (a request's checkout_id, or the id of a checkout
// service request) and the outcome (ok or the connect code) on the span
// of the call.
func Attributes() connect.Interceptor { return attrInterceptor{} }

type attrInterceptor struct{}

func (attrInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		sp := trace.SpanFromContext(ctx)
		if !sp.IsRecording() {
			return next(ctx, req)
		}
		SetTenant(ctx)
		if m, ok := req.Any().(proto.Message); ok {
			if id := checkoutID(m, req.Spec().Procedure); id != "" {
				sp.SetAttributes(AttrCheckout.String(id))
			}
		}
		res, err := next(ctx, req)
		sp.SetAttributes(AttrOutcome.String(Outcome(err)))
		return res, err
	}
}

func (attrInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (attrInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if trace.SpanFromContext(ctx).IsRecording() {
			SetTenant(ctx)
		}
		return next(ctx, conn)
	}
}

// DirectTrace is internal/direct's Chain.Trace: a span per in-process
// call between co-hosted services (bcpd all, dev), named by its
// procedure, with the tenant, the checkout id and the outcome, when the
// caller's trace is recorded. Nil when p is nil.
func (p *Provider) DirectTrace() func(caller, handler context.Context, procedure string, req proto.Message) (context.Context, func(error)) {
	if p == nil {
		return nil
	}
	return func(caller, ctx context.Context, procedure string, req proto.Message) (context.Context, func(error)) {
		_, sp := Start(caller, strings.TrimPrefix(procedure, "/"), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("rpc.method", procedure)))
		if !sp.IsRecording() {
			return ctx, func(error) {}
		}
		ctx = trace.ContextWithSpan(ctx, sp)
		SetTenant(ctx)
		if req != nil {
			if id := checkoutID(req, procedure); id != "" {
				sp.SetAttributes(AttrCheckout.String(id))
			}
		}
		return ctx, func(err error) {
			sp.SetAttributes(AttrOutcome.String(Outcome(err)))
			if err != nil {
				sp.SetStatus(codes.Error, "")
			}
			sp.End()
		}
	}
}

// Outcome is "ok" or err's connect code.
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, context.Canceled) {
		return connect.CodeCanceled.String()
	}
	return connect.CodeOf(err).String()
}

// SetTenant puts the context's tenant on its span.
func SetTenant(ctx context.Context) {
	if id, err := tenancy.From(ctx); err == nil {
		trace.SpanFromContext(ctx).SetAttributes(AttrTenant.String(id.String()))
	}
}

// checkoutID is m's checkout_id, or its id when the procedure is the
// checkout service's.
func checkoutID(m proto.Message, procedure string) string {
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	f := fields.ByName("checkout_id")
	if f == nil && strings.HasPrefix(procedure, "/bcp.checkout.v1.CheckoutService/") {
		f = fields.ByName("id")
	}
	if f == nil || f.Kind() != protoreflect.StringKind || f.IsList() {
		return ""
	}
	return r.Get(f).String()
}
