package tracing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestStatementName(t *testing.T) {
	for _, c := range []struct{ sql, name, op string }{
		{"-- name: GetCheckout :one\nSELECT * FROM checkout.sessions WHERE id = $1", "GetCheckout", "SELECT"},
		{"  -- name: InsertOrder :exec\n  INSERT INTO orders.orders (id) VALUES ($1)", "InsertOrder", "INSERT"},
		{"SELECT pg_notify($1, $2)", "SELECT", "SELECT"},
		{"INSERT INTO orders.webhooks (id) VALUES ('secret-value')", "INSERT orders.webhooks", "INSERT"},
		{"UPDATE payments SET x = 'ana@example.com'", "UPDATE payments", "UPDATE"},
		{"DELETE FROM t WHERE k = 'x'", "DELETE t", "DELETE"},
		{"update t(x", "UPDATE", "UPDATE"},
		{"commit", "COMMIT", "COMMIT"},
		{"-- a comment\nWITH x AS (SELECT 1) SELECT * FROM x", "WITH", "WITH"},
		{"'quoted' stuff", "SQL", "SQL"},
		{"", "SQL", "SQL"},
	} {
		name, op := StatementName(c.sql)
		if name != c.name || op != c.op {
			t.Errorf("StatementName(%q) = %q, %q; want %q, %q", c.sql, name, op, c.name, c.op)
		}
	}
}

