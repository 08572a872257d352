package bcpschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// ErrUnknownTool is returned (wrapped) for a tool name a ToolValidator was
// not built with, or a Tool whose Root this package does not define.
var ErrUnknownTool = errors.New("bcpschema: unknown tool")

// Root is the schema a tool's payload and result resolve: what the tool
// works on.
type Root string

const (
	// RootCheckout: the checkout composed from the negotiated capabilities.
	RootCheckout Root = "checkout"
	// RootOrder: an order (get_order's result; it takes no payload).
	RootOrder Root = "order"
	// RootCart: shopping/cart.json.
	RootCart Root = "cart"
	// The catalog requests and responses of UCP catalog search and lookup.
	RootCatalogSearch  Root = "catalog_search"
	RootCatalogLookup  Root = "catalog_lookup"
	RootCatalogProduct Root = "catalog_product"
)

// Tool is one MCP tool as its schemas see it. The tools are rows of the
// edge's operation table (services/edge/operations.go), which hands them
// over; this package knows the schema roots, not the tools.
type Tool struct {
	Name string
	Root Root
	// Op is the operation the payload and the result are resolved for
	// (catalog tools read: OpRead).
	Op Op
	// IdempotencyKey: meta["idempotency-key"] is required (it is checked
	// as a UUID whenever sent).
	IdempotencyKey bool
}

// rootSpec is how the schemas of a root's tools are built.
type rootSpec struct {
	in, out toolDoc
	// member is the argument that carries the payload; "" for none.
	member string
	// resource: the root is a resource with an id (checkout, cart, order),
	// named by a top-level id argument except on create.
	resource bool
	// composed: the schemas depend on the negotiated checkout capabilities.
	// (NULs, invalid UTF-8 and sizes are every root's: CheckInput.)
	composed bool
}

// toolDoc builds a tool's self-contained input or output schema.
type toolDoc func(st *store, t Tool, caps []string) (map[string]any, error)

var roots map[Root]rootSpec

func init() {
	roots = map[Root]rootSpec{
		RootCheckout:       {in: toolInputDoc, out: toolOutputDoc, member: "checkout", resource: true, composed: true},
		RootOrder:          {in: toolInputDoc, out: toolOutputDoc, resource: true},
		RootCart:           {in: cartToolInputDoc, out: cartToolOutputDoc, member: "cart", resource: true},
		RootCatalogSearch:  {in: catalogToolInputDoc, out: catalogToolOutputDoc, member: "catalog"},
		RootCatalogLookup:  {in: catalogToolInputDoc, out: catalogToolOutputDoc, member: "catalog"},
		RootCatalogProduct: {in: catalogToolInputDoc, out: catalogToolOutputDoc, member: "catalog"},
	}
}

func rootOf(t Tool) (rootSpec, error) {
	r, ok := roots[t.Root]
	if !ok {
		return rootSpec{}, fmt.Errorf("%w %q (root %q)", ErrUnknownTool, t.Name, t.Root)
	}
	return r, nil
}

// Payload is the argument that carries the tool's payload ("checkout",
// "cart" or "catalog"), or "" when it takes none (reads and cancels of a
// resource, get_order).
func (t Tool) Payload() string {
	r := roots[t.Root]
	if r.resource && t.Op != OpCreate && t.Op != OpUpdate && t.Op != OpComplete {
		return ""
	}
	return r.member
}

// TakesID reports whether the tool names an existing resource by its
// top-level id argument.
func (t Tool) TakesID() bool { return roots[t.Root].resource && t.Op != OpCreate }

// idDescription describes a tool's id argument.
func (t Tool) idDescription() string {
	switch {
	case t.Root == RootOrder:
		return "The unique identifier of the order."
	case t.Root == RootCart:
		return "The cart id (from create_cart)."
	case t.Op == OpUpdate:
		return "The ID of the checkout session to update."
	}
	return "The ID of the checkout session."
}

// cacheKey names a tool's schemas: everything they are built from.
func (t Tool) cacheKey(capabilities []string) string {
	caps := ""
	if roots[t.Root].composed {
		caps = capsKey(capabilities)
	}
	return t.Name + "|" + string(t.Root) + "|" + string(t.Op) + "|" + strconv.FormatBool(t.IdempotencyKey) + "|" + caps
}

// metaSchema is the binding's request metadata: ucp-agent.profile always,
// idempotency-key (a UUID) required on complete/cancel and checked whenever
// sent. Platforms MAY add members, so it stays open.
func metaSchema(idempotency bool) map[string]any {
	required := []any{"ucp-agent"}
	if idempotency {
		required = append(required, "idempotency-key")
	}
	return map[string]any{
		"type":                 "object",
		"description":          "Request metadata. Platforms MAY include additional members.",
		"required":             required,
		"additionalProperties": true,
		"properties": map[string]any{
			"ucp-agent": map[string]any{
				"type":        "object",
				"description": "Platform agent identification. Maps to the HTTP BCP-Agent header.",
				"required":    []any{"profile"},
				"properties": map[string]any{
					"profile": map[string]any{
						"type":        "string",
						"format":      "uri",
						"description": "URL of the platform's BCP profile document.",
					},
				},
			},
			"idempotency-key": map[string]any{
				"type":        "string",
				"format":      "uuid",
				"description": "Unique key for retry safety. Maps to the HTTP Idempotency-Key header.",
			},
		},
	}
}

