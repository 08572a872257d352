package edge

import (
	"context"
	"encoding/json"
	"net/http"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/bcpnames"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentauth"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// One table of operations.
//
// Each BCP operation is one row of operations, and the row is the only
// place it is described: its MCP tool (name, title, description), its REST
// route, whether it needs an idempotency key, whether its responses are
// always signed, the schema root of its arguments and result, and its
// service call. The MCP tools (mcp.go buildServer) with their schemas and
// argument validation (bcpschema.Tool), the REST mux (rest.go), and
// authentication's REST lookup and signing rule (AuthOperations) are
// derived from it. Adding an operation is one row and its service call.

// operation is one BCP operation.
type operation struct {
	name, title, description string
	// method and path are the REST route; path is under restBase.
	method, path string
	// capability is the capability the operation belongs to: negotiation
	// must have it, and responses name it in the "ucp" envelope.
	capability string
	// schema is the root of the tool's payload and result, resolved for op.
	schema bcpschema.Root
	op     bcpschema.Op
	// requireKey: meta["idempotency-key"] (REST: the Idempotency-Key
	// header) is required; other operations honour one when sent.
	requireKey bool
	// signed: responses are always signed with the merchant's key; other
	// responses only when the merchant signs every one.
	signed bool
	// family runs the operation: validation, negotiation, idempotency and
	// rendering are shared by a family (checkout and order, cart, catalog).
	family *family
	// call is the service call.
	call serviceCall
}

// serviceCall is an operation's call to the service behind it, made once
// the arguments are valid and the agent's profile is negotiated.
type serviceCall func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error)

// opCall is what a service call gets.
type opCall struct {
	agent   *checkoutv1.Agent
	profile *agentprofile.Profile
	id      string
	// payload is the tool's payload argument (checkout, cart or catalog).
	payload json.RawMessage
	// idem is the request's idempotency key, for the service that keeps
	// it (nil: none, or a read).
	idem *checkoutv1.Idempotency
}

// opResult is a service's answer: the resource, or an error_response when
// there is none (errorResponse), as JSON without the "ucp" envelope.
type opResult struct {
	body          []byte
	errorResponse bool
}

// A family is the executor a kind of operation runs through and how its
// REST arguments are assembled.
type family struct {
	// run executes an operation for either binding.
	run func(m *mcpEdge, ctx context.Context, req opRequest) (json.RawMessage, error)
	// restArgs assembles the tool arguments from a REST request.
	restArgs func(req *http.Request, op *operation) (json.RawMessage, *protoError)
}

var (
	checkoutFamily = &family{run: (*mcpEdge).runCheckout, restArgs: restArgs}       // executor.go
	cartFamily     = &family{run: (*mcpEdge).runCart, restArgs: restArgs}           // cart_tools.go
	catalogFamily  = &family{run: (*mcpEdge).runCatalog, restArgs: restCatalogArgs} // catalog_tools.go
)

