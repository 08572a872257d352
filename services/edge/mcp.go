package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// JSON-RPC error codes of the BCP binding (declared once, in apperr).
const (
	codeProtocol      = apperr.RPCProtocol
	codeDiscovery     = apperr.RPCDiscovery
	codeInvalidParams = apperr.RPCInvalidParams
	codeInternal      = apperr.RPCInternal
)

// maxMCPBody bounds a tool call; BCP payloads are small.
const maxMCPBody = 1 << 20

// maxOffers bounds the per-merchant negotiation offers kept.
const maxOffers = 2048

// mcpEdge serves the BCP operations (operations.go) over MCP (streamable HTTP,
// stateless, JSON responses): one *mcp.Server per capability set, shared
// by every merchant with that set (the tools find the merchant in the
// request context). Building a server costs ≈ 15 ms of CPU (the SDK
// re-parses each tool's schemas), so per-merchant servers made every
// merchant's first call slow and grew memory with the number of merchants.
type mcpEdge struct {
	e        *Edge
	checkout checkoutv1connect.CheckoutServiceClient
	orders   ordersv1connect.OrdersServiceClient
	catalog  catalogv1connect.CatalogServiceClient // catalog_tools.go
	tenants  tenantsv1connect.TenantServiceClient  // ap2.go: merchant authorizations
	profiles *agentprofile.Fetcher
	log      *slog.Logger
	handler  http.Handler

	mu       sync.Mutex
	servers  map[string]*mcp.Server                // capability set → server
	offers   map[string]agentprofile.BusinessOffer // tenant id → negotiation offer
	offerGen uint64                                // bumped on invalidation; stale fills are dropped
	shared   map[string]any                        // kind + JSON → offer part shared by merchants (shareOffer)

	// tools are the operations' tools (operations.go), validated by
	// validator.
	tools      []bcpschema.Tool
	vmu        sync.Mutex
	validators map[string]*bcpschema.ToolValidator // capability set → validator

	smu     sync.Mutex
	schemas map[string]json.RawMessage // tool + capability set → advertised input schema

	nmu  sync.Mutex
	negs map[negKey]negEntry // (merchant, agent profile) → negotiation (negcache.go)
	envs map[envKey][]byte   // (negotiation, root capability) → "ucp" envelope
}

func newMCPEdge(e *Edge, c Clients, profiles *agentprofile.Fetcher, log *slog.Logger) *mcpEdge {
	m := &mcpEdge{e: e, checkout: c.Checkout, orders: c.Orders, catalog: c.Catalog, tenants: c.Tenants, profiles: profiles, log: log,
		servers: map[string]*mcp.Server{}, offers: map[string]agentprofile.BusinessOffer{}, shared: map[string]any{}, tools: Tools(), validators: map[string]*bcpschema.ToolValidator{}, schemas: map[string]json.RawMessage{}}
	m.handler = mcp.NewStreamableHTTPHandler(m.serverFor, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The Host is checked against the tenant registry before we get
		// here; the SDK's loopback guard would refuse every merchant host
		// reached through a local proxy.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        maxMCPBody,
	})
	return m
}

func (m *mcpEdge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Transport errors are JSON-RPC errors, from one place (transport.go).
	id, te := checkTransport(r)
	if te != nil {
		te.writeTransport(w)
		return
	}
	tw := &transportWriter{ResponseWriter: w, id: id}
	sw, r := withRPCStatus(tw, r)
	m.handler.ServeHTTP(sw, r)
	tw.finish()
}

func (m *mcpEdge) invalidate(tenantID string) {
	m.mu.Lock()
	m.offerGen++
	delete(m.offers, tenantID)
	m.mu.Unlock()
}

func (m *mcpEdge) reset() {
	m.mu.Lock()
	m.offerGen++
	clear(m.offers)
	m.mu.Unlock()
}