// forbidden is the schema no value satisfies, spelt {"not": {}} rather than
// the boolean false: the two are equivalent in JSON Schema 2020-12, but
// MCP clients that check tool schemas strictly (the MCP inspector's
// --strict) want every property schema to be an object.
func forbidden() map[string]any { return map[string]any{"not": map[string]any{}} }

// envelopeOf is the closed argument envelope every tool shares: meta, and
// id for tools on an existing resource (the payload is each root's own).
func envelopeOf(t Tool) (props map[string]any, required []any) {
	props = map[string]any{"meta": metaSchema(t.IdempotencyKey)}
	required = []any{"meta"}
	if t.TakesID() {
		props["id"] = map[string]any{"type": "string", "description": t.idDescription()}
		required = append(required, "id")
	}
	return props, required
}

// toolInputDoc builds the arguments schema of tool for the capability set.
//
// The envelope (meta, id, checkout) is closed: the binding defines exactly
// these arguments, and a stray top-level member (an id on create, a checkout
// on get) is a client bug worth a precise error. The checkout payload stays
// open like every upstream schema, except that it may not carry "id": the
// binding identifies existing checkouts only by the top-level id. That rule is
// the schema at properties.id that nothing matches, so a violation points at
// $.checkout.id.
func toolInputDoc(st *store, t Tool, capabilities []string) (map[string]any, error) {
	props, required := envelopeOf(t)
	b, err := newBundler(st, Request, t.Op)
	if err != nil {
		return nil, err
	}
	if t.Payload() == "checkout" {
		composed, _, err := composeCheckout(st, capabilities)
		if err != nil {
			return nil, err
		}
		b.reserve("checkout")
		root, err := b.resolveComposed(composed)
		if err != nil {
			return nil, err
		}
		b.defs["checkout"] = root
		checkout := map[string]any{
			"$ref":        "#/$defs/checkout",
			"description": fmt.Sprintf("Checkout payload resolved for the %s operation. MUST NOT contain id: existing checkouts are identified by the top-level id argument.", t.Op),
			"properties":  map[string]any{"id": forbidden()},
		}
		if t.Op == OpCreate { // cart_id instead of line_items (cartid.go)
			if err := convertibleOnCreate(b.defs, checkout); err != nil {
				return nil, err
			}
		}
		props["checkout"] = checkout
		required = append(required, "checkout")
	}
	doc := b.document(map[string]any{
		"title":                t.Name + " arguments",
		"type":                 "object",
		"required":             required,
		"additionalProperties": false,
		"properties":           props,
	})
	return doc, nil
}

// toolOutputDoc builds the structuredContent schema of tool: the resource
// (checkout resolved for the tool's op, or order) or an error_response. The
// root is an object schema because MCP requires outputSchema type "object".
func toolOutputDoc(st *store, t Tool, capabilities []string) (map[string]any, error) {
	b, err := newBundler(st, Response, t.Op)
	if err != nil {
		return nil, err
	}
	resource := "checkout"
	if t.Root == RootOrder {
		resource = "order"
		u, ok := st.caps[CapOrder]
		if !ok {
			return nil, fmt.Errorf("bcpschema: no schema for %s", CapOrder)
		}
		b.reserve(resource)
		root, err := b.resolveRootRef(u)
		if err != nil {
			return nil, err
		}
		b.defs[resource] = root
	} else {
		composed, _, err := composeCheckout(st, capabilities)
		if err != nil {
			return nil, err
		}
		b.reserve(resource)
		root, err := b.resolveComposed(composed)
		if err != nil {
			return nil, err
		}
		b.defs[resource] = root
	}
	b.reserve("error_response")
	er, err := b.resolveRootRef("schemas/shopping/types/error_response.json")
	if err != nil {
		return nil, err
	}
	b.defs["error_response"] = er
	return b.document(map[string]any{
		"title": t.Name + " result",
		"type":  "object",
		"oneOf": []any{
			map[string]any{"$ref": "#/$defs/" + resource},
			map[string]any{"$ref": "#/$defs/error_response"},
		},
	}), nil
}

var schemaCache sync.Map // "in|", "out|" or "adv|" + Tool.cacheKey -> []byte

func cachedToolSchema(kind string, t Tool, capabilities []string) (json.RawMessage, error) {
	r, err := rootOf(t)
	if err != nil {
		return nil, err
	}
	key := kind + "|" + t.cacheKey(capabilities)
	if v, ok := schemaCache.Load(key); ok {
		return slices.Clone(v.([]byte)), nil
	}
	st, err := defaultStore()
	if err != nil {
		return nil, err
	}
	build := r.in
	switch kind {
	case "out":
		build = r.out
	case "adv":
		build = advertisedDoc
	}
	doc, err := build(st, t, capabilities)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	schemaCache.Store(key, data)
	return slices.Clone(data), nil
}

// ToolInputSchema returns the self-contained JSON Schema of a tool's
// arguments for a negotiated checkout capability set (checkout tools only
// depend on it; DefaultCheckoutCapabilities is every one). The result is a
// fresh copy; callers may keep or modify it.
func ToolInputSchema(t Tool, capabilities []string) (json.RawMessage, error) {
	return cachedToolSchema("in", t, capabilities)
}

// ToolOutputSchema returns the self-contained JSON Schema of the tool's
// structuredContent: its resource (checkout, order, cart, catalog response)
// or, where the tool can answer one, an error_response.
func ToolOutputSchema(t Tool, capabilities []string) (json.RawMessage, error) {
	return cachedToolSchema("out", t, capabilities)
}
