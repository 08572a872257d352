package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Handler traces the requests of one listener ("public", "webhooks",
// "pspsim-api", …): a server span per request, named by the listener and
// method, then by the route a mux matched (here when h is the mux, else
// obs.Middleware renames it). public listeners (agents, browsers, PSPs)
// get publicPropagator's treatment of an incoming traceparent; others
// trust it. The internal listener needs no Handler: its connect calls are
// traced by ServerInterceptors. The health and metrics endpoints are not
// traced. With p nil, h as it is.
func (p *Provider) Handler(listener string, public bool, h http.Handler) http.Handler {
	if p == nil {
		return h
	}
	prop := propagator
	if public {
		prop = p.public
	}
	return otelhttp.NewHandler(h, listener,
		otelhttp.WithTracerProvider(p.sdk),
		otelhttp.WithMeterProvider(noop.NewMeterProvider()),
		otelhttp.WithPropagators(prop),
		// Renamed by the route once a mux that got this very request has
		// matched it (obs.Middleware renames the platform's listeners').
		otelhttp.WithSpanNameFormatter(func(op string, r *http.Request) string {
			if r.Pattern != "" {
				return op + " " + r.Pattern
			}
			return op + " " + r.Method
		}),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}),
	)
}

// Transport traces the calls made through rt (nil: http.DefaultTransport)
// with a client span and a traceparent header, when the request's context
// is in a trace; other requests go straight to rt. The span belongs to the
// provider of the span in the context, so the same transport serves every
// process of a test binary and needs no configuration.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{
		base: rt,
		traced: otelhttp.NewTransport(rt,
			otelhttp.WithTracerProvider(contextProvider{}),
			otelhttp.WithMeterProvider(noop.NewMeterProvider()),
			otelhttp.WithPropagators(propagator),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method + " " + r.URL.Host }),
		),
	}
}

type transport struct {
	base, traced http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return t.base.RoundTrip(r)
	}
	return t.traced.RoundTrip(r)
}

// Unwrap exposes the base transport (http.Transport settings checks).
func (t *transport) Unwrap() http.RoundTripper { return t.base }

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// base transport.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// contextProvider's tracers start spans with the provider of the span in
// the context: a child in the process's own provider when there is one, a
// no-op span (which still carries a remote parent's context) otherwise.
type contextProvider struct{ embedded.TracerProvider }

func (contextProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return contextTracer{name: name, opts: opts}
}

type contextTracer struct {
	embedded.Tracer
	name string
	opts []trace.TracerOption
}

func (t contextTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(t.name, t.opts...).Start(ctx, name, opts...) //nolint:spancheck // a Start: the caller ends the span
}

// noopSpan is what Start returns outside a recorded trace.
var noopSpan = trace.SpanFromContext(context.Background())

// Start starts a child span of the span in ctx, in that span's provider
// (a no-op span when ctx is in no recorded trace).
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	sp := trace.SpanFromContext(ctx)
	if !sp.IsRecording() {
		return ctx, noopSpan
	}
	return sp.TracerProvider().Tracer(scope).Start(ctx, name, opts...) //nolint:spancheck // a Start: the caller ends the span
}
