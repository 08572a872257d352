package bcpschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrUnknownTool is returned (wrapped) for a tool name this package does not define.
var ErrUnknownTool = errors.New("bcpschema: unknown tool")

// toolSpec describes one MCP tool of the BCP checkout binding.
type toolSpec struct {
	op          Op   // op used to resolve the checkout payload and the response
	id          bool // existing resource: top-level id argument
	checkout    bool // has a checkout payload
	idempotency bool // meta["idempotency-key"] required
	order       bool // result is an order, not a checkout
	idDesc      string
}

var tools = map[string]toolSpec{
	"create_checkout":   {op: OpCreate, checkout: true},
	"get_checkout":      {op: OpRead, id: true, idDesc: "The ID of the checkout session."},
	"update_checkout":   {op: OpUpdate, id: true, checkout: true, idDesc: "The ID of the checkout session to update."},
	"complete_checkout": {op: OpComplete, id: true, checkout: true, idempotency: true, idDesc: "The ID of the checkout session."},
	"cancel_checkout":   {op: OpCancel, id: true, idempotency: true, idDesc: "The ID of the checkout session."},
	"get_order":         {op: OpRead, id: true, order: true, idDesc: "The unique identifier of the order."},
}

// Tools lists the MCP tools with schemas, sorted.
func Tools() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookupTool(tool string) (toolSpec, error) {
	t, ok := tools[tool]
	if !ok {
		return toolSpec{}, fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	return t, nil
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

// toolInputDoc builds the arguments schema of tool for the capability set.
//
// The envelope (meta, id, checkout) is closed: the binding defines exactly
// these arguments, and a stray top-level member (an id on create, a checkout
// on get) is a client bug worth a precise error. The checkout payload stays
// open like every upstream schema, except that it may not carry "id": the
// binding identifies existing checkouts only by the top-level id. That rule is
// the schema at properties.id that nothing matches, so a violation points at
// $.checkout.id.
func toolInputDoc(st *store, tool string, capabilities []string) (map[string]any, error) {
	t, err := lookupTool(tool)
	if err != nil {
		return nil, err
	}
	props := map[string]any{"meta": metaSchema(t.idempotency)}
	required := []any{"meta"}
	if t.id {
		props["id"] = map[string]any{"type": "string", "description": t.idDesc}
		required = append(required, "id")
	}
	b, err := newBundler(st, Request, t.op)
	if err != nil {
		return nil, err
	}
	if t.checkout {
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
		props["checkout"] = map[string]any{
			"$ref":        "#/$defs/checkout",
			"description": fmt.Sprintf("Checkout payload resolved for the %s operation. MUST NOT contain id: existing checkouts are identified by the top-level id argument.", t.op),
			"properties":  map[string]any{"id": forbidden()},
		}
		required = append(required, "checkout")
	}
	doc := b.document(map[string]any{
		"title":                tool + " arguments",
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
func toolOutputDoc(st *store, tool string, capabilities []string) (map[string]any, error) {
	t, err := lookupTool(tool)
	if err != nil {
		return nil, err
	}
	b, err := newBundler(st, Response, t.op)
	if err != nil {
		return nil, err
	}
	resource := "checkout"
	if t.order {
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
		"title": tool + " result",
		"type":  "object",
		"oneOf": []any{
			map[string]any{"$ref": "#/$defs/" + resource},
			map[string]any{"$ref": "#/$defs/error_response"},
		},
	}), nil
}

var schemaCache sync.Map // "in|out" + tool + caps -> []byte

func cachedToolSchema(kind, tool string, capabilities []string, build func(*store, string, []string) (map[string]any, error)) (json.RawMessage, error) {
	key := kind + "|" + tool + "|" + capsKey(capabilities)
	if v, ok := schemaCache.Load(key); ok {
		return slices.Clone(v.([]byte)), nil
	}
	st, err := defaultStore()
	if err != nil {
		return nil, err
	}
	doc, err := build(st, tool, capabilities)
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

// ToolInputSchema returns the self-contained JSON Schema for the arguments of
// an MCP tool (create_checkout, get_checkout, update_checkout,
// complete_checkout, cancel_checkout, get_order) with the default capability
// set. The result is a fresh copy; callers may keep or modify it.
func ToolInputSchema(tool string) (json.RawMessage, error) {
	return ToolInputSchemaFor(tool, DefaultCheckoutCapabilities())
}

// ToolInputSchemaFor is ToolInputSchema for a negotiated capability set.
func ToolInputSchemaFor(tool string, capabilities []string) (json.RawMessage, error) {
	return cachedToolSchema("in", tool, capabilities, toolInputDoc)
}

// ToolOutputSchema returns the self-contained JSON Schema of the tool's
// structuredContent: checkout (or order for get_order) or error_response.
func ToolOutputSchema(tool string) (json.RawMessage, error) {
	return ToolOutputSchemaFor(tool, DefaultCheckoutCapabilities())
}

// ToolOutputSchemaFor is ToolOutputSchema for a negotiated capability set.
func ToolOutputSchemaFor(tool string, capabilities []string) (json.RawMessage, error) {
	return cachedToolSchema("out", tool, capabilities, toolOutputDoc)
}
