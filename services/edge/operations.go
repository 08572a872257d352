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

// instructions are the MCP initialize result's instructions: the purchase
// flow across the tools, for the agent's model (tool text is English;
// buyer-facing messages in answers are Portuguese).
const instructions = `Checkout with one Brazilian merchant (BCP, the Brazilian profile of UCP). Prices are integers in centavos (BRL): 3990 is R$ 39,90.
Every call takes meta["ucp-agent"].profile, your agent profile URL.
Purchase flow:
1. Find: search_catalog (lookup_catalog and get_product for known ids). A variant's id is the item.id to buy.
2. Optionally collect items in a cart (create_cart, update_cart), then create_checkout with checkout.cart_id; or create_checkout with line_items directly.
3. Read the checkout's status and messages: while it is incomplete, update_checkout with what they ask for (buyer email, shipping address, the chosen option of each fulfillment group, discount codes). update_checkout replaces the whole checkout: send every member again, with the ids the last answer assigned. Continue until status is ready_for_complete. If status is requires_escalation, send the buyer to continue_url.
4. complete_checkout with one payment instrument of a handler listed in the answer's ucp.payment_handlers and meta["idempotency-key"], a new UUID. If the answer is lost, call get_checkout and retry with the same key only if the outcome is still undetermined; after payment_failed, use a new key.
5. A card completes at once (status completed, order.id). Pix completes asynchronously: complete_in_progress with the copia-e-cola and QR code in the instrument's display; show them to the buyer and poll get_checkout until completed.
6. get_order with order.id follows delivery and refunds.
When the answers carry ap2.merchant_authorization (AP2 mandates negotiated), complete_checkout also needs checkout.ap2.checkout_mandate: an SD-JWT+kb over the checkout as last answered, signed with a key of your profile's signing_keys, key-bound to the merchant's origin (aud) and the checkout id (nonce).
Messages in answers are in Portuguese, written for the buyer: show them as they are.`