// serverFor returns the tenant's server. The SDK asks twice per request:
// the second time gets the first answer (edgeRequest.server).
func (m *mcpEdge) serverFor(r *http.Request) *mcp.Server {
	er := requestFrom(r.Context())
	if er == nil || er.tenant == nil {
		return nil
	}
	if er.server != nil {
		return er.server
	}
	s := m.serverOf(r.Context(), er.tenant)
	er.server = s
	return s
}

// serverOf returns the server of t's capability set, built on first use.
func (m *mcpEdge) serverOf(ctx context.Context, t *tenantsv1.Tenant) *mcp.Server {
	caps := checkoutCapabilities(t.GetCapabilities())
	key := strings.Join(caps, ",")
	m.mu.Lock()
	s, ok := m.servers[key]
	m.mu.Unlock()
	if ok {
		return s
	}
	s, err := m.buildServer(caps)
	if err != nil {
		m.log.ErrorContext(ctx, "edge: cannot build MCP server", "err", err)
		return nil
	}
	m.mu.Lock()
	m.servers[key] = s
	m.mu.Unlock()
	return s
}

// buildServer makes the MCP server of a capability set: its tools' schemas
// follow the capabilities; the merchant comes from each request's context.
// Tools advertise compact input schemas and no output schema (toolSchema);
// the initialize result's instructions teach the purchase flow.
func (m *mcpEdge) buildServer(caps []string) (*mcp.Server, error) {
	// Shared by merchants: the merchant's name is in its profile
	// (/.well-known/bcp), not in serverInfo.
	s := mcp.NewServer(&mcp.Implementation{Name: "bcp-checkout", Title: "BCP checkout", Version: bcpnames.Version},
		&mcp.ServerOptions{Instructions: instructions, Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.AddReceivingMiddleware(m.e.usage.mcpMiddleware())
	for i := range operations {
		op := &operations[i]
		in, err := m.toolSchema(op, caps)
		if err != nil {
			return nil, err
		}
		s.AddTool(&mcp.Tool{Name: op.name, Title: op.title, Description: op.description, InputSchema: in}, m.toolHandler(op))
	}
	return s, nil
}

// toolHandler serves one operation's tool.
func (m *mcpEdge) toolHandler(op *operation) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		// The SDK does not recover handler panics; one bad request must
		// not take the process down.
		defer func() {
			if p := recover(); p != nil {
				m.log.ErrorContext(ctx, "edge: panic in tool handler", "tool", op.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = nil, errInternal.rpc()
			}
		}()
		var header http.Header
		if req.Extra != nil {
			header = req.Extra.Header
		}
		res, err = m.call(ctx, op, req.Params.Arguments, header)
		if err != nil {
			pe := asProtoError(err)
			noteRPCStatus(ctx, pe)
			// bare: the SDK copies the code only from an unwrapped *jsonrpc.Error
			return nil, pe.rpc()
		}
		return res, nil
	}
}

// toolSchema returns the input schema a tool advertises for a capability
// set (bcpschema.ToolAdvertisedSchema), built once per set and shared by
// every merchant with that set. Every tool definition lands in the agent
// model's context, so the advertised schema is the compact one, in the
// keywords single-type function-calling dialects accept; arguments are
// still validated against the full schema (validator). No tool declares
// an outputSchema: MCP makes it optional, the full ones cost 21–39 KB a
// tool, and results are the BCP resources the descriptions name
// (bcpschema.ToolOutputSchema still describes them; tests validate answers
// against it).
func (m *mcpEdge) toolSchema(op *operation, caps []string) (json.RawMessage, error) {
	key := op.name + "|" + strings.Join(caps, ",")
	m.smu.Lock()
	defer m.smu.Unlock()
	if in, ok := m.schemas[key]; ok {
		return in, nil
	}
	in, err := bcpschema.ToolAdvertisedSchema(op.tool(), caps)
	if err != nil {
		return nil, err
	}
	m.schemas[key] = in
	return in, nil
}

// checkoutCapabilities keeps the capabilities that shape checkout payloads.
func checkoutCapabilities(all []string) []string {
	var out []string
	for _, c := range all {
		if info, ok := bcpnames.LookupCapability(c); ok && (c == bcpnames.Checkout || info.ExtendsCapability(bcpnames.Checkout)) {
			out = append(out, c)
		}
	}
	return out
}

func rawStrings(in []json.RawMessage) []string {
	out := make([]string, len(in))
	for i, r := range in {
		out[i] = string(r)
	}
	return out
}

// execute runs a checkout or order operation's service call and wraps its
// result.
func (m *mcpEdge) execute(ctx context.Context, op *operation, call *opCall, neg *agentprofile.Result, baseURL string) (json.RawMessage, error) {
	res, err := op.call(ctx, m, call)
	if err != nil {
		if e := apperr.As(err); e.Kind == apperr.KindNotFound {
			what := "Checkout não encontrado."
			if op.capability == bcpnames.Order {
				what = "Pedido não encontrado."
			}
			return m.errorResponse(bcp.Error(bcp.CodeNotFound, bcp.SeverityUnrecoverable, "$.id", what), baseURL+"/", false)
		}
		return nil, serviceError(err)
	}
	if res.errorResponse {
		return m.wrap(res.body, envelope{Version: bcpnames.Version, Status: "error"})
	}
	env, err := m.responseEnvelope(neg, op.capability) // negcache.go
	if err != nil {
		return nil, err
	}
	out, err := m.wrapEncoded(res.body, env)
	if err != nil || op.capability != bcpnames.Checkout || !neg.Has(bcpnames.AP2Mandate) {
		return out, err
	}
	return m.authorize(ctx, out)
}

// envelope is the "ucp" member of a response.
type envelope struct {
	Version         string `json:"version"`
	Status          string `json:"status,omitempty"`
	Capabilities    any    `json:"capabilities,omitempty"`
	PaymentHandlers any    `json:"payment_handlers,omitempty"`
}

// errorResponse is a business outcome with no resource.
func (m *mcpEdge) errorResponse(msg bcp.Message, continueURL string, incompatible bool) (json.RawMessage, error) {
	u := envelope{Version: bcpnames.Version, Status: "error"}
	if incompatible {
		u.Capabilities = map[string]any{}
	}
	body, err := json.Marshal(bcp.ErrorResponse{Messages: []bcp.Message{msg}, ContinueURL: continueURL})
	if err != nil {
		return nil, err
	}
	return m.wrap(body, u)
}

// wrap splices the "ucp" envelope in front of a service's JSON object.
func (m *mcpEdge) wrap(body []byte, u envelope) (json.RawMessage, error) {
	env, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	return m.wrapEncoded(body, env)
}

// wrapEncoded is wrap with the envelope already marshalled.
func (m *mcpEdge) wrapEncoded(body, env []byte) (json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' {
		return nil, errors.New("edge: service returned a non-object")
	}
	var b bytes.Buffer
	b.Grow(len(env) + len(body) + 8)
	b.WriteString(`{"ucp":`)
	b.Write(env)
	if rest := bytes.TrimSpace(body[1:]); len(rest) > 0 && rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(body[1:])
	return json.RawMessage(b.Bytes()), nil
}

