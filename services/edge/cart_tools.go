package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// The cart operations (UCP cart, BCP-renamed br.dev.bcp.shopping.cart):
// MCP tools create_cart {meta, cart}, get_cart {meta, id}, update_cart
// {meta, id, cart} (full replacement) and cancel_cart {meta with
// idempotency-key, id}; REST POST {base}/carts, GET and PUT
// {base}/carts/{id}, POST {base}/carts/{id}/cancel with the cart object as
// the body. One table row per operation, both bindings through runCart:
// validate against the BCP cart schema, fetch and negotiate the agent
// profile, claim the idempotency key (as checkout does: honoured on
// create and update, required on cancel), call the checkout service,
// splice the "ucp" envelope in. A cart becomes a checkout through
// create_checkout's cart_id (the checkout service).

// cartOp is one cart operation.
type cartOp struct {
	name, title, description string
	method, path             string // REST route under restBase
	body                     bool   // the REST body is the cart
	requireKey               bool
	run                      func(ctx context.Context, c checkoutv1connect.CheckoutServiceClient, agent *checkoutv1.Agent, id string, cart json.RawMessage) (*checkoutv1.CartResult, error)
}

var cartOps = []cartOp{
	{
		name: "create_cart", title: "Criar carrinho", method: http.MethodPost, path: "/carts", body: true,
		description: "Create a cart: items priced with estimated totals in centavos (BRL), no stock reserved and no payment. Arguments: meta (required), " +
			"cart (required): line_items with item.id (a variant id from search_catalog) and quantity, optionally buyer, context and discounts.codes. " +
			"Turn it into a checkout with create_checkout and checkout.cart_id.",
		run: func(ctx context.Context, c checkoutv1connect.CheckoutServiceClient, a *checkoutv1.Agent, _ string, cart json.RawMessage) (*checkoutv1.CartResult, error) {
			r, err := c.CreateCart(ctx, connect.NewRequest(&checkoutv1.CreateCartRequest{Agent: a, CartJson: cart}))
			return cartResult(r, err)
		},
	},
	{
		name: "get_cart", title: "Consultar carrinho", method: http.MethodGet, path: "/carts/{id}",
		description: "Get a cart you created. Arguments: meta (required), id (required). Canceled or converted carts are not found.",
		run: func(ctx context.Context, c checkoutv1connect.CheckoutServiceClient, a *checkoutv1.Agent, id string, _ json.RawMessage) (*checkoutv1.CartResult, error) {
			r, err := c.GetCart(ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: a, Id: id}))
			return cartResult(r, err)
		},
	},
	{
		name: "update_cart", title: "Atualizar carrinho", method: http.MethodPut, path: "/carts/{id}", body: true,
		description: "Update a cart. This is a full replacement: send every line item, the buyer and the discount codes you want to keep. " +
			"Arguments: meta (required), id (required), cart (required, without id).",
		run: func(ctx context.Context, c checkoutv1connect.CheckoutServiceClient, a *checkoutv1.Agent, id string, cart json.RawMessage) (*checkoutv1.CartResult, error) {
			r, err := c.UpdateCart(ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: a, Id: id, CartJson: cart}))
			return cartResult(r, err)
		},
	},
	{
		name: "cancel_cart", title: "Cancelar carrinho", method: http.MethodPost, path: "/carts/{id}/cancel", requireKey: true,
		description: "Cancel a cart; it is not found afterwards. Arguments: meta (required, with meta[\"idempotency-key\"], a UUID), id (required).",
		run: func(ctx context.Context, c checkoutv1connect.CheckoutServiceClient, a *checkoutv1.Agent, id string, _ json.RawMessage) (*checkoutv1.CartResult, error) {
			r, err := c.CancelCart(ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: a, Id: id}))
			return cartResult(r, err)
		},
	},
}

// cartResult is a service answer's result; a failed call has no response.
func cartResult[T any, P interface {
	*T
	GetResult() *checkoutv1.CartResult
}](r *connect.Response[T], err error) (*checkoutv1.CartResult, error) {
	if err != nil {
		return nil, err
	}
	return P(r.Msg).GetResult(), nil
}

// cartArgs are the arguments the executor reads after validation.
type cartArgs struct {
	Meta struct {
		Agent struct {
			Profile string `json:"profile"`
		} `json:"ucp-agent"`
		IdempotencyKey string `json:"idempotency-key"`
	} `json:"meta"`
	ID   string          `json:"id"`
	Cart json.RawMessage `json:"cart"`
}

// cartValidator is compiled once per process: cart schemas do not depend
// on what was negotiated.
var cartValidator = sync.OnceValues(bcpschema.NewCartValidator)

