package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// The cart operations (UCP cart, BCP-renamed br.dev.bcp.shopping.cart):
// MCP tools create_cart {meta, cart}, get_cart {meta, id}, update_cart
// {meta, id, cart} (full replacement) and cancel_cart {meta with
// idempotency-key, id}; REST POST {base}/carts, GET and PUT
// {base}/carts/{id}, POST {base}/carts/{id}/cancel with the cart object as
// the body. Their rows are in operations.go; both bindings run runCart:
// validate against the BCP cart schema, fetch and negotiate the agent
// profile, name the idempotency key (as checkout does: honoured on
// create and update, required on cancel), call the checkout service,
// splice the "ucp" envelope in. A cart becomes a checkout through
// create_checkout's cart_id (the checkout service).

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

// runCart executes one cart operation for either binding.
func (m *mcpEdge) runCart(ctx context.Context, req opRequest) (json.RawMessage, error) {
	op := req.op
	var args cartArgs
	a, err := m.admit(ctx, op, req.args, checkoutCapabilities(tenantFrom(ctx).GetCapabilities()), &args, func() string { return args.Meta.Agent.Profile })
	if err != nil {
		return nil, err
	}
	raw, profile, neg, baseURL := a.raw, a.profile, a.neg, a.baseURL
	if !neg.Has(op.capability) {
		return m.errorResponse(bcp.Error(bcp.CodeCapabilitiesIncompatible, bcp.SeverityUnrecoverable, "",
			"Este agente e a loja não têm carrinho em comum; use create_checkout."), baseURL+"/", true)
	}
	caps := make([]string, 0, len(neg.Capabilities))
	for name := range neg.Capabilities {
		caps = append(caps, name)
	}
	slices.Sort(caps)
	agent := &checkoutv1.Agent{ProfileUrl: args.Meta.Agent.Profile, Capabilities: caps, BaseUrl: baseURL}
	call := &opCall{agent: agent, profile: profile, id: args.ID, payload: args.Cart,
		idem: idempotencyOf(req.binding, op, args.Meta.Agent.Profile, args.Meta.IdempotencyKey, raw)}
	return awaitKey(ctx, func() (json.RawMessage, error) {
		res, err := op.call(ctx, m, call)
		if err != nil {
			if e := apperr.As(err); e.Kind == apperr.KindNotFound {
				return m.errorResponse(bcp.Error(bcp.CodeNotFound, bcp.SeverityUnrecoverable, "$.id", "Carrinho não encontrado."), baseURL+"/", false)
			}
			return nil, cartServiceError(err)
		}
		if res.errorResponse {
			return m.wrap(res.body, envelope{Version: bcpnames.Version, Status: "error"})
		}
		return m.wrap(res.body, envelope{Version: bcpnames.Version, Capabilities: neg.ResponseCapabilities(op.capability)})
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