var operations = []operation{
	{
		name: "create_checkout", title: "Create checkout", method: http.MethodPost, path: "/checkout-sessions",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpCreate, family: checkoutFamily,
		description: "Start a purchase once the buyer has chosen: line_items with item.id (a variant id) and quantity, or cart_id of a cart; buyer, fulfillment and discounts may come now or later. " +
			"The answer is priced in centavos (BRL) and its messages say what is missing: fill it in with update_checkout until status is ready_for_complete.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.CreateCheckout(ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: c.agent, CheckoutJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "get_checkout", title: "Get checkout", method: http.MethodGet, path: "/checkout-sessions/{id}",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpRead, family: checkoutFamily,
		description: "Read a checkout's current state: to poll a Pix payment (complete_in_progress) until completed, or to learn the outcome of a call whose answer was lost. " +
			"Then do what its status calls for: update_checkout, complete_checkout, or get_order with order.id once completed.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.GetCheckout(ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Agent: c.agent, Id: c.id})))
		},
	},
	{
		name: "update_checkout", title: "Update checkout", method: http.MethodPut, path: "/checkout-sessions/{id}",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpUpdate, family: checkoutFamily,
		description: "Give a checkout what its messages ask for (buyer, shipping address, the option chosen in fulfillment.methods[].groups[].selected_option_id, discount codes); " +
			"it replaces the whole checkout, so send every member again with the ids the last answer assigned. Repeat until status is ready_for_complete, then call complete_checkout.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.UpdateCheckout(ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: c.agent, Id: c.id, CheckoutJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "complete_checkout", title: "Complete checkout", method: http.MethodPost, path: "/checkout-sessions/{id}/complete",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpComplete, family: checkoutFamily,
		requireKey: true, signed: true,
		description: "Pay a checkout in status ready_for_complete: one payment instrument of a handler in ucp.payment_handlers, and meta[\"idempotency-key\"], a new UUID (after a lost answer, call get_checkout and retry with the same key only if still undetermined; after payment_failed use a new one). " +
			"A card answers completed with order.id (then get_order) or payment_failed; Pix answers complete_in_progress with the copia-e-cola and QR code in the instrument's display: show them to the buyer and poll get_checkout until completed.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.CompleteCheckout(ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{
				Agent: c.agent, Id: c.id, CheckoutJson: c.payload,
				AgentSigningKeysJson: rawStrings(c.profile.SigningKeys()), OrderWebhookUrl: c.profile.OrderWebhookURL(), Idempotency: c.idem,
			})))
		},
	},
	{
		name: "cancel_checkout", title: "Cancel checkout", method: http.MethodPost, path: "/checkout-sessions/{id}/cancel",
		capability: bcpnames.Checkout, schema: bcpschema.RootCheckout, op: bcpschema.OpCancel, family: checkoutFamily,
		requireKey: true,
		description: "Cancel a checkout the buyer gave up on, with meta[\"idempotency-key\"] (a UUID; the same one when retrying a lost answer). " +
			"A canceled checkout cannot be completed: start again with create_checkout.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return checkoutResult(m.checkout.CancelCheckout(ctx, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Agent: c.agent, Id: c.id, Idempotency: c.idem})))
		},
	},
	{
		name: "get_order", title: "Get order", method: http.MethodGet, path: "/orders/{id}",
		capability: bcpnames.Order, schema: bcpschema.RootOrder, op: bcpschema.OpRead, family: checkoutFamily,
		description: "Read an order placed by complete_checkout (the completed checkout's order.id): line items with fulfilled quantities, delivery expectations and events, adjustments such as refunds. " +
			"Call it after complete_checkout, and again later, to follow delivery.",
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
		name: "search_catalog", title: "Search products", method: http.MethodPost, path: "/catalog/search",
		capability: bcpnames.CatalogSearch, schema: bcpschema.RootCatalogSearch, op: bcpschema.OpRead, family: catalogFamily,
		description: "Start here: search this merchant's catalog by text (in Portuguese), category and price in centavos; each product lists its variants with price and availability. " +
			"Next, put the chosen variant's id as item.id in create_cart or create_checkout.",
		call: catalogCall(runSearch),
	},
	{
		name: "lookup_catalog", title: "Look up products", method: http.MethodPost, path: "/catalog/lookup",
		capability: bcpnames.CatalogLookup, schema: bcpschema.RootCatalogLookup, op: bcpschema.OpRead, family: catalogFamily,
		description: "Look up products when you already have ids (product ids, variant ids or SKUs); unknown ids are left out and named in not_found messages. " +
			"Next, put a variant's id as item.id in create_cart or create_checkout.",
		call: catalogCall(runLookup),
	},
	{
		name: "get_product", title: "Get product", method: http.MethodPost, path: "/catalog/product",
		capability: bcpnames.CatalogLookup, schema: bcpschema.RootCatalogProduct, op: bcpschema.OpRead, family: catalogFamily,
		description: "Get one product with every purchasable variant (by product or variant id) to help the buyer choose size, color or the like. " +
			"Next, put the chosen variant's id as item.id in create_cart or create_checkout.",
		call: catalogCall(runGetProduct),
	},
	{
		name: "create_cart", title: "Create cart", method: http.MethodPost, path: "/carts",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpCreate, family: cartFamily,
		description: "Collect items while the buyer is still choosing: a cart is priced with estimated totals in centavos (BRL), holds no stock and takes no payment. " +
			"Change it with update_cart; when the buyer decides, call create_checkout with checkout.cart_id.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return cartResult(m.checkout.CreateCart(ctx, connect.NewRequest(&checkoutv1.CreateCartRequest{Agent: c.agent, CartJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "get_cart", title: "Get cart", method: http.MethodGet, path: "/carts/{id}",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpRead, family: cartFamily,
		description: "Read a cart you created; canceled carts and carts already turned into a checkout are not found. " +
			"Next, update_cart, or create_checkout with checkout.cart_id.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return cartResult(m.checkout.GetCart(ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: c.agent, Id: c.id})))
		},
	},
	{
		name: "update_cart", title: "Update cart", method: http.MethodPut, path: "/carts/{id}",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpUpdate, family: cartFamily,
		description: "Change a cart; it replaces the whole cart, so send every line item, the buyer and the discount codes to keep. " +
			"When the buyer decides, call create_checkout with checkout.cart_id.",
		call: func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
			return cartResult(m.checkout.UpdateCart(ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: c.agent, Id: c.id, CartJson: c.payload, Idempotency: c.idem})))
		},
	},
	{
		name: "cancel_cart", title: "Cancel cart", method: http.MethodPost, path: "/carts/{id}/cancel",
		capability: bcpnames.Cart, schema: bcpschema.RootCart, op: bcpschema.OpCancel, family: cartFamily,
		requireKey: true,
		description: "Drop a cart the buyer abandoned, with meta[\"idempotency-key\"] (a UUID); it is not found afterwards. " +
			"To start over, call create_cart.",
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
