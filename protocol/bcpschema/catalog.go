package bcpschema

import (
	"encoding/json"
	"fmt"
	"slices"
)

// # Catalog tools
//
// The catalog capabilities (br.dev.bcp.shopping.catalog.search and
// .lookup) have three MCP tools whose arguments are {meta, catalog}
// (OpenRPC services/shopping/mcp.openrpc.json): catalog is the upstream
// request shape, resolved like the checkout payloads. Catalog schemas do
// not depend on the negotiated checkout extensions, so they are compiled
// once, by NewCatalogValidator, apart from the checkout Validator.

// Catalog capability names (the schemas' "name").
const (
	CapCatalogSearch = "br.dev.bcp.shopping.catalog.search"
	CapCatalogLookup = "br.dev.bcp.shopping.catalog.lookup"
)

type catalogToolSpec struct {
	capability        string
	request, response string // refs relative to BaseURL
	// errorResponse: the result may also be an error_response (get_product
	// of an unknown id); search and lookup always answer their resource.
	errorResponse bool
	description   string
}

var catalogTools = map[string]catalogToolSpec{
	"search_catalog": {
		capability: CapCatalogSearch,
		request:    "schemas/shopping/catalog_search.json#/$defs/search_request",
		response:   "schemas/shopping/catalog_search.json#/$defs/search_response",
		description: "Search request: query text, filters (categories, price in minor units), pagination " +
			"(cursor from the previous response, limit).",
	},
	"lookup_catalog": {
		capability:  CapCatalogLookup,
		request:     "schemas/shopping/catalog_lookup.json#/$defs/lookup_request",
		response:    "schemas/shopping/catalog_lookup.json#/$defs/lookup_response",
		description: "Lookup request: ids (product or variant ids).",
	},
	"get_product": {
		capability:    CapCatalogLookup,
		request:       "schemas/shopping/catalog_lookup.json#/$defs/get_product_request",
		response:      "schemas/shopping/catalog_lookup.json#/$defs/get_product_response",
		errorResponse: true,
		description:   "Product request: id (a product or variant id).",
	},
}

// CatalogTools lists the catalog MCP tools, sorted.
func CatalogTools() []string {
	names := make([]string, 0, len(catalogTools))
	for n := range catalogTools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// CatalogToolCapability is the capability a catalog tool belongs to ("" for
// another name).
func CatalogToolCapability(tool string) string { return catalogTools[tool].capability }

func lookupCatalogTool(tool string) (catalogToolSpec, error) {
	t, ok := catalogTools[tool]
	if !ok {
		return catalogToolSpec{}, fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	return t, nil
}

// catalogToolInputDoc is the closed envelope {meta, catalog} around the
// resolved (open) upstream request.
func catalogToolInputDoc(st *store, tool string, _ []string) (map[string]any, error) {
	t, err := lookupCatalogTool(tool)
	if err != nil {
		return nil, err
	}
	b, err := newBundler(st, Request, OpRead)
	if err != nil {
		return nil, err
	}
	b.reserve("catalog")
	root, err := b.resolveRootRef(t.request)
	if err != nil {
		return nil, err
	}
	b.defs["catalog"] = root
	return b.document(map[string]any{
		"title":                tool + " arguments",
		"type":                 "object",
		"required":             []any{"meta", "catalog"},
		"additionalProperties": false,
		"properties": map[string]any{
			"meta":    metaSchema(false),
			"catalog": map[string]any{"$ref": "#/$defs/catalog", "description": t.description},
		},
	}), nil
}

// catalogToolOutputDoc is the structuredContent schema: the upstream
// response (or, for get_product, it or an error_response), under an object
// root as MCP requires.
func catalogToolOutputDoc(st *store, tool string, _ []string) (map[string]any, error) {
	t, err := lookupCatalogTool(tool)
	if err != nil {
		return nil, err
	}
	b, err := newBundler(st, Response, OpRead)
	if err != nil {
		return nil, err
	}
	b.reserve("response")
	root, err := b.resolveRootRef(t.response)
	if err != nil {
		return nil, err
	}
	b.defs["response"] = root
	if !t.errorResponse {
		return b.document(map[string]any{"title": tool + " result", "type": "object", "allOf": []any{map[string]any{"$ref": "#/$defs/response"}}}), nil
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
		"oneOf": []any{map[string]any{"$ref": "#/$defs/response"}, map[string]any{"$ref": "#/$defs/error_response"}},
	}), nil
}

// CatalogToolInputSchema returns the self-contained JSON Schema of a
// catalog tool's arguments (a fresh copy).
func CatalogToolInputSchema(tool string) (json.RawMessage, error) {
	return cachedToolSchema("catalog-in", tool, nil, catalogToolInputDoc)
}

// CatalogToolOutputSchema returns the self-contained JSON Schema of a
// catalog tool's structuredContent (a fresh copy).
func CatalogToolOutputSchema(tool string) (json.RawMessage, error) {
	return cachedToolSchema("catalog-out", tool, nil, catalogToolOutputDoc)
}

// CatalogValidator validates catalog tool arguments and results.
type CatalogValidator = ToolValidator

// NewCatalogValidator compiles the catalog tools' schemas.
func NewCatalogValidator() (*CatalogValidator, error) {
	return newToolValidator(CatalogTools(), catalogToolInputDoc, catalogToolOutputDoc)
}
