// Package catalog is the catalog service: products and variants (a
// variant's id is the BCP item.id), prices in centavos and stock. It owns
// the PostgreSQL schema "catalog" and is reached only through its connect
// API, always in a tenant's scope.
//
// Products and variants are never deleted: orders refer to variants, so a
// variant dropped from a product (UpdateProduct, ImportProducts) is
// deactivated and keeps its id and SKU. SKUs are unique per tenant and
// belong to one product for good.
//
// Stock is reserved when a checkout completes, not when it is created or
// updated. Until then checkout only reads availability through GetVariants
// and compares the requested quantity with stock itself, emitting
// out_of_stock or quantity_adjusted; nothing here holds units for an open
// checkout. Completion will add a ReserveStock RPC that decrements stock
// row by row in its own transaction (it must not take the catalog writer
// lock). Stock set by UpdateProduct or ImportProducts is an absolute count
// from the merchant and replaces the stored one.
//
// Catalog writers of one tenant (CreateProduct, UpdateProduct,
// ImportProducts) serialize on a transaction-scoped advisory lock, so an
// import is validated against exactly the catalog it then changes.
package catalog

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"

	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/services/catalog/catalogdb"
)

// Service implements catalogv1connect.CatalogServiceHandler.
type Service struct {
	pool  *pgxpool.Pool
	terms termCounts // search terms counted in memory (terms.go)
	now   func() time.Time
}

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool, now: time.Now} }

var _ catalogv1connect.CatalogServiceHandler = (*Service)(nil)

// Policy: Ping is internal; every other procedure is tenant-scoped.
func Policy(procedure string) svcauth.Access {
	if procedure == catalogv1connect.CatalogServicePingProcedure {
		return svcauth.Internal
	}
	return svcauth.Tenant
}

// Ping reports the service and whether its database answers.
func (s *Service) Ping(ctx context.Context, _ *connect.Request[catalogv1.PingRequest]) (*connect.Response[catalogv1.PingResponse], error) {
	return connect.NewResponse(&catalogv1.PingResponse{Service: "catalog", DatabaseOk: s.pool.Ping(ctx) == nil}), nil
}

// CreateProduct stores a new product with its variants in one
// transaction. An id or SKU already in the catalog is duplicate_product.
func (s *Service) CreateProduct(ctx context.Context, req *connect.Request[catalogv1.CreateProductRequest]) (*connect.Response[catalogv1.CreateProductResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetProduct() == nil {
		return nil, apperr.Invalid("product", "product_required", "product is required")
	}
	p := normalize(req.Msg.GetProduct())
	if err := firstProblem(checkFields([]productIn{p}, paths{})); err != nil {
		return nil, err
	}
	if p.id == "" {
		p.id = ids.New("prd")
	}
	pp := productPlan{in: p, create: true}
	pp.inserts = newVariants(&pp, make([]*catalogdb.CatalogVariant, len(p.variants)))
	var out *catalogv1.Product
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		if err := q.LockCatalogWrites(ctx, tid); err != nil {
			return err
		}
		if err := apply(ctx, q, tid, []productPlan{pp}); err != nil {
			return err
		}
		out, err = loadProduct(ctx, q, tid, p.id)
		return err
	})
	if err != nil {
		if apperr.IsKind(err, apperr.KindAlreadyExists) {
			return nil, apperr.New(apperr.KindAlreadyExists, "duplicate_product", "a product or variant with that id or SKU already exists")
		}
		return nil, err
	}
	return connect.NewResponse(&catalogv1.CreateProductResponse{Product: out}), nil
}

