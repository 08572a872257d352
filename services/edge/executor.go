package edge

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bcpdev/bcp/internal/apperr"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// One behaviour, two bindings.
//
// Every BCP operation (a row of operations.go), whichever binding carries
// it, runs through run with the operation's tool arguments {meta, id,
// checkout} (cart and catalog: their payload instead of checkout): MCP
// passes params.arguments as they came; REST assembles them from the
// BCP-Agent and Idempotency-Key headers, the path id and the body (the
// payload object). run hands them to the operation's family executor
// (runCheckout here, runCart, runCatalog), which validates them against
// the BCP tool schema (so violation paths are $.checkout… on both),
// fetches and negotiates the agent profile, claims the idempotency key,
// calls the service and splices the negotiated "ucp" envelope in. It answers either the payload (a
// resource or an error_response: a business outcome) or a *protoError,
// which each binding renders its own way: a JSON-RPC error (rpc) or an
// HTTP status with a flat {"code","content"} body (writeREST). Agent
// authentication (agentauth) and response signing wrap both bindings the
// same way, in front of the executor.

// binding names a transport. It scopes idempotency keys, so a REST retry
// and an MCP call can never replay each other's responses by accident.
type binding string

const (
	bindingMCP  binding = "mcp"
	bindingREST binding = "rest"
)

// toolArgs are the parts of the tool arguments the executor reads after
// validation.
type toolArgs struct {
	Meta struct {
		Agent struct {
			Profile string `json:"profile"`
		} `json:"ucp-agent"`
		IdempotencyKey string `json:"idempotency-key"`
	} `json:"meta"`
	ID       string          `json:"id"`
	Checkout json.RawMessage `json:"checkout"`

	// decoded: these are the arguments already decoded (json.Unmarshal
	// into a zero toolArgs) by the binding; admit does not decode again.
	decoded bool
}

// protoError is a protocol error (ucp-digest §9): the request was not
// processed. It is the edge's one error type, with its renderings: status
// and the flat body for REST (writeREST), rpcCode for MCP tool calls
// through the SDK (rpc) and for the MCP transport's own refusals
// (writeTransport, transport.go).
type protoError struct {
	status     int
	rpcCode    int64
	code       string
	content    string
	violations []violation // schema violations (invalid_params)
	// retryAfter is the Retry-After in seconds on 429 (0: the default 1).
	retryAfter int
	// id is the JSON-RPC id a transport refusal answers (writeTransport).
	id json.RawMessage
}

type violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *protoError) Error() string { return e.code + ": " + e.content }

func newProtoError(status int, rpcCode int64, code, content string) *protoError {
	return &protoError{status: status, rpcCode: rpcCode, code: code, content: content}
}

var errInternal = newProtoError(http.StatusInternalServerError, codeInternal, "internal_error", "internal error")

// asProtoError maps any executor failure to a protocol error; anything not
// already one is an internal error.
func asProtoError(err error) *protoError {
	var pe *protoError
	if errors.As(err, &pe) {
		return pe
	}
	return errInternal
}

// rpc renders the error for MCP: a JSON-RPC error with data {code,
// content} (+ paths and violations for schema violations).
func (e *protoError) rpc() *jsonrpc.Error {
	if e.rpcCode == codeInvalidParams && e.violations != nil {
		data, _ := json.Marshal(e.body())
		return &jsonrpc.Error{Code: codeInvalidParams, Message: "invalid params: " + e.content, Data: data}
	}
	data, _ := json.Marshal(map[string]string{"code": e.code, "content": e.content})
	return &jsonrpc.Error{Code: e.rpcCode, Message: e.content, Data: data}
}

type protoErrorBody struct {
	Code       string      `json:"code"`
	Content    string      `json:"content"`
	Paths      []string    `json:"paths,omitempty"`
	Violations []violation `json:"violations,omitempty"`
}

func (e *protoError) body() protoErrorBody {
	b := protoErrorBody{Code: e.code, Content: e.content, Violations: e.violations}
	for _, v := range e.violations {
		b.Paths = append(b.Paths, v.Path)
	}
	return b
}

// writeREST renders the error for REST: its HTTP status, Retry-After on 429
// and 503 (and on 409 request_in_flight), and the flat body.
func (e *protoError) writeREST(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.status == http.StatusServiceUnavailable || e.status == http.StatusTooManyRequests || e.code == codeRequestInFlight {
		h.Set("Retry-After", e.retryAfterHeader())
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(e.body())
}

// retryAfterHeader is the Retry-After value: whole seconds, at least 1.
func (e *protoError) retryAfterHeader() string {
	return strconv.Itoa(max(1, e.retryAfter))
}

func invalidParams(err error) *protoError {
	e := newProtoError(http.StatusBadRequest, codeInvalidParams, "invalid_params", "the arguments do not match the BCP schema")
	var ve *bcpschema.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			e.violations = append(e.violations, violation{Path: v.Path, Message: v.Message})
		}
		e.content = ve.Error()
	} else {
		e.violations = []violation{{Path: "$", Message: err.Error()}}
	}
	return e
}

func discoveryError(err error) *protoError {
	var pe *agentprofile.Error
	if errors.As(err, &pe) {
		return newProtoError(pe.HTTPStatus(), codeDiscovery, pe.Code, pe.Message)
	}
	return newProtoError(http.StatusFailedDependency, codeDiscovery, "profile_unreachable", "the agent profile could not be used")
}