// toolResult is the MCP rendering of a payload: structuredContent and the
// same JSON as the text block.
func toolResult(out json.RawMessage) *mcp.CallToolResult {
	return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
}

// call runs one MCP tool call through its operation's executor. The only
// MCP-specific rule: an Idempotency-Key header, when sent, must equal
// meta["idempotency-key"].
func (m *mcpEdge) call(ctx context.Context, op *operation, raw json.RawMessage, header http.Header) (*mcp.CallToolResult, error) {
	var decoded *toolArgs
	if hk := header.Get("Idempotency-Key"); hk != "" {
		var args toolArgs
		if json.Unmarshal(raw, &args) == nil {
			if args.Meta.IdempotencyKey != "" && args.Meta.IdempotencyKey != hk {
				return nil, newProtoError(http.StatusBadRequest, codeProtocol, "idempotency_key_mismatch", "the Idempotency-Key header and meta[\"idempotency-key\"] differ")
			}
			// The executor uses them rather than decoding them again.
			args.decoded = true
			decoded = &args
		}
	}
	out, err := m.run(ctx, opRequest{binding: bindingMCP, op: op, args: raw, decoded: decoded})
	if err != nil {
		return nil, err
	}
	return toolResult(out), nil
}

// validator returns the compiled argument validator of every operation for
// a capability set (compiling costs tens of milliseconds, so it happens
// once per set).
func (m *mcpEdge) validator(caps []string) (*bcpschema.ToolValidator, error) {
	key := strings.Join(caps, ",")
	m.vmu.Lock()
	defer m.vmu.Unlock()
	if v, ok := m.validators[key]; ok {
		return v, nil
	}
	v, err := bcpschema.NewToolValidator(m.tools, caps...)
	if err != nil {
		return nil, err
	}
	m.validators[key] = v
	return v, nil
}