var operations = []operation{
	{
		name: "create_checkout", title: "Criar checkout", method: http.MethodPost, path: "/checkout-sessions",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpCreate, family: checkoutFamily,
		description: "Create a checkout session for this merchant. Arguments: meta (required; meta[\"ucp-agent\"].profile is your agent profile URL), " +
			"checkout (required; line_items with item.id and quantity, optionally buyer, fulfillment and discounts; never an id). " +
			"Returns the checkout with prices in centavos (BRL), totals, messages telling what is missing, and continue_url for the buyer.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.CreateCheckout(ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: c.agent, CheckoutJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "get_checkout", title: "Consultar checkout", method: http.MethodGet, path: "/checkout-sessions/{id}",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpRead, family: checkoutFamily,
		description: "Get the current state of a checkout session. Arguments: meta (required), id (required).",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.GetCheckout(ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Agent: c.agent, Id: c.id})))
		},
	},
	{
		name: "update_checkout", title: "Atualizar checkout", method: http.MethodPut, path: "/checkout-sessions/{id}",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpUpdate, family: checkoutFamily,
		description: "Update a checkout session. This is a full replacement: send every field you want to keep (line_items, buyer, fulfillment, discounts). " +
			"Arguments: meta (required), id (required), checkout (required, without id). Select shipping with fulfillment.methods[].groups[].selected_option_id.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.UpdateCheckout(ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: c.agent, Id: c.id, CheckoutJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "complete_checkout", title: "Concluir checkout", method: http.MethodPost, path: "/checkout-sessions/{id}/complete",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpComplete, family: checkoutFamily,
		requireKey: true, signed: true,
		description: "Place the order of a checkout in status ready_for_complete. Arguments: meta (required, with meta[\"idempotency-key\"], a UUID: " +
			"if the response is lost, call get_checkout, and only if still undetermined retry with the SAME key; after a payment_failed use a NEW key), id (required), " +
			"checkout (required) with payment.instruments holding exactly one instrument whose handler_id is one of ucp.payment_handlers: " +
			"Pix (type pix) answers complete_in_progress with the copia-e-cola and QR in the instrument's display — poll get_checkout until completed; " +
			"delegated cards (type card) take a token credential only and answer completed with order {id, permalink_url}, or payment_failed. " +
			"With br.dev.bcp.shopping.ap2_mandate negotiated (every checkout answer then carries ap2.merchant_authorization), checkout.ap2.checkout_mandate is required: " +
			"an SD-JWT+kb signed with a key of your profile's signing_keys, embedding the checkout as the merchant answered it, key-bound to the merchant's origin (aud) and the checkout id (nonce).",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.CompleteCheckout(ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{
				Agent: c.agent, Id: c.id, CheckoutJson: c.payload,
				AgentSigningKeysJson: rawStrings(c.profile.SigningKeys()), OrderWebhookUrl: c.profile.OrderWebhookURL(), Idempotency: c.idem,
			})))
		},
	},
	{
		name: "cancel_checkout", title: "Cancelar checkout", method: http.MethodPost, path: "/checkout-sessions/{id}/cancel",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpCancel, family: checkoutFamily,
		requireKey: true,
		description: "Cancel a checkout session. Arguments: meta (required, with meta[\"idempotency-key\"], a UUID: reuse the same key when you retry " +
			"after a lost response), id (required).",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.CancelCheckout(ctx, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Agent: c.agent, Id: c.id, Idempotency: c.idem})))
		},
	},
	{
		name: "get_order", title: "Consultar pedido", method: http.MethodGet, path: "/orders/{id}",
		capability: bcpnames.Order, schema: bcpschema.RootOrder, op: bcpschema.OpRead, family: checkoutFamily,
		description: "Get an order you placed (from a completed checkout's order.id): line items with fulfilled quantities, fulfillment expectations and events, adjustments such as refunds. Arguments: meta (required), id (required).",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			// The orders service answers NotFound for another agent's order.
			r, err := m.orders.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: c.id, AgentProfileUrl: c.agent.GetProfileUrl()}))
			if err != nil {
				return opResult{}, err
			}
			return opResult{body: r.Msg.GetOrderJson()}, nil
		},
	},
	{
		name: "search_catalog", title: "Buscar produtos", method: http.MethodPost, path: "/catalog/search",
		capability: bcpnames.CatalogSearch, schema: bcpschema.RootCatalogSearch, op: bcpschema.OpRead, family: catalogFamily,
		description: "Search this merchant's catalog (Portuguese; accents and small typos are tolerated). Arguments: meta (required), catalog (required): " +
			"query (free text), filters.categories (exact values from products' categories), filters.price {min, max} in centavos, " +
			"pagination {cursor from the previous response, limit (default 10, at most 50)}. Each product lists purchasable variants: " +
			"a variant's id is the item.id for create_checkout; prices in centavos (BRL); availability.available says whether it is in stock.",
		call: catalogCall(runSearch),
	},
	{
		name: "lookup_catalog", title: "Consultar produtos", method: http.MethodPost, path: "/catalog/lookup",
		capability: bcpnames.CatalogLookup, schema: bcpschema.RootCatalogLookup, op: bcpschema.OpRead, family: catalogFamily,
		description: "Look up products by id. Arguments: meta (required), catalog (required): ids (product ids, variant ids or SKUs, at most 50). " +
			"Each variant's inputs say which id resolved to it (exact: a variant id or SKU; featured: a product id). Unknown ids are left out and " +
			"named in info messages with code not_found.",
		call: catalogCall(runLookup),
	},
	{
		name: "get_product", title: "Detalhar produto", method: http.MethodPost, path: "/catalog/product",
		capability: bcpnames.CatalogLookup, schema: bcpschema.RootCatalogProduct, op: bcpschema.OpRead, family: catalogFamily,
		description: "Get one product with every purchasable variant. Arguments: meta (required), catalog (required): id (a product id, or a variant id, " +
			"which then comes first). An unknown id answers an error_response with code not_found.",
		call: catalogCall(runGetProduct),
	},
	{
		name: "create_cart", title: "Criar carrinho", method: http.MethodPost, path: "/carts",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpCreate, family: cartFamily,
		description: "Create a cart: items priced with estimated totals in centavos (BRL), no stock reserved and no payment. Arguments: meta (required), " +
			"cart (required): line_items with item.id (a variant id from search_catalog) and quantity, optionally buyer, context and discounts.codes. " +
			"Turn it into a checkout with create_checkout and checkout.cart_id.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return cartResult(m.checkout.CreateCart(ctx, connect.NewRequest(&checkoutv1.CreateCartRequest{Agent: c.agent, CartJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "get_cart", title: "Consultar carrinho", method: http.MethodGet, path: "/carts/{id}",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpRead, family: cartFamily,
		description: "Get a cart you created. Arguments: meta (required), id (required). Canceled or converted carts are not found.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return cartResult(m.checkout.GetCart(ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: c.agent, Id: c.id})))
		},
	},
	{
		name: "update_cart", title: "Atualizar carrinho", method: http.MethodPut, path: "/carts/{id}",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpUpdate, family: cartFamily,
		description: "Update a cart. This is a full replacement: send every line item, the buyer and the discount codes you want to keep. " +
			"Arguments: meta (required), id (required), cart (required, without id).",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return cartResult(m.checkout.UpdateCart(ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: c.agent, Id: c.id, CartJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "cancel_cart", title: "Cancelar carrinho", method: http.MethodPost, path: "/carts/{id}/cancel",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpCancel, family: cartFamily,
		requireKey:  true,
		description: "Cancel a cart; it is not found afterwards. Arguments: meta (required, with meta[\"idempotency-key\"], a UUID), id (required).",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return cartResult(m.checkout.CancelCart(ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: c.agent, Id: c.id, Idempotency: c.idem})))
		},
	},
}