// addCartTools registers the cart tools on an MCP server.
func (m *mcpEdge) addCartTools(s *mcp.Server) error {
	for _, op := range cartOps {
		in, err := bcpschema.CartToolInputSchema(op.name)
		if err != nil {
			return err
		}
		out, err := bcpschema.CartToolOutputSchema(op.name)
		if err != nil {
			return err
		}
		op := op
		s.AddTool(&mcp.Tool{Name: op.name, Title: op.title, Description: op.description, InputSchema: in, OutputSchema: out},
			func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
				defer func() {
					if p := recover(); p != nil {
						m.log.ErrorContext(ctx, "edge: panic in tool handler", "tool", op.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
						res, err = nil, errInternal.rpc()
					}
				}()
				payload, err := m.runCart(ctx, bindingMCP, op, req.Params.Arguments)
				if err != nil {
					return nil, asProtoError(err).rpc()
				}
				return toolResult(payload), nil
			})
	}
	return nil
}

// runCart executes one cart operation for either binding.
func (m *mcpEdge) runCart(ctx context.Context, b binding, op cartOp, raw json.RawMessage) (json.RawMessage, error) {
	if pe := m.e.limits.check(ctx); pe != nil {
		return nil, pe
	}
	t := tenantFrom(ctx)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	v, err := cartValidator()
	if err != nil {
		return nil, err
	}
	if err := v.ValidateToolInput(op.name, raw); err != nil {
		return nil, invalidParams(err)
	}
	var args cartArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, invalidParams(err)
	}
	dev := t.GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT
	profile, err := m.profiles.Get(ctx, args.Meta.Agent.Profile, dev)
	if err != nil {
		return nil, discoveryError(err)
	}
	offer, err := m.offer(ctx, t.GetId())
	if err != nil {
		return nil, err
	}
	neg, err := agentprofile.Negotiate(offer, profile)
	if err != nil {
		return nil, discoveryError(err)
	}
	baseURL := m.e.BaseURL(hostFrom(ctx))
	if !neg.Has(bcpnames.Cart) {
		return m.errorResponse(bcp.Error(bcp.CodeCapabilitiesIncompatible, bcp.SeverityUnrecoverable, "",
			"Este agente e a loja não têm carrinho em comum; use create_checkout."), baseURL+"/", true)
	}
	caps := make([]string, 0, len(neg.Capabilities))
	for name := range neg.Capabilities {
		caps = append(caps, name)
	}
	slices.Sort(caps)
	agent := &checkoutv1.Agent{ProfileUrl: args.Meta.Agent.Profile, Capabilities: caps, BaseUrl: baseURL}
	// The idempotency claim is the checkout one, keyed by the tool name.
	var ta toolArgs
	ta.Meta.Agent.Profile, ta.Meta.IdempotencyKey = args.Meta.Agent.Profile, args.Meta.IdempotencyKey
	return m.idempotent(ctx, b, toolSpec{name: op.name}, ta, raw, func() (json.RawMessage, error) {
		res, err := op.run(ctx, m.checkout, agent, args.ID, args.Cart)
		if err != nil {
			if e := apperr.As(err); e.Kind == apperr.KindNotFound {
				return m.errorResponse(bcp.Error(bcp.CodeNotFound, bcp.SeverityUnrecoverable, "$.id", "Carrinho não encontrado."), baseURL+"/", false)
			}
			return nil, cartServiceError(err)
		}
		if res.GetErrorResponse() {
			return m.wrap(res.GetCartJson(), envelope{Version: bcpnames.Version, Status: "error"})
		}
		return m.wrap(res.GetCartJson(), envelope{Version: bcpnames.Version, Capabilities: neg.ResponseCapabilities(bcpnames.Cart)})
	})
}

// cartServiceError is serviceError, except that an invalid argument the
// service names a field of is reported at its JSONPath in the arguments.
func cartServiceError(err error) *protoError {
	e := apperr.As(err)
	if e.Kind != apperr.KindInvalidArgument || e.Field == "" {
		return serviceError(err)
	}
	return &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidParams, code: e.Code, content: e.Message,
		violations: []violation{{Path: "$." + e.Field, Message: e.Message}}}
}

// registerCarts mounts the cart operations on the REST binding. The
// arguments are assembled as for checkout (restArgs): meta from BCP-Agent
// and Idempotency-Key, id from the path, the body as the cart.
func (r *restEdge) registerCarts() {
	for _, op := range cartOps {
		op := op
		spec := toolSpec{name: op.name, requireKey: op.requireKey}
		r.mux.Handle(op.method+" "+restBase+op.path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			defer func() {
				if p := recover(); p != nil {
					r.m.log.ErrorContext(req.Context(), "edge: panic in REST handler", "op", op.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					errInternal.writeREST(w)
				}
			}()
			args, perr := restArgsAs(req, spec, op.body, "cart")
			if perr != nil {
				perr.writeREST(w)
				return
			}
			out, err := r.m.runCart(req.Context(), bindingREST, op, args)
			if err != nil {
				asProtoError(err).writeREST(w)
				return
			}
			status := http.StatusOK
			if op.name == "create_cart" && !isErrorPayload(out) {
				status = http.StatusCreated
			}
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-store")
			w.WriteHeader(status)
			_, _ = w.Write(out)
		}))
	}
}
