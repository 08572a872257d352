package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// The catalog operations (UCP catalog search and lookup, BCP-renamed):
// MCP tools search_catalog, lookup_catalog and get_product with arguments
// {meta, catalog}, REST POST {base}/catalog/search, /catalog/lookup and
// /catalog/product with the catalog object as the body. One table row per
// operation, both bindings through runCatalog: validate against the BCP
// schema, fetch and negotiate the agent profile, call the catalog service,
// render the UCP payload and splice the "ucp" envelope in, as run does for
// checkout. Catalog operations read and change nothing, so idempotency keys
// are not recorded (upstream's REST binding sends none for them).

// catalogOp is one catalog operation.
type catalogOp struct {
	name, title, description string
	path                     string // REST path under restBase
	capability               string
	run                      func(ctx context.Context, c catalogv1connect.CatalogServiceClient, args *catalogArgs) (any, []bcp.Message, error)
}

var catalogOps = []catalogOp{
	{
		name: "search_catalog", title: "Buscar produtos", path: "/catalog/search", capability: bcpnames.CatalogSearch,
		description: "Search this merchant's catalog (Portuguese; accents and small typos are tolerated). Arguments: meta (required), catalog (required): " +
			"query (free text), filters.categories (exact values from products' categories), filters.price {min, max} in centavos, " +
			"pagination {cursor from the previous response, limit (default 10, at most 50)}. Each product lists purchasable variants: " +
			"a variant's id is the item.id for create_checkout; prices in centavos (BRL); availability.available says whether it is in stock.",
		run: runSearch,
	},
	{
		name: "lookup_catalog", title: "Consultar produtos", path: "/catalog/lookup", capability: bcpnames.CatalogLookup,
		description: "Look up products by id. Arguments: meta (required), catalog (required): ids (product ids, variant ids or SKUs, at most 50). " +
			"Each variant's inputs say which id resolved to it (exact: a variant id or SKU; featured: a product id). Unknown ids are left out and " +
			"named in info messages with code not_found.",
		run: runLookup,
	},
	{
		name: "get_product", title: "Detalhar produto", path: "/catalog/product", capability: bcpnames.CatalogLookup,
		description: "Get one product with every purchasable variant. Arguments: meta (required), catalog (required): id (a product id, or a variant id, " +
			"which then comes first). An unknown id answers an error_response with code not_found.",
		run: runGetProduct,
	},
}

// catalogArgs are the arguments the executor reads after validation.
type catalogArgs struct {
	Meta struct {
		Agent struct {
			Profile string `json:"profile"`
		} `json:"ucp-agent"`
	} `json:"meta"`
	Catalog struct {
		Query   string   `json:"query"`
		IDs     []string `json:"ids"`
		ID      string   `json:"id"`
		Context struct {
			Currency string `json:"currency"`
		} `json:"context"`
		Filters struct {
			Categories []string `json:"categories"`
			Price      struct {
				Min *json.Number `json:"min"`
				Max *json.Number `json:"max"`
			} `json:"price"`
		} `json:"filters"`
		Pagination struct {
			Cursor string      `json:"cursor"`
			Limit  json.Number `json:"limit"`
		} `json:"pagination"`
	} `json:"catalog"`
}

// catalogValidator is compiled once per process: catalog schemas do not
// depend on what was negotiated.
var catalogValidator = sync.OnceValues(bcpschema.NewCatalogValidator)

// addCatalogTools registers the catalog tools on an MCP server.
func (m *mcpEdge) addCatalogTools(s *mcp.Server) error {
	for _, op := range catalogOps {
		in, err := bcpschema.CatalogToolInputSchema(op.name)
		if err != nil {
			return err
		}
		out, err := bcpschema.CatalogToolOutputSchema(op.name)
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
				payload, err := m.runCatalog(ctx, op, req.Params.Arguments)
				if err != nil {
					return nil, asProtoError(err).rpc()
				}
				return toolResult(payload), nil
			})
	}
	return nil
}

