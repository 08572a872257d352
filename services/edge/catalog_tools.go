package edge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// The catalog operations (UCP catalog search and lookup, BCP-renamed):
// MCP tools search_catalog, lookup_catalog and get_product with arguments
// {meta, catalog}, REST POST {base}/catalog/search, /catalog/lookup and
// /catalog/product with the catalog object as the body. Their rows are in
// operations.go; both bindings run runCatalog: validate against the BCP
// schema, fetch and negotiate the agent profile, call the catalog service,
// render the UCP payload and splice the "ucp" envelope in, as runCheckout does for
// checkout. Catalog operations read and change nothing, so idempotency keys
// are not recorded (upstream's REST binding sends none for them).

// catalogArgs are the arguments the executor reads after validation.
type catalogArgs struct {
	Meta struct {
		Agent struct {
			Profile string `json:"profile"`
		} `json:"ucp-agent"`
	} `json:"meta"`
	Catalog json.RawMessage `json:"catalog"`
}

// catalogRequest is the catalog argument the service calls read.
type catalogRequest struct {
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
}

// catalogCall makes a catalog read an operation's service call: read gets
// the catalog argument, and its payload (with any messages) is the result.
func catalogCall(read func(ctx context.Context, c catalogv1connect.CatalogServiceClient, in *catalogRequest) (any, []bcp.Message, error)) serviceCall {
	return func(ctx context.Context, m *mcpEdge, c *opCall) (opResult, error) {
		var in catalogRequest
		if err := json.Unmarshal(c.payload, &in); err != nil {
			return opResult{}, invalidParams(err)
		}
		body, msgs, err := read(ctx, m.catalog, &in)
		if err != nil {
			return opResult{}, err
		}
		if len(msgs) > 0 {
			body = withMessages{body, msgs}
		}
		doc, err := json.Marshal(body)
		return opResult{body: doc}, err
	}
}

// runCatalog executes one catalog operation for either binding.
func (m *mcpEdge) runCatalog(ctx context.Context, req opRequest) (json.RawMessage, error) {
	op := req.op
	var args catalogArgs
	a, err := m.admit(ctx, op, req.args, checkoutCapabilities(tenantFrom(ctx).GetCapabilities()), &args, func() string { return args.Meta.Agent.Profile })
	if err != nil {
		return nil, err
	}
	profile, neg, baseURL := a.profile, a.neg, a.baseURL
	// The same business outcome as a checkout call without checkout in
	// common: the operation's capability was not negotiated.
	if !neg.Has(op.capability) {
		msg := bcp.Error(bcp.CodeCapabilitiesIncompatible, bcp.SeverityUnrecoverable, "",
			"Este agente e a loja não têm esta capacidade de catálogo em comum; continue pela loja.")
		if op.schema == bcpschema.RootCatalogProduct {
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
	res, err := op.call(ctx, m, &opCall{profile: profile, payload: args.Catalog})
	var pe *protoError
	switch {
	case errors.As(err, &pe):
		return nil, pe
	case err != nil:
		if e := apperr.As(err); e.Kind == apperr.KindNotFound {
			return m.errorResponse(bcp.Error(bcp.CodeNotFound, bcp.SeverityUnrecoverable, "$.catalog.id", "Produto não encontrado."), baseURL+"/", false)
		}
		return nil, catalogServiceError(op, err)
	}
	return m.wrap(res.body, envelope{Version: bcpnames.Version, Capabilities: neg.ResponseCapabilities(op.capability)})
}

// catalogServiceError is serviceError, except that an invalid argument the
// catalog names a field of (ids over the batch limit, a stale cursor) is
// reported at its JSONPath in the arguments, as schema violations are.
func catalogServiceError(op *operation, err error) *protoError {
	e := apperr.As(err)
	if e.Kind != apperr.KindInvalidArgument || e.Field == "" {
		return serviceError(err)
	}
	path := "$.catalog." + e.Field
	if op.schema == bcpschema.RootCatalogProduct && strings.HasPrefix(e.Field, "ids") {
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

func runSearch(ctx context.Context, c catalogv1connect.CatalogServiceClient, in *catalogRequest) (any, []bcp.Message, error) {
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

func runLookup(ctx context.Context, c catalogv1connect.CatalogServiceClient, in *catalogRequest) (any, []bcp.Message, error) {
	r, err := c.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: in.IDs}))
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

func runGetProduct(ctx context.Context, c catalogv1connect.CatalogServiceClient, in *catalogRequest) (any, []bcp.Message, error) {
	r, err := c.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: []string{in.ID}, AllVariants: true}))
	if err != nil {
		return nil, nil, err
	}
	if len(r.Msg.GetProducts()) == 0 {
		return nil, nil, apperr.NotFound(bcp.CodeNotFound, "no product %q", in.ID)
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

// restCatalogArgs assembles {meta, catalog} from the BCP-Agent header and
// the body (the catalog request object).
func restCatalogArgs(req *http.Request, _ *operation) (json.RawMessage, *protoError) {
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