// offer is the merchant's side of the negotiation, derived from the same
// data as its profile and kept until the tenant changes. The discovery data
// is read only on a miss.
func (m *mcpEdge) offer(ctx context.Context, tenantID string) (agentprofile.BusinessOffer, error) {
	m.mu.Lock()
	o, ok := m.offers[tenantID]
	gen := m.offerGen
	m.mu.Unlock()
	if ok {
		return o, nil
	}
	d, err := m.e.data.get(ctx, tenantID)
	if err != nil {
		return o, serviceError(err)
	}
	doc, err := json.Marshal(BuildProfile(d, "https://offer.invalid"))
	if err != nil {
		return o, err
	}
	if o, err = agentprofile.OfferFromProfileJSON(doc); err != nil {
		return o, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o = m.shareOffer(o)
	if m.offerGen != gen {
		return o, nil // the tenant changed meanwhile: use it, do not keep it
	}
	// Bounded: an offer is ≈ 3 KB and cheap to rebuild; 10 000 merchants
	// must not cost 30 MB (bcpbench scale). Arbitrary eviction.
	for k := range m.offers {
		if len(m.offers) < maxOffers {
			break
		}
		delete(m.offers, k)
	}
	m.offers[tenantID] = o
	return o, nil
}

// shareOffer makes o use the parts other merchants' offers already hold
// when they are equal: merchants with the same capabilities have the same
// capability entries, and handler configurations repeat too. Offers are
// read-only once built, so sharing is safe, and thousands of cached offers
// then cost the garbage collector a few objects each instead of ≈ 50.
// Called with m.mu held.
func (m *mcpEdge) shareOffer(o agentprofile.BusinessOffer) agentprofile.BusinessOffer {
	if len(m.shared) >= maxSharedParts {
		clear(m.shared) // pathological variety: start over, still bounded
	}
	// The key names the part's type too: two parts of different types may
	// marshal alike ("null").
	share := func(kind string, v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			return v
		}
		key := kind + string(b)
		if s, ok := m.shared[key]; ok {
			return s
		}
		m.shared[key] = v
		return v
	}
	o.Capabilities = share("capabilities:", o.Capabilities).(map[string][]agentprofile.CapabilityEntry)
	handlers := make(map[string][]agentprofile.HandlerEntry, len(o.PaymentHandlers))
	for name, hs := range o.PaymentHandlers {
		handlers[name] = share("handlers:", hs).([]agentprofile.HandlerEntry)
	}
	o.PaymentHandlers = handlers
	return o
}

// maxSharedParts bounds the distinct offer parts kept for sharing.
const maxSharedParts = 4096

func hostFrom(ctx context.Context) string {
	if er := requestFrom(ctx); er != nil {
		return er.host
	}
	return ""
}