// runCatalog executes one catalog operation for either binding.
func (m *mcpEdge) runCatalog(ctx context.Context, op catalogOp, raw json.RawMessage) (json.RawMessage, error) {
	t := tenantFrom(ctx)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	v, err := catalogValidator()
	if err != nil {
		return nil, err
	}
	if err := v.ValidateToolInput(op.name, raw); err != nil {
		return nil, invalidParams(err)
	}
	var args catalogArgs
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
	// The same business outcome as a checkout call without checkout in
	// common: the operation's capability was not negotiated.
	if !neg.Has(op.capability) {
		msg := bcp.Error(bcp.CodeCapabilitiesIncompatible, bcp.SeverityUnrecoverable, "",
			"Este agente e a loja não têm esta capacidade de catálogo em comum; continue pela loja.")
		if op.name == "get_product" {
			return m.errorResponse(msg, baseURL+"/", true)
		}
		// Search and lookup results have no error_response form upstream:
		// the same outcome as their own shape, with no products.
		body, err := json.Marshal(struct {
			Products    []ucpProduct  `json:"products"`
			Messages    []bcp.Message `json:"messages"`
			ContinueURL string        `json:"continue_url"`
		}{[]ucpProduct{}, []bcp.Message{msg}, baseURL + "/"})
		if err != nil {
			return nil, err
		}
		return m.wrap(body, envelope{Version: bcpnames.Version, Status: "error", Capabilities: map[string]any{}})
	}
	body, msgs, err := op.run(ctx, m.catalog, &args)
	if err != nil {
		if e := apperr.As(err); e.Kind == apperr.KindNotFound {
			return m.errorResponse(bcp.Error(bcp.CodeNotFound, bcp.SeverityUnrecoverable, "$.catalog.id", "Produto não encontrado."), baseURL+"/", false)
		}
		return nil, catalogServiceError(op, err)
	}
	if len(msgs) > 0 {
		body = withMessages{body, msgs}
	}
	doc, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return m.wrap(doc, envelope{Version: bcpnames.Version, Capabilities: neg.ResponseCapabilities(op.capability)})
}

// catalogServiceError is serviceError, except that an invalid argument the
// catalog names a field of (ids over the batch limit, a stale cursor) is
// reported at its JSONPath in the arguments, as schema violations are.
func catalogServiceError(op catalogOp, err error) *protoError {
	e := apperr.As(err)
	if e.Kind != apperr.KindInvalidArgument || e.Field == "" {
		return serviceError(err)
	}
	path := "$.catalog." + e.Field
	if op.name == "get_product" && strings.HasPrefix(e.Field, "ids") {
		path = "$.catalog.id" // get_product sends its one id as ids[0]
	}
	return &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidParams, code: e.Code, content: e.Message,
		violations: []violation{{Path: path, Message: e.Message}}}
}

// withMessages adds a messages member to a payload.
type withMessages struct {
	payload  any
	messages []bcp.Message
}

func (w withMessages) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.payload)
	if err != nil {
		return nil, err
	}
	ms, err := json.Marshal(w.messages)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the payload is an object with at least one member
	return append(append(append(b, `,"messages":`...), ms...), '}'), nil
}

func runSearch(ctx context.Context, c catalogv1connect.CatalogServiceClient, a *catalogArgs) (any, []bcp.Message, error) {
	in := a.Catalog
	req := &catalogv1.SearchCatalogRequest{Query: in.Query, Categories: in.Filters.Categories, Cursor: in.Pagination.Cursor,
		Limit: int32(min(schemaInt(in.Pagination.Limit), math.MaxInt32))}
	var msgs []bcp.Message
	if in.Filters.Price.Min != nil || in.Filters.Price.Max != nil {
		// Price filters are denominated in context.currency; this
		// merchant prices in BRL and does not convert.
		if cur := in.Context.Currency; cur != "" && !strings.EqualFold(cur, "BRL") {
			msgs = append(msgs, bcp.Info("price_filter_ignored", "", "Os preços desta loja são em BRL; o filtro de preço em "+cur+" foi ignorado."))
		} else {
			if n := in.Filters.Price.Min; n != nil {
				req.MinPrice = ptrTo(schemaInt(*n))
			}
			if n := in.Filters.Price.Max; n != nil {
				req.MaxPrice = ptrTo(schemaInt(*n))
			}
		}
	}
	r, err := c.SearchCatalog(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, nil, err
	}
	out := searchPayload{Products: make([]ucpProduct, 0, len(r.Msg.GetProducts()))}
	for _, p := range r.Msg.GetProducts() {
		out.Products = append(out.Products, toUCPProduct(p))
	}
	out.Pagination.HasNextPage = r.Msg.GetNextCursor() != ""
	out.Pagination.Cursor = r.Msg.GetNextCursor()
	return out, msgs, nil
}