// serviceError maps a failed service call to a protocol error, through
// apperr's one kind → (HTTP status, JSON-RPC code) table.
func serviceError(err error) *protoError {
	w, e := apperr.WireOf(err)
	switch {
	case w.HTTPStatus == http.StatusServiceUnavailable:
		return newProtoError(w.HTTPStatus, int64(w.RPCCode), "unavailable", "the merchant is temporarily unavailable; retry shortly")
	case w.RPCCode == codeInternal:
		slog.Error("edge: service call failed", "err", err)
		return errInternal
	}
	return newProtoError(w.HTTPStatus, int64(w.RPCCode), e.Code, e.Message)
}

// opRequest is one operation as a binding hands it over.
type opRequest struct {
	binding binding
	op      *operation
	// args are the tool arguments {meta, id, checkout}.
	args json.RawMessage
	// decoded is args decoded into toolArgs when the binding had to
	// (MCP with an Idempotency-Key header), else nil.
	decoded *toolArgs
}

// run executes one operation for any binding. The payload is a business
// outcome (resource or error_response, with its "ucp" envelope); a
// *protoError means the request was not processed.
func (m *mcpEdge) run(ctx context.Context, req opRequest) (out json.RawMessage, err error) {
	defer m.e.tools.observe(ctx, req, time.Now(), &out, &err) // toolmetrics.go
	// The operation's span, when the request is traced (tracing.go).
	ctx, endSpan := startOperation(ctx, req)
	defer func() { endSpan(out, err) }()
	// The request deadline (Config.RequestTimeout), which the MCP SDK
	// does not hand its tool handlers with the request's context.
	ctx, cancel := withRequestDeadline(ctx)
	defer cancel()
	// Rate limits first, for every operation of every binding: a refused
	// request costs no validation, profile fetch or service call
	// (ratelimit.go).
	if pe := m.e.limits.check(ctx); pe != nil {
		return nil, pe
	}
	// Then the input guard, the same for every operation of both
	// bindings, before any family's own validation: a NUL character, text
	// that is not UTF-8 or a size beyond the guard's limits anywhere in
	// the arguments is invalid params at its path, and never reaches a
	// service (PostgreSQL cannot store a NUL; encoding/json would turn
	// invalid UTF-8 into U+FFFD on the way).
	if e := bcpschema.CheckInput(req.args); e != nil {
		return nil, invalidParams(e)
	}
	return req.op.family.run(m, ctx, req)
}

// admission is what an operation knows once its arguments are valid and
// its agent's profile negotiated.
type admission struct {
	raw     json.RawMessage // the arguments ({} when none came)
	profile *agentprofile.Profile
	neg     *agentprofile.Result
	baseURL string
}

// admit is the start every operation shares: its arguments validated
// against its tool schema for the capabilities, decoded into args, the
// agent profile they name (profileURL, read after decoding) fetched and
// negotiated with the merchant's offer.
func (m *mcpEdge) admit(ctx context.Context, op *operation, raw json.RawMessage, capabilities []string, args any, profileURL func() string) (*admission, error) {
	t := tenantFrom(ctx)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	v, err := m.validator(capabilities)
	if err != nil {
		return nil, err
	}
	// run has passed raw through the input guard (CheckInput) already.
	if err := v.ValidateCheckedToolInput(op.name, raw); err != nil {
		return nil, invalidParams(err)
	}
	if d, ok := args.(*toolArgs); !ok || !d.decoded {
		if err := json.Unmarshal(raw, args); err != nil {
			return nil, invalidParams(err)
		}
	}
	dev := t.GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT
	profile, err := m.profiles.Get(ctx, profileURL(), dev)
	if err != nil {
		return nil, discoveryError(err)
	}
	// The merchant's offer negotiated with the profile, kept (negcache.go).
	neg, err := m.negotiate(ctx, t.GetId(), profile)
	if err != nil {
		return nil, err
	}
	return &admission{raw: raw, profile: profile, neg: neg, baseURL: m.e.BaseURL(hostFrom(ctx))}, nil
}

// runCheckout executes a checkout or order operation: validate, negotiate,
// claim the idempotency key, call the service, wrap.
func (m *mcpEdge) runCheckout(ctx context.Context, req opRequest) (json.RawMessage, error) {
	// Without AP2 in the schema set: with AP2 negotiated the checkout
	// service refuses a completion without a mandate as the extension says
	// (mandate_required, a business outcome), not as a schema violation,
	// and for an agent that does not speak AP2 there is nothing to require.
	op := req.op
	var args toolArgs
	if req.decoded != nil {
		args = *req.decoded
	}
	a, err := m.admit(ctx, op, req.args, withoutAP2(checkoutCapabilities(tenantFrom(ctx).GetCapabilities())), &args, func() string { return args.Meta.Agent.Profile })
	if err != nil {
		return nil, err
	}
	raw, profile, neg, baseURL := a.raw, a.profile, a.neg, a.baseURL
	if neg.Incompatible {
		return m.errorResponse(bcp.Error(bcp.CodeCapabilitiesIncompatible, bcp.SeverityUnrecoverable, "",
			"Este agente e a loja não têm capacidades de checkout em comum; continue pela loja."), baseURL+"/", true)
	}
	caps := make([]string, 0, len(neg.Capabilities))
	for name := range neg.Capabilities {
		caps = append(caps, name)
	}
	slices.Sort(caps)
	call := &opCall{
		agent:   &checkoutv1.Agent{ProfileUrl: args.Meta.Agent.Profile, Capabilities: caps, BaseUrl: baseURL},
		profile: profile,
		id:      args.ID,
		payload: args.Checkout,
		idem:    idempotencyOf(req.binding, op, args.Meta.Agent.Profile, args.Meta.IdempotencyKey, raw),
	}
	return awaitKey(ctx, func() (json.RawMessage, error) {
		return m.execute(ctx, op, call, neg, baseURL)
	})
}
