// Package catalog is the catalog service: products and variants (a
// variant's id is the BCP item.id), prices in centavos and stock. It owns
// the PostgreSQL schema "catalog" and is reached only through its connect
// API, always in a tenant's scope.
package catalog

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"connectrpc.com/connect"
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
	// Until every RPC is implemented, the rest answer CodeUnimplemented.
	catalogv1connect.UnimplementedCatalogServiceHandler
	pool *pgxpool.Pool
}

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

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

// CreateProduct stores a product with its variants in one transaction.
func (s *Service) CreateProduct(ctx context.Context, req *connect.Request[catalogv1.CreateProductRequest]) (*connect.Response[catalogv1.CreateProductResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Msg.GetProduct()
	if err := validateProduct(p); err != nil {
		return nil, err
	}
	out := &catalogv1.Product{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		id := p.GetId()
		if id == "" {
			id = ids.New("prd")
		}
		row, err := q.InsertProduct(ctx, catalogdb.InsertProductParams{
			TenantID: tid, ID: id, Title: strings.TrimSpace(p.GetTitle()), Description: p.GetDescription(),
			ImageUrl: p.GetImageUrl(), Active: p.GetActive(),
		})
		if err != nil {
			return err
		}
		out = productToProto(row, nil)
		for _, v := range p.GetVariants() {
			vid := v.GetId()
			if vid == "" {
				vid = ids.New("var")
			}
			cur := v.GetCurrency()
			if cur == "" {
				cur = "BRL"
			}
			vr, err := q.InsertVariant(ctx, catalogdb.InsertVariantParams{
				TenantID: tid, ID: vid, ProductID: row.ID, Sku: strings.TrimSpace(v.GetSku()), Title: strings.TrimSpace(v.GetTitle()),
				Price: v.GetPrice(), Currency: cur, Stock: v.GetStock(), Active: v.GetActive(), ImageUrl: v.GetImageUrl(),
			})
			if err != nil {
				return err
			}
			out.Variants = append(out.Variants, variantToProto(vr))
		}
		return nil
	})
	if err != nil {
		if e := apperr.As(err); e.Kind == apperr.KindAlreadyExists {
			return nil, apperr.New(apperr.KindAlreadyExists, "duplicate_product", "a product or variant with that id or SKU already exists")
		}
		return nil, err
	}
	return connect.NewResponse(&catalogv1.CreateProductResponse{Product: out}), nil
}

func validateProduct(p *catalogv1.Product) error {
	if p == nil {
		return apperr.Invalid("product", "product_required", "product is required")
	}
	if t := strings.TrimSpace(p.GetTitle()); t == "" || len(t) > 300 {
		return apperr.Invalid("product.title", "invalid_title", "title is required (1 to 300 characters)")
	}
	if p.GetImageUrl() != "" {
		if u, err := url.Parse(p.GetImageUrl()); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			return apperr.Invalid("product.image_url", "invalid_url", "image_url must be an http(s) URL")
		}
	}
	if len(p.GetVariants()) == 0 {
		return apperr.Invalid("product.variants", "variant_required", "a product needs at least one variant")
	}
	skus := map[string]bool{}
	for i, v := range p.GetVariants() {
		f := fmt.Sprintf("product.variants[%d]", i)
		sku := strings.TrimSpace(v.GetSku())
		if sku == "" || len(sku) > 100 {
			return apperr.Invalid(f+".sku", "invalid_sku", "sku is required (1 to 100 characters)")
		}
		if skus[sku] {
			return apperr.Invalid(f+".sku", "duplicate_sku", "sku %q appears twice", sku)
		}
		skus[sku] = true
		if t := strings.TrimSpace(v.GetTitle()); t == "" || len(t) > 300 {
			return apperr.Invalid(f+".title", "invalid_title", "title is required (1 to 300 characters)")
		}
		if v.GetPrice() < 0 {
			return apperr.Invalid(f+".price", "invalid_price", "price must be zero or more centavos")
		}
		if v.GetStock() < 0 {
			return apperr.Invalid(f+".stock", "invalid_stock", "stock must be zero or more")
		}
		if c := v.GetCurrency(); c != "" && c != "BRL" {
			return apperr.Invalid(f+".currency", "unsupported_currency", "only BRL is supported")
		}
	}
	return nil
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
	out := &catalogv1.Product{Id: p.ID, Title: p.Title, Description: p.Description, ImageUrl: p.ImageUrl, Active: p.Active}
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