// schemaInt reads a JSON number the schema already checked is a
// non-negative integer (so possibly 1e30 or 10.0), saturating at MaxInt64.
func schemaInt(n json.Number) int64 {
	if n == "" {
		return 0
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i
	}
	f, err := strconv.ParseFloat(string(n), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), f < 0:
		return 0
	case f >= math.MaxInt64 || errors.Is(err, strconv.ErrRange):
		return math.MaxInt64
	}
	return int64(f)
}

func ptrTo[T any](v T) *T { return &v }

func runLookup(ctx context.Context, c catalogv1connect.CatalogServiceClient, a *catalogArgs) (any, []bcp.Message, error) {
	r, err := c.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: a.Catalog.IDs}))
	if err != nil {
		return nil, nil, err
	}
	out := lookupPayload{Products: make([]ucpProduct, 0, len(r.Msg.GetProducts()))}
	for _, p := range r.Msg.GetProducts() {
		out.Products = append(out.Products, toUCPProduct(p))
	}
	// UCP: unknown identifiers are left out, optionally named by info
	// messages with code not_found and the identifier as content.
	var msgs []bcp.Message
	for _, id := range r.Msg.GetNotFound() {
		msgs = append(msgs, bcp.Info(bcp.CodeNotFound, "", id))
	}
	return out, msgs, nil
}

func runGetProduct(ctx context.Context, c catalogv1connect.CatalogServiceClient, a *catalogArgs) (any, []bcp.Message, error) {
	r, err := c.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: []string{a.Catalog.ID}, AllVariants: true}))
	if err != nil {
		return nil, nil, err
	}
	if len(r.Msg.GetProducts()) == 0 {
		return nil, nil, apperr.NotFound(bcp.CodeNotFound, "no product %q", a.Catalog.ID)
	}
	p := toUCPProduct(r.Msg.GetProducts()[0])
	// get_product is not a lookup: its variants carry no inputs.
	for i := range p.Variants {
		p.Variants[i].Inputs = nil
	}
	return productPayload{Product: p}, nil, nil
}

// The UCP catalog shapes (types/product.json, variant.json) the edge
// renders; prices are integer minor units.
type (
	searchPayload struct {
		Products   []ucpProduct `json:"products"`
		Pagination struct {
			HasNextPage bool   `json:"has_next_page"`
			Cursor      string `json:"cursor,omitempty"`
		} `json:"pagination"`
	}
	lookupPayload struct {
		Products []ucpProduct `json:"products"`
	}
	productPayload struct {
		Product ucpProduct `json:"product"`
	}
	ucpProduct struct {
		ID          string         `json:"id"`
		Title       string         `json:"title"`
		Description ucpDescription `json:"description"`
		Categories  []ucpCategory  `json:"categories,omitempty"`
		PriceRange  ucpPriceRange  `json:"price_range"`
		Media       []ucpMedia     `json:"media,omitempty"`
		Variants    []ucpVariant   `json:"variants"`
	}
	ucpVariant struct {
		ID           string          `json:"id"`
		SKU          string          `json:"sku,omitempty"`
		Title        string          `json:"title"`
		Description  ucpDescription  `json:"description"`
		Price        ucpPrice        `json:"price"`
		Availability ucpAvailability `json:"availability"`
		Media        []ucpMedia      `json:"media,omitempty"`
		Inputs       []ucpInput      `json:"inputs,omitempty"`
	}
	ucpDescription struct {
		Plain string `json:"plain"`
	}
	ucpCategory struct {
		Value    string `json:"value"`
		Taxonomy string `json:"taxonomy"`
	}
	ucpPrice struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
	ucpPriceRange struct {
		Min ucpPrice `json:"min"`
		Max ucpPrice `json:"max"`
	}
	ucpMedia struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	ucpAvailability struct {
		Available bool   `json:"available"`
		Status    string `json:"status"`
	}
	ucpInput struct {
		ID    string `json:"id"`
		Match string `json:"match"`
	}
)

