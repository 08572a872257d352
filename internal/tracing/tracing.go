// Package tracing is the platform's distributed tracing (OpenTelemetry,
// exported over OTLP/HTTP): one purchase followed through the edge, every
// connect call between services, SQL, river jobs and the outgoing PSP,
// card processor and webhook calls.
//
// Tracing is off unless an exporter is configured (Config.Endpoint, or the
// standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT):
// then New returns nil, every helper here returns what it was given (no
// handler, interceptor or tracer is installed) and nothing costs anything.
//
// What a span may say: route patterns, procedure names, statement names,
// job kinds, tenant and checkout ids, tools and outcomes. Never arguments,
// headers, bodies, query strings, URL paths of outgoing calls, addresses of
// the callers, tokens, keys or buyer data: the exporter passes every span
// through scrub (scrub.go) on its way out as a last line of defence.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config says where spans go and how many.
type Config struct {
	// Endpoint is the OTLP/HTTP collector's base URL
	// (http://collector:4318; /v1/traces is appended when the URL has no
	// path), as OTEL_EXPORTER_OTLP_ENDPOINT. "": the OTEL_EXPORTER_OTLP_*
	// environment, and no tracing when that names no endpoint either.
	Endpoint string
	// SampleRatio is the share of traces recorded (0..1], decided once,
	// where a trace starts, by its trace id. 0: OTEL_TRACES_SAMPLER_ARG,
	// else 1.
	SampleRatio float64
	// ServiceName is service.name (default "bcpd").
	ServiceName string
	// Roles are the roles the process hosts (resource attribute bcp.roles)
	// and Instance names it (service.instance.id; "": none).
	Roles    []string
	Instance string
}

// Environment variables read when Config leaves them unset.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
)

// Enabled says whether cfg (with the environment) configures an exporter.
func (cfg Config) Enabled() bool {
	if strings.EqualFold(os.Getenv(EnvSDKDisabled), "true") || strings.EqualFold(os.Getenv(EnvTracesExporter), "none") {
		return false
	}
	return cfg.Endpoint != "" || os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvTracesEndpoint) != ""
}

// Ratio is the sample ratio cfg (with the environment) asks for.
func (cfg Config) Ratio() (float64, error) {
	r := cfg.SampleRatio
	if r == 0 {
		if s := os.Getenv(EnvSamplerArg); s != "" {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return 0, fmt.Errorf("%s=%q: not a number", EnvSamplerArg, s)
			}
			r = v
		} else {
			r = 1
		}
	}
	if r < 0 || r > 1 {
		return 0, fmt.Errorf("trace sample ratio %v: not within [0, 1]", r)
	}
	return r, nil
}

// Provider is a process's tracer provider. A nil *Provider is tracing off:
// every method is safe on it and does nothing.
type Provider struct {
	sdk    *sdktrace.TracerProvider
	public propagation.TextMapPropagator
}

// New starts cfg's exporter and returns the provider; nil, nil when
// cfg.Enabled() is false.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	ratio, err := cfg.Ratio()
	if err != nil {
		return nil, err
	}
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("OTLP endpoint %q: not an http(s) URL", cfg.Endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", cmpOr(cfg.ServiceName, "bcpd")),
		attribute.String("bcp.roles", strings.Join(cfg.Roles, ",")),
	}
	if cfg.Instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", cfg.Instance))
	}
	sampler := sdktrace.TraceIDRatioBased(ratio)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(sdkresource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sampler)),
		sdktrace.WithBatcher(scrubbing{exp}),
	)
	return &Provider{sdk: tp, public: publicPropagator{sampler: sampler}}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// LogErrors sends the OpenTelemetry SDK's own errors (an export that
// failed: the collector is down) to log as warnings, instead of the
// standard library's logger, so the process's log stays JSON. Global:
// call it once, from main.
func LogErrors(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: "+err.Error(), "component", "opentelemetry")
	}))
}

// Enabled says whether p records anything.
func (p *Provider) Enabled() bool { return p != nil }

// TracerProvider is p's, or a no-op one when p is nil.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil {
		return noop.NewTracerProvider()
	}
	return p.sdk
}

// Tracer is the platform's tracer of p.
func (p *Provider) Tracer() trace.Tracer { return p.TracerProvider().Tracer(scope) }

// ForceFlush exports the spans ended so far.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// scope is the instrumentation scope of the platform's own spans.
const scope = "github.com/bcpdev/bcp"

// propagator carries W3C trace context between the platform's processes,
// whose headers are trusted (the internal listener, jobs).
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// publicPropagator reads the trace context of callers from outside
// (agents, browsers, PSPs): their trace id is kept, so an agent that sends
// one traceparent with every call of a purchase sees them in one trace,
// but whether the trace is recorded is decided here, by the trace id and
// the configured ratio, as for a trace started here (a caller cannot make
// every request of theirs recorded), and their tracestate is dropped.
type publicPropagator struct{ sampler sdktrace.Sampler }

func (p publicPropagator) Inject(ctx context.Context, c propagation.TextMapCarrier) {
	propagator.Inject(ctx, c)
}

func (p publicPropagator) Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	sc := trace.SpanContextFromContext(propagator.Extract(ctx, c))
	if !sc.IsValid() {
		return ctx
	}
	res := p.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: sc.TraceID()})
	flags := trace.TraceFlags(0)
	if res.Decision == sdktrace.RecordAndSample {
		flags = trace.FlagsSampled
	}
	sc = sc.WithTraceFlags(flags).WithTraceState(trace.TraceState{})
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

func (p publicPropagator) Fields() []string { return propagator.Fields() }
