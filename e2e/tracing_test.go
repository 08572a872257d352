package e2e

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/platform"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

// otlpReceiver is an OTLP/HTTP trace collector (protobuf, as the
// platform's exporter sends): it keeps every span it is sent, with its
// process's resource.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
	raw   []string // each request's resource spans as JSON, for the secret grep
}

type receivedSpan struct {
	roles string // the process's bcp.roles
	span  *tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	o := &otlpReceiver{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			js, _ := protojson.Marshal(rs)
			o.raw = append(o.raw, string(js))
			roles := attrString(rs.GetResource().GetAttributes(), "bcp.roles")
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					o.spans = append(o.spans, receivedSpan{roles: roles, span: sp})
				}
			}
		}
		o.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// config is the tracing configuration of a process exporting here, every
// trace recorded.
func (o *otlpReceiver) config() tracing.Config {
	return tracing.Config{Endpoint: o.srv.URL, SampleRatio: 1}
}

// trace returns the spans received so far with trace id id.
func (o *otlpReceiver) trace(id []byte) []receivedSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []receivedSpan
	for _, s := range o.spans {
		if string(s.span.GetTraceId()) == string(id) {
			out = append(out, s)
		}
	}
	return out
}

func (o *otlpReceiver) everything() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.raw)
}

func attrString(as []*commonpb.KeyValue, key string) string {
	for _, a := range as {
		if a.GetKey() == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// traceparentTransport sends every request with the traceparent of the
// context it was made with (the agent's purchase span).
type traceparentTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (t traceparentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	propagation.TraceContext{}.Inject(t.ctx, propagation.HeaderCarrier(r.Header))
	return t.base.RoundTrip(r)
}

// headerRecorder is the agent platform's order webhook receiver; it keeps
// each delivery's traceparent.
type headerRecorder struct {
	mu           sync.Mutex
	traceparents []string
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h.mu.Lock()
	h.traceparents = append(h.traceparents, r.Header.Get("traceparent"))
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (h *headerRecorder) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.traceparents)
}

// One MCP Pix purchase on the platform run one role per process, each
// exporting its spans to an in-test OTLP receiver: the agent sends one
// traceparent with each of its calls and the buyer's bank (the PSP
// simulator, a process of its own) pays within the same trace, so the
// purchase is one trace whose spans come from every process — the edge,
// checkout, pricing, catalog, payments and orders — and the PSP's webhook
// (the simulator's delivery and the edge's webhook listener), with the jobs
// between them and the order webhook to the agent's platform; every span's
// parent is in the trace but the agent's root; the tenant and checkout ids
// are on the spans; and no attribute of any span carries a secret or the
// buyer's e-mail.
func TestTraceAcrossProcesses(t *testing.T) {
	col := newOTLPReceiver(t)
	d := testdb.New(t)
	roles := []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Orders, platform.Checkout, platform.Payments}
	addr := map[string]string{}
	urls := map[string]string{}
	for _, r := range append(roles, platform.Edge) {
		addr[r] = freeAddr(t)
		urls[r] = "http://" + addr[r]
	}
	pub, hooks := freeAddr(t), freeAddr(t)
	_, pubPort, _ := net.SplitHostPort(pub)
	_, hookPort, _ := net.SplitHostPort(hooks)
	delete(urls, platform.Edge)
	sim := startPlatformWith(t, []string{platform.PSPSim}, d.AppURL, nil, func(c *platform.Config) { c.Tracing = col.config() })
	procs := map[string]*platform.Running{platform.PSPSim: sim}
	for _, role := range append(roles, platform.Edge) {
		procs[role] = startPlatformWith(t, []string{role}, d.AppURL, urls, func(c *platform.Config) {
			c.InternalAddr = addr[role]
			c.Tracing = col.config()
			c.SweepEvery = time.Hour // no sweep's trace among the purchase's
			c.Edge = edge.Config{PublicScheme: "http", PublicPort: pubPort}
			switch role {
			case platform.Edge:
				c.DatabaseURL, c.PublicAddr, c.WebhookAddr = "", pub, hooks
			case platform.Payments:
				c.ServiceURLs = map[string]string{platform.PSPSim: sim.PSPSim.ControlURL()}
				for k, v := range urls {
					c.ServiceURLs[k] = v
				}
				c.WebhookPort = hookPort
			}
		})
	}
	// The agent: its own spans go to the receiver too.
	agentTracing, err := tracing.New(context.Background(), tracing.Config{Endpoint: col.srv.URL, SampleRatio: 1, ServiceName: "e2e-agent", Roles: []string{"agent"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agentTracing.Shutdown(context.Background()) })
	ctx, root := agentTracing.Tracer().Start(context.Background(), "agent purchase")
	traceID := root.SpanContext().TraceID()

	const host = "rastro.localhost"
	registry := procs[platform.Tenants]
	m := setupMerchant(t, registry, "Loja Rastro", host, 0)
	recorder := &headerRecorder{}
	hookSrv := httptest.NewServer(recorder)
	t.Cleanup(hookSrv.Close)
	prof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		doc := agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount")
		doc = strings.Replace(doc, `"capabilities":{`, `"capabilities":{"br.dev.bcp.shopping.order":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/order","schema":"https://bcp.dev.br/draft/schemas/shopping/order.json","config":{"webhook_url":"`+hookSrv.URL+`/orders"}}],`, 1)
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(prof.Close)
	profile := prof.URL + "/agent.json"
	key, err := registry.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: profile, Label: "e2e",
	}))
	if err != nil {
		t.Fatal(err)
	}
	apiKey := key.Msg.GetSecret()
	hc := &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, APIKey: apiKey, Host: host,
		Base: traceparentTransport{ctx: ctx, base: http.DefaultTransport}}}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1.0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + pub + "/bcp/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = session.Close() })
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	s := &shopper{t: t, r: procs[platform.Edge], db: d, v: v, profile: profile, merchant: map[string]merchant{host: m},
		agents: map[string]*agent{host: {t: t, s: session, profile: profile, v: v}}}

	// The purchase: ready, complete with Pix, the buyer pays, completed,
	// the order's webhook delivered.
	c := s.ready(host)
	pix := pixOf(t, s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host)))
	payCtx := tenancy.With(ctx, m.tenantID)
	if _, err := registry.ClientsWithToken(operatorToken).Payments.SimulatePixPayment(payCtx,
		connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: pix.Pix.AttemptID})); err != nil {
		t.Fatal(err)
	}
	s.waitStatus(host, c.ID, bcp.StatusCompleted)
	eventually(t, 30*time.Second, "the order webhook delivered", func() bool { return len(recorder.seen()) > 0 })
	root.End()
	if tp := recorder.seen()[0]; !strings.Contains(tp, "-"+traceID.String()+"-") {
		t.Fatalf("the order webhook's traceparent %q is not of the purchase's trace %s", tp, traceID)
	}

	// The trace, once every process has exported its part of it.
	want := []string{platform.Edge, platform.Checkout, platform.Pricing, platform.Catalog, platform.Payments, platform.Orders, platform.PSPSim}
	var spans []receivedSpan
	var problem string
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, p := range procs {
			_ = p.FlushTraces(context.Background())
		}
		_ = agentTracing.ForceFlush(context.Background())
		spans = col.trace(traceID[:])
		problem = traceProblem(spans, want, m.tenantID.String(), c.ID)
		if problem == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if problem != "" {
		t.Fatalf("the purchase's trace (%d spans): %s\n%s", len(spans), problem, describeSpans(spans))
	}
	t.Logf("the purchase's trace, %d spans:\n%s", len(spans), describeSpans(spans))

	// No secret and no buyer data in any span of any trace.
	secrets := map[string]string{
		"the agent's API key": apiKey, "the internal token": internalToken, "the operator token": operatorToken,
		"the master key": string(masterKey), "the buyer's e-mail": "rui@example.com", "a PEM block": "-----BEGIN",
		"a bearer token": "Bearer ", "a basic credential": "Basic ", "a client secret": "client_secret", "an e-mail": "@example.com",
	}
	all := col.everything()
	if len(all) == 0 {
		t.Fatal("nothing exported")
	}
	for _, js := range all {
		for what, s := range secrets {
			if strings.Contains(strings.ToLower(js), strings.ToLower(s)) {
				t.Fatalf("%s in an exported span: %s", what, js)
			}
		}
	}
}