// toUCPProduct renders a catalog product; the service never returns one
// without variants.
func toUCPProduct(p *catalogv1.CatalogProduct) ucpProduct {
	out := ucpProduct{ID: p.GetId(), Title: p.GetTitle(), Description: ucpDescription{Plain: p.GetDescription()}}
	if c := p.GetCategory(); c != "" {
		out.Categories = []ucpCategory{{Value: c, Taxonomy: "merchant"}}
	}
	if u := p.GetImageUrl(); u != "" {
		out.Media = []ucpMedia{{Type: "image", URL: u}}
	}
	for i, v := range p.GetVariants() {
		price := ucpPrice{Amount: v.GetPrice(), Currency: v.GetCurrency()}
		if i == 0 || price.Amount < out.PriceRange.Min.Amount {
			out.PriceRange.Min = price
		}
		if i == 0 || price.Amount > out.PriceRange.Max.Amount {
			out.PriceRange.Max = price
		}
		uv := ucpVariant{ID: v.GetId(), SKU: v.GetSku(), Title: v.GetTitle(), Description: ucpDescription{Plain: v.GetTitle()},
			Price: price, Availability: ucpAvailability{Available: v.GetAvailable(), Status: "out_of_stock"}}
		if v.GetAvailable() {
			uv.Availability.Status = "in_stock"
		}
		if u := v.GetImageUrl(); u != "" {
			uv.Media = []ucpMedia{{Type: "image", URL: u}}
		}
		for _, in := range v.GetInputs() {
			uv.Inputs = append(uv.Inputs, ucpInput{ID: in.GetId(), Match: in.GetMatch()})
		}
		out.Variants = append(out.Variants, uv)
	}
	return out
}

// registerCatalog mounts the catalog operations on the REST binding.
func (r *restEdge) registerCatalog() {
	for _, op := range catalogOps {
		op := op
		r.mux.Handle("POST "+restBase+op.path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			defer func() {
				if p := recover(); p != nil {
					r.m.log.ErrorContext(req.Context(), "edge: panic in REST handler", "op", op.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					errInternal.writeREST(w)
				}
			}()
			args, perr := restCatalogArgs(req)
			if perr != nil {
				perr.writeREST(w)
				return
			}
			out, err := r.m.runCatalog(req.Context(), op, args)
			if err != nil {
				asProtoError(err).writeREST(w)
				return
			}
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(out)
		}))
	}
}

// restCatalogArgs assembles {meta, catalog} from the BCP-Agent header and
// the body (the catalog request object).
func restCatalogArgs(req *http.Request) (json.RawMessage, *protoError) {
	profile, perr := restProfile(req.Header)
	if perr != nil {
		return nil, perr
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxMCPBody+1))
	if err != nil || len(body) > maxMCPBody {
		return nil, newProtoError(http.StatusBadRequest, codeInvalidParams, "invalid_params", "the request body could not be read")
	}
	if len(strings.TrimSpace(string(body))) == 0 || !json.Valid(body) {
		return nil, &protoError{status: http.StatusBadRequest, rpcCode: codeInvalidParams, code: "invalid_params",
			content: "the body must be the catalog request as a JSON object", violations: []violation{{Path: "$.catalog", Message: "not a JSON object"}}}
	}
	meta, _ := json.Marshal(map[string]any{"ucp-agent": map[string]string{"profile": profile}})
	return json.RawMessage(`{"meta":` + string(meta) + `,"catalog":` + string(body) + `}`), nil
}