// tool is the row as its schemas see it.
func (op *operation) tool() bcpschema.Tool {
	return bcpschema.Tool{Name: op.name, Root: op.schema, Op: op.op, IdempotencyKey: op.requireKey}
}

// Tools lists every operation's tool, in the table's order.
func Tools() []bcpschema.Tool {
	out := make([]bcpschema.Tool, len(operations))
	for i := range operations {
		out[i] = operations[i].tool()
	}
	return out
}

// NewToolValidator compiles the arguments and results of every operation
// for a checkout capability set (none: every capability), as the edge
// validates them.
func NewToolValidator(capabilities ...string) (*bcpschema.ToolValidator, error) {
	return bcpschema.NewToolValidator(Tools(), capabilities...)
}

// AuthOperations is the operation table as authentication reads it
// (agentauth.Options.Operations): the REST route naming each tool and
// which responses are always signed.
func AuthOperations() []agentauth.Operation {
	out := make([]agentauth.Operation, len(operations))
	for i, op := range operations {
		out[i] = agentauth.Operation{Tool: op.name, Method: op.method, Path: restBase + op.path, Signed: op.signed}
	}
	return out
}

// checkoutResult and cartResult read a service's answer; a failed call
// has none.
func checkoutResult[T any, P interface {
	*T
	GetResult() *checkoutv1.CheckoutResult
}](r *connect.Response[T], err error) (opResult, error) {
	if err != nil {
		return opResult{}, err
	}
	res := P(r.Msg).GetResult()
	return opResult{body: res.GetCheckoutJson(), errorResponse: res.GetErrorResponse()}, nil
}

func cartResult[T any, P interface {
	*T
	GetResult() *checkoutv1.CartResult
}](r *connect.Response[T], err error) (opResult, error) {
	if err != nil {
		return opResult{}, err
	}
	res := P(r.Msg).GetResult()
	return opResult{body: res.GetCartJson(), errorResponse: res.GetErrorResponse()}, nil
}