// traceProblem says what is wrong with a purchase's trace ("" if nothing):
// spans from every process in want, the PSP webhook (the simulator's
// delivery, the edge's webhook listener) and a job worked for the
// checkout, every parent present but the root's, exactly one root (the
// agent's), the tenant and checkout ids set, no SQL text.
func traceProblem(spans []receivedSpan, want []string, tenantID, checkoutID string) string {
	ids := map[string]bool{}
	byRole := map[string]int{}
	for _, s := range spans {
		ids[string(s.span.GetSpanId())] = true
		byRole[s.roles]++
	}
	for _, r := range want {
		if byRole[r] == 0 {
			return "no span from the " + r + " process"
		}
	}
	var roots []string
	var tenant, checkout, delivery, webhook, settle, sql, tool bool
	for _, s := range spans {
		sp := s.span
		if p := sp.GetParentSpanId(); len(p) == 0 {
			roots = append(roots, s.roles+":"+sp.GetName())
		} else if !ids[string(p)] {
			return fmt.Sprintf("the parent of %s's span %q is not in the trace", s.roles, sp.GetName())
		}
		for _, a := range sp.GetAttributes() {
			switch a.GetKey() {
			case "bcp.tenant_id":
				tenant = tenant || a.GetValue().GetStringValue() == tenantID
			case "bcp.checkout_id":
				checkout = checkout || a.GetValue().GetStringValue() == checkoutID
			case "db.system.name":
				sql = true
			case "db.query.text", "db.statement":
				return "a SQL span carries the statement: " + sp.GetName()
			}
		}
		switch {
		case s.roles == platform.PSPSim && sp.GetName() == "pspsim webhook delivery":
			delivery = true
		case s.roles == platform.Edge && strings.HasPrefix(sp.GetName(), "webhooks ") && sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER:
			webhook = true
		case s.roles == platform.Checkout && sp.GetName() == "job checkout_settle":
			settle = true
		case s.roles == platform.Edge && sp.GetName() == "tool complete_checkout" && attrString(sp.GetAttributes(), "bcp.outcome") == "ok" &&
			attrString(sp.GetAttributes(), "bcp.checkout_id") == checkoutID && attrString(sp.GetAttributes(), "bcp.tenant_id") == tenantID:
			tool = true
		}
	}
	switch {
	case len(roots) != 1 || roots[0] != "agent:agent purchase":
		return fmt.Sprintf("roots %v, want only the agent's purchase span", roots)
	case !delivery:
		return "no span of the simulator's webhook delivery"
	case !webhook:
		return "no server span of the edge's webhook listener"
	case !settle:
		return "no checkout_settle job span in the checkout process"
	case !sql:
		return "no SQL span"
	case !tool:
		return "no complete_checkout tool span with outcome ok, the tenant and the checkout"
	case !tenant:
		return "no span with the tenant id " + tenantID
	case !checkout:
		return "no span with the checkout id " + checkoutID
	}
	return ""
}

func describeSpans(spans []receivedSpan) string {
	lines := make([]string, 0, len(spans))
	for _, s := range spans {
		lines = append(lines, fmt.Sprintf("%-9s %-60s span %s parent %s", s.roles, s.span.GetName(),
			hex.EncodeToString(s.span.GetSpanId()), hex.EncodeToString(s.span.GetParentSpanId())))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