// GetProduct returns a product with all its variants, inactive ones
// included.
func (s *Service) GetProduct(ctx context.Context, req *connect.Request[catalogv1.GetProductRequest]) (*connect.Response[catalogv1.GetProductResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	id := strings.TrimSpace(req.Msg.GetId())
	if id == "" {
		return nil, apperr.Invalid("id", "id_required", "id is required")
	}
	var out *catalogv1.Product
	// Two reads, a round trip each, no BEGIN and COMMIT.
	err = pgstore.Reads(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		out, err = loadProduct(ctx, catalogdb.New(q), tid, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&catalogv1.GetProductResponse{Product: out}), nil
}

// UpdateProduct replaces an existing product and its variants. A listed
// variant is the product's variant with its id or, without an id, with its
// SKU; otherwise it is created. Variants not listed are deactivated and keep
// their SKU. Rows whose values do not change are not written.
func (s *Service) UpdateProduct(ctx context.Context, req *connect.Request[catalogv1.UpdateProductRequest]) (*connect.Response[catalogv1.UpdateProductResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetProduct() == nil {
		return nil, apperr.Invalid("product", "product_required", "product is required")
	}
	p := normalize(req.Msg.GetProduct())
	if p.id == "" {
		return nil, apperr.Invalid("product.id", "id_required", "the id of the product to update is required")
	}
	items := []productIn{p}
	if err := firstProblem(checkFields(items, paths{})); err != nil {
		return nil, err
	}
	var out *catalogv1.Product
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		if err := q.LockCatalogWrites(ctx, tid); err != nil {
			return err
		}
		st, err := loadState(ctx, q, tid, items)
		if err != nil {
			return err
		}
		if _, ok := st.products[p.id]; !ok {
			return apperr.NotFound("product_not_found", "product %q not found", p.id)
		}
		plans, ps := plan(st, items, paths{}, matchByID)
		if err := firstProblem(ps); err != nil {
			return err
		}
		if err := apply(ctx, q, tid, plans); err != nil {
			return err
		}
		out, err = loadProduct(ctx, q, tid, p.id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&catalogv1.UpdateProductResponse{Product: out}), nil
}

// ImportProducts creates or updates many products, all or nothing.
//
// A product is matched by id; without an id, by the product owning its
// SKUs (so a file without ids imports the same way twice), else created
// with a generated prd_ id. Variants are matched by SKU within the tenant;
// a variant id, when given, must agree. Each listed product is replaced
// entirely, like UpdateProduct: its variants missing from the request are
// deactivated. Products not listed are untouched.
//
// Every problem of the whole request is reported as an ImportError with the
// path of the offending value, and then nothing is applied (counts stay 0).
// Only a request that is malformed as a whole (empty, too large) is an RPC
// error. The counts are per product: created, updated (the product or any
// of its variants changed) and unchanged, which writes nothing, so
// importing the same data twice leaves every updated_at as it was.
func (s *Service) ImportProducts(ctx context.Context, req *connect.Request[catalogv1.ImportProductsRequest]) (*connect.Response[catalogv1.ImportProductsResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Msg.GetProducts()
	switch {
	case len(in) == 0:
		return nil, apperr.Invalid("products", "products_required", "at least one product is required")
	case len(in) > maxImportProducts:
		return nil, apperr.Invalid("products", "too_many_products", "at most %d products per import, got %d", maxImportProducts, len(in))
	}
	items := make([]productIn, len(in))
	variants := 0
	for i, p := range in {
		items[i] = normalize(p)
		variants += len(items[i].variants)
	}
	if variants > maxImportVariants {
		return nil, apperr.Invalid("products", "too_many_variants", "at most %d variants per import, got %d", maxImportVariants, variants)
	}
	pa := paths{list: true}
	resp := &catalogv1.ImportProductsResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		if !req.Msg.GetDryRun() {
			if err := q.LockCatalogWrites(ctx, tid); err != nil {
				return err
			}
		}
		st, err := loadState(ctx, q, tid, items)
		if err != nil {
			return err
		}
		ps := checkFields(items, pa)
		plans, more := plan(st, items, pa, matchBySKU)
		if ps = append(ps, more...); len(ps) > 0 {
			resp.Errors = ps.toProto()
			return nil
		}
		for i := range plans {
			switch plans[i].outcome() {
			case outcomeCreated:
				resp.Created++
			case outcomeUpdated:
				resp.Updated++
			default:
				resp.Unchanged++
			}
		}
		if req.Msg.GetDryRun() {
			return nil
		}
		return apply(ctx, q, tid, plans)
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// GetVariants resolves variant ids (BCP item ids) for checkout, in request
// order, each once. Unknown ids are absent; inactive variants and variants
// of inactive products are returned with their flags, for checkout to say
// why an item is unavailable.
func (s *Service) GetVariants(ctx context.Context, req *connect.Request[catalogv1.GetVariantsRequest]) (*connect.Response[catalogv1.GetVariantsResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	var want []string
	seen := map[string]bool{}
	for _, id := range req.Msg.GetIds() {
		if id != "" && !seen[id] {
			seen[id] = true
			want = append(want, id)
		}
	}
	if len(want) > maxLookupIDs {
		return nil, apperr.Invalid("ids", "too_many_ids", "at most %d ids per call, got %d", maxLookupIDs, len(want))
	}
	resp := &catalogv1.GetVariantsResponse{}
	if len(want) == 0 {
		return connect.NewResponse(resp), nil
	}
	// A generic plan: PostgreSQL planned this lookup on every call once a
	// cluster held thousands of merchants (0.05–0.1 ms, more than the
	// lookup itself; docs/performance.md, round 11).
	err = pgstore.SingleGenericPlan(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		rows, err := catalogdb.New(q).LookupVariants(ctx, catalogdb.LookupVariantsParams{TenantID: tid, Ids: want})
		if err != nil {
			return err
		}
		byID := make(map[string]catalogdb.LookupVariantsRow, len(rows))
		for _, r := range rows {
			byID[r.CatalogVariant.ID] = r
		}
		for _, id := range want {
			if r, ok := byID[id]; ok {
				resp.Variants = append(resp.Variants, &catalogv1.VariantInfo{
					Variant: variantToProto(r.CatalogVariant), ProductId: r.CatalogVariant.ProductID,
					ProductTitle: r.ProductTitle, ProductActive: r.ProductActive,
				})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// loadProduct reads a product and its variants in q's transaction.
func loadProduct(ctx context.Context, q *catalogdb.Queries, tid uuid.UUID, id string) (*catalogv1.Product, error) {
	p, err := q.GetProduct(ctx, catalogdb.GetProductParams{TenantID: tid, ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("product_not_found", "product %q not found", id)
	}
	if err != nil {
		return nil, err
	}
	vs, err := q.ListVariantsOfProducts(ctx, catalogdb.ListVariantsOfProductsParams{TenantID: tid, ProductIds: []string{id}})
	if err != nil {
		return nil, err
	}
	return productToProto(p, vs), nil
}

// firstProblem is the first problem as an invalid-argument error, for the
// single-product RPCs whose errors carry one field.
func firstProblem(ps problems) error {
	if len(ps) == 0 {
		return nil
	}
	p := ps.sorted()[0]
	return apperr.Invalid(p.path, p.code, "%s", p.text)
}

// ListProducts pages through the tenant's products with their variants.
func (s *Service) ListProducts(ctx context.Context, req *connect.Request[catalogv1.ListProductsRequest]) (*connect.Response[catalogv1.ListProductsResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	size := req.Msg.GetPageSize()
	if size <= 0 || size > 500 {
		size = 100
	}
	var after *string
	if tok := req.Msg.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, apperr.Invalid("page_token", "invalid_page_token", "malformed page token")
		}
		s := string(b)
		after = &s
	}
	resp := &catalogv1.ListProductsResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		rows, err := q.ListProducts(ctx, catalogdb.ListProductsParams{TenantID: tid, AfterID: after, PageSize: size})
		if err != nil {
			return err
		}
		pids := make([]string, len(rows))
		for i, r := range rows {
			pids[i] = r.ID
		}
		vs, err := q.ListVariantsOfProducts(ctx, catalogdb.ListVariantsOfProductsParams{TenantID: tid, ProductIds: pids})
		if err != nil {
			return err
		}
		byProduct := map[string][]catalogdb.CatalogVariant{}
		for _, v := range vs {
			byProduct[v.ProductID] = append(byProduct[v.ProductID], v)
		}
		for _, r := range rows {
			resp.Products = append(resp.Products, productToProto(r, byProduct[r.ID]))
		}
		if int32(len(rows)) == size {
			resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(rows[len(rows)-1].ID))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

func productToProto(p catalogdb.CatalogProduct, vs []catalogdb.CatalogVariant) *catalogv1.Product {
	out := &catalogv1.Product{Id: p.ID, Title: p.Title, Description: p.Description, ImageUrl: p.ImageUrl, Active: p.Active, Category: &p.Category}
	for _, v := range vs {
		out.Variants = append(out.Variants, variantToProto(v))
	}
	return out
}

func variantToProto(v catalogdb.CatalogVariant) *catalogv1.Variant {
	return &catalogv1.Variant{
		Id: v.ID, Sku: v.Sku, Title: v.Title, Price: v.Price, Currency: v.Currency, Stock: v.Stock,
		Active: v.Active, ImageUrl: v.ImageUrl,
	}
}

// SalesReadiness answers the go-live checklist's product item in one
// statement, instead of the checklist paging through SearchCatalog.
func (s *Service) SalesReadiness(ctx context.Context, _ *connect.Request[catalogv1.SalesReadinessRequest]) (*connect.Response[catalogv1.SalesReadinessResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	var row catalogdb.SalesReadinessRow
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		row, err = catalogdb.New(q).SalesReadiness(ctx, tid)
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&catalogv1.SalesReadinessResponse{ActiveProducts: row.ActiveProducts, InStockTitle: row.InStockTitle}), nil
}
