package bcpschema

// # Catalog tools
//
// The catalog capabilities (br.dev.bcp.shopping.catalog.search and
// .lookup) have three MCP tools (search_catalog, lookup_catalog,
// get_product) whose arguments are {meta, catalog} (OpenRPC
// services/shopping/mcp.openrpc.json): catalog is the upstream request of
// the tool's root, resolved like the checkout payloads. Catalog schemas do
// not depend on the negotiated checkout extensions.

// Catalog capability names (the schemas' "name").
const (
	CapCatalogSearch = "br.dev.bcp.shopping.catalog.search"
	CapCatalogLookup = "br.dev.bcp.shopping.catalog.lookup"
)

// catalogRoot is a catalog root's upstream request and response.
type catalogRoot struct {
	request, response string // refs relative to BaseURL
	// errorResponse: the result may also be an error_response (get_product
	// of an unknown id); search and lookup always answer their resource.
	errorResponse bool
	description   string
}

var catalogRoots = map[Root]catalogRoot{
	RootCatalogSearch: {
		request:  "schemas/shopping/catalog_search.json#/$defs/search_request",
		response: "schemas/shopping/catalog_search.json#/$defs/search_response",
		description: "Search request: query text, filters (categories, price in minor units), pagination " +
			"(cursor from the previous response, limit).",
	},
	RootCatalogLookup: {
		request:     "schemas/shopping/catalog_lookup.json#/$defs/lookup_request",
		response:    "schemas/shopping/catalog_lookup.json#/$defs/lookup_response",
		description: "Lookup request: ids (product or variant ids).",
	},
	RootCatalogProduct: {
		request:       "schemas/shopping/catalog_lookup.json#/$defs/get_product_request",
		response:      "schemas/shopping/catalog_lookup.json#/$defs/get_product_response",
		errorResponse: true,
		description:   "Product request: id (a product or variant id).",
	},
}

// catalogToolInputDoc is the closed envelope {meta, catalog} around the
// resolved (open) upstream request.
func catalogToolInputDoc(st *store, t Tool, _ []string) (map[string]any, error) {
	c := catalogRoots[t.Root]
	b, err := newBundler(st, Request, OpRead)
	if err != nil {
		return nil, err
	}
	b.reserve("catalog")
	root, err := b.resolveRootRef(c.request)
	if err != nil {
		return nil, err
	}
	b.defs["catalog"] = root
	return b.document(map[string]any{
		"title":                t.Name + " arguments",
		"type":                 "object",
		"required":             []any{"meta", "catalog"},
		"additionalProperties": false,
		"properties": map[string]any{
			"meta":    metaSchema(false),
			"catalog": map[string]any{"$ref": "#/$defs/catalog", "description": c.description},
		},
	}), nil
}

// catalogToolOutputDoc is the structuredContent schema: the upstream
// response (or, for get_product, it or an error_response), under an object
// root as MCP requires.
func catalogToolOutputDoc(st *store, t Tool, _ []string) (map[string]any, error) {
	c := catalogRoots[t.Root]
	b, err := newBundler(st, Response, OpRead)
	if err != nil {
		return nil, err
	}
	b.reserve("response")
	root, err := b.resolveRootRef(c.response)
	if err != nil {
		return nil, err
	}
	b.defs["response"] = root
	if !c.errorResponse {
		return b.document(map[string]any{"title": t.Name + " result", "type": "object", "allOf": []any{map[string]any{"$ref": "#/$defs/response"}}}), nil
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
		"oneOf": []any{map[string]any{"$ref": "#/$defs/response"}, map[string]any{"$ref": "#/$defs/error_response"}},
	}), nil
}