// What a library records that may hold a secret or buyer data never
// leaves the process: callers' addresses, user agents, paths and queries,
// headers, statements and error texts go; an outgoing URL keeps its
// origin; anything that looks like an e-mail, a bearer credential or a
// PEM block is redacted; the platform's own attributes stay.
func TestScrub(t *testing.T) {
	stub := tracetest.SpanStub{
		Name: "public POST /bcp/mcp",
		Attributes: []attribute.KeyValue{
			attribute.String("url.full", "https://merchant.example/hooks/abc?token=s3cr3t"),
			attribute.String("url.path", "/reset/tok_123"),
			attribute.String("url.query", "key=1"),
			attribute.String("client.address", "203.0.113.9"),
			attribute.String("user_agent.original", "Mozilla/5.0"),
			attribute.StringSlice("http.request.header.authorization", []string{"Bearer abc"}),
			attribute.String("bcp.note", "from ana@example.com"),
			attribute.String("bcp.auth", "Bearer abc.def"),
			attribute.String("bcp.pem", "-----BEGIN PRIVATE KEY-----"),
			attribute.String("bcp.key", "sk_test_51abc"),
			AttrTenant.String("5b16c7f0-f5ca-45d9-9a44-a96fc3704523"),
			AttrCheckout.String("chk_01abc"),
			attribute.String("http.route", "POST /bcp/mcp"),
			attribute.Int("http.response.status_code", 200),
		},
		Status: sdktrace.Status{Code: codes.Error, Description: "invalid e-mail ana@example.com"},
		Events: []sdktrace.Event{{Name: "exception", Attributes: []attribute.KeyValue{
			attribute.String("exception.type", "*errors.errorString"), attribute.String("exception.message", "buyer ana@example.com"),
		}}},
	}
	got := scrubSpan(stub.Snapshot())
	want := map[string]string{
		"url.full":                  "https://merchant.example",
		"bcp.note":                  "[redacted]",
		"bcp.auth":                  "[redacted]",
		"bcp.pem":                   "[redacted]",
		"bcp.key":                   "[redacted]",
		"bcp.tenant_id":             "5b16c7f0-f5ca-45d9-9a44-a96fc3704523",
		"bcp.checkout_id":           "chk_01abc",
		"http.route":                "POST /bcp/mcp",
		"http.response.status_code": "200",
	}
	attrs := map[string]string{}
	for _, a := range got.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if len(attrs) != len(want) {
		t.Errorf("attributes %v, want %v", attrs, want)
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	if got.Status().Code != codes.Error || got.Status().Description != "" {
		t.Errorf("status %+v, want an error without its text", got.Status())
	}
	if ev := got.Events(); len(ev) != 1 || len(ev[0].Attributes) != 1 || ev[0].Attributes[0].Key != "exception.type" {
		t.Errorf("events %+v, want the exception's type alone", ev)
	}
	// A clean span goes out as it is.
	clean := tracetest.SpanStub{Name: "GetCheckout", Attributes: []attribute.KeyValue{AttrTenant.String("t")}}.Snapshot()
	if as := scrubSpan(clean).Attributes(); len(as) != 1 || as[0] != AttrTenant.String("t") {
		t.Errorf("a clean span's attributes became %v", as)
	}
}

// An outside caller's traceparent keeps its trace id, but whether the
// trace is recorded is decided by the ratio, and its tracestate is
// dropped.
func TestPublicPropagator(t *testing.T) {
	const tid = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, c := range []struct {
		ratio   float64
		flags   string
		sampled bool
	}{
		{0, "01", false}, // the caller asks, the ratio says no
		{1, "00", true},  // the caller does not ask, the ratio says yes
		{1, "01", true},
	} {
		p := publicPropagator{sampler: sdktrace.TraceIDRatioBased(c.ratio)}
		h := http.Header{}
		h.Set("traceparent", "00-"+tid+"-00f067aa0ba902b7-"+c.flags)
		h.Set("tracestate", "vendor=anything")
		sc := trace.SpanContextFromContext(p.Extract(context.Background(), propagation.HeaderCarrier(h)))
		if sc.TraceID().String() != tid || !sc.IsRemote() || sc.IsSampled() != c.sampled || sc.TraceState().Len() != 0 {
			t.Errorf("ratio %v flags %s: %v sampled %v state %q", c.ratio, c.flags, sc.TraceID(), sc.IsSampled(), sc.TraceState())
		}
	}
	// No traceparent: nothing.
	p := publicPropagator{sampler: sdktrace.TraceIDRatioBased(1)}
	if sc := trace.SpanContextFromContext(p.Extract(context.Background(), propagation.HeaderCarrier{})); sc.IsValid() {
		t.Errorf("a span context from no header: %v", sc)
	}
}

func recordingProvider() (*Provider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	return &Provider{sdk: tp}, rec
}

// A job inserted in a trace carries its traceparent in its metadata (next
// to what was there), and is worked in a child span of the inserting
// span, with its kind, tenant, checkout and outcome.
func TestRiverMiddlewareLinksJobs(t *testing.T) {
	p, rec := recordingProvider()
	mw := p.RiverMiddleware()[0]
	ctx, parent := p.Tracer().Start(context.Background(), "handler")
	params := []*rivertype.JobInsertParams{{Kind: "checkout_settle", Metadata: []byte(`{"x":1}`)}, {Kind: "order_webhook"}}
	if _, err := mw.(rivertype.JobInsertMiddleware).InsertMany(ctx, params, func(context.Context) ([]*rivertype.JobInsertResult, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	parent.End()
	want := "00-" + parent.SpanContext().TraceID().String() + "-" + parent.SpanContext().SpanID().String() + "-01"
	var meta map[string]any
	if err := json.Unmarshal(params[0].Metadata, &meta); err != nil || meta["traceparent"] != want || meta["x"] != float64(1) {
		t.Fatalf("metadata %s, want x kept and traceparent %s", params[0].Metadata, want)
	}
	if !strings.Contains(string(params[1].Metadata), want) {
		t.Fatalf("metadata %s without the traceparent", params[1].Metadata)
	}
	job := &rivertype.JobRow{Kind: "checkout_settle", Queue: "checkout", Attempt: 1, Metadata: params[0].Metadata,
		EncodedArgs: []byte(`{"tenant_id":"t1","checkout_id":"chk_1","attempt_id":"pa_1"}`)}
	var worked trace.SpanContext
	if err := mw.(rivertype.WorkerMiddleware).Work(context.Background(), job, func(ctx context.Context) error {
		worked = trace.SpanContextFromContext(ctx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	js := spans[1]
	if js.Name() != "job checkout_settle" || js.Parent().SpanID() != parent.SpanContext().SpanID() || worked.TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("job span %q parent %v trace %v", js.Name(), js.Parent().SpanID(), worked.TraceID())
	}
	got := map[attribute.Key]string{}
	for _, a := range js.Attributes() {
		got[a.Key] = a.Value.String()
	}
	for k, v := range map[attribute.Key]string{AttrJobKind: "checkout_settle", AttrTenant: "t1", AttrCheckout: "chk_1", AttrOutcome: "ok"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// Inserted outside a trace: no traceparent.
	plain := []*rivertype.JobInsertParams{{Kind: "checkout_sweep"}}
	_, _ = mw.(rivertype.JobInsertMiddleware).InsertMany(context.Background(), plain, func(context.Context) ([]*rivertype.JobInsertResult, error) { return nil, nil })
	if plain[0].Metadata != nil {
		t.Fatalf("metadata %s for a job inserted outside a trace", plain[0].Metadata)
	}
}

// Outgoing calls in a trace carry its traceparent and make a client span;
// others go out untouched.
func TestTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: Transport(nil)}
	p, rec := recordingProvider()
	ctx, parent := p.Tracer().Start(context.Background(), "job order_webhook")
	for _, c := range []context.Context{ctx, context.Background()} {
		req, _ := http.NewRequestWithContext(c, http.MethodPost, srv.URL+"/hook?token=x", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].SpanKind() != trace.SpanKindClient || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v", spans)
	}
	want := "00-" + parent.SpanContext().TraceID().String() + "-" + spans[0].SpanContext().SpanID().String() + "-01"
	if len(got) != 2 || got[0] != want || got[1] != "" {
		t.Fatalf("traceparents %q, want %q then none", got, want)
	}
}

// Without an exporter tracing is off: no provider, and every helper hands
// back what it was given.
func TestOffWithoutExporter(t *testing.T) {
	for _, k := range []string{EnvEndpoint, EnvTracesEndpoint, EnvSamplerArg, EnvSDKDisabled, EnvTracesExporter} {
		t.Setenv(k, "")
	}
	p, err := New(context.Background(), Config{SampleRatio: 0.5})
	if err != nil || p != nil {
		t.Fatalf("New without an endpoint: %v, %v", p, err)
	}
	h := http.NotFoundHandler()
	if got := p.Handler("public", true, h); got == nil {
		t.Fatal("nil handler")
	}
	outer, inner := p.ServerInterceptors()
	if outer != nil || inner != nil || p.ClientInterceptor() != nil || p.PgxTracer() != nil || p.RiverMiddleware() != nil {
		t.Fatal("a helper of a nil provider installs something")
	}
	if p.Shutdown(context.Background()) != nil || p.ForceFlush(context.Background()) != nil || p.Enabled() {
		t.Fatal("nil provider")
	}
	t.Setenv(EnvEndpoint, "http://127.0.0.1:4318")
	t.Setenv(EnvTracesExporter, "none")
	if (Config{}).Enabled() {
		t.Fatal("enabled with OTEL_TRACES_EXPORTER=none")
	}
}

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		cfg  float64
		env  string
		want float64
		bad  bool
	}{
		{0, "", 1, false},
		{0, "0.25", 0.25, false},
		{0.01, "0.25", 0.01, false},
		{0, "2", 0, true},
		{0, "x", 0, true},
		{1.5, "", 0, true},
	} {
		t.Setenv(EnvSamplerArg, c.env)
		got, err := Config{SampleRatio: c.cfg}.Ratio()
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ratio %v env %q: %v, %v", c.cfg, c.env, got, err)
		}
	}
	if _, err := New(context.Background(), Config{Endpoint: "ftp://x"}); err == nil {
		t.Error("an ftp endpoint accepted")
	}
}

// The traced listener's response writer still reaches the connection
// (platform.bodyDeadline sets read deadlines through it) and a mux's route
// names the span.
func TestHandlerKeepsResponseControllerAndNamesRoute(t *testing.T) {
	p, rec := recordingProvider()
	p.public = publicPropagator{sampler: sdktrace.TraceIDRatioBased(1)}
	var deadlineErr error
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{id}", func(w http.ResponseWriter, r *http.Request) {
		deadlineErr = http.NewResponseController(w).SetReadDeadline(time.Now().Add(time.Second))
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(p.Handler("webhooks", true, mux))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/hooks/abc?token=x", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if deadlineErr != nil {
		t.Fatalf("SetReadDeadline through the traced writer: %v", deadlineErr)
	}
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "webhooks POST /hooks/{id}" || spans[0].SpanKind() != trace.SpanKindServer {
		t.Fatalf("%d spans, the first %q %v", len(spans), spans[0].Name(), spans[0].SpanKind())
	}
}
