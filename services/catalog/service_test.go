package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/services/catalog"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type env struct {
	t      *testing.T
	db     *testdb.DB
	svc    *catalog.Service
	client catalogv1connect.CatalogServiceClient
}

// start serves the catalog handler with the interceptors platform.Start
// mounts (error mapping, service auth) over real HTTP on a fresh database.
func start(t *testing.T) *env {
	t.Helper()
	d := testdb.New(t)
	tokens := svcauth.Tokens{Internal: "int", Operator: "op"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	svc := catalog.New(d.Pool)
	mux.Handle(catalogv1connect.NewCatalogServiceHandler(svc,
		connect.WithInterceptors(apperr.Interceptor(log), svcauth.Server(tokens, catalog.Policy))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{t: t, db: d, svc: svc, client: catalogv1connect.NewCatalogServiceClient(srv.Client(), srv.URL,
		connect.WithInterceptors(svcauth.Client("int")))}
}

func tenant() context.Context { return tenancy.With(context.Background(), uuid.New()) }

func (e *env) create(ctx context.Context, p *catalogv1.Product) *catalogv1.Product {
	e.t.Helper()
	r, err := e.client.CreateProduct(ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: p}))
	if err != nil {
		e.t.Fatalf("CreateProduct %s: %v", p.GetId(), err)
	}
	return r.Msg.GetProduct()
}

func (e *env) get(ctx context.Context, id string) *catalogv1.Product {
	e.t.Helper()
	r, err := e.client.GetProduct(ctx, connect.NewRequest(&catalogv1.GetProductRequest{Id: id}))
	if err != nil {
		e.t.Fatalf("GetProduct %s: %v", id, err)
	}
	return r.Msg.GetProduct()
}

func (e *env) update(ctx context.Context, p *catalogv1.Product) (*catalogv1.Product, error) {
	r, err := e.client.UpdateProduct(ctx, connect.NewRequest(&catalogv1.UpdateProductRequest{Product: p}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetProduct(), nil
}

func (e *env) importProducts(ctx context.Context, dryRun bool, ps ...*catalogv1.Product) *catalogv1.ImportProductsResponse {
	e.t.Helper()
	r, err := e.client.ImportProducts(ctx, connect.NewRequest(&catalogv1.ImportProductsRequest{Products: ps, DryRun: dryRun}))
	if err != nil {
		e.t.Fatalf("ImportProducts: %v", err)
	}
	return r.Msg
}

// stamps reads every catalog row's updated_at of the tenant of ctx, as the
// superuser (the API does not expose it).
func (e *env) stamps(ctx context.Context) map[string]time.Time {
	e.t.Helper()
	tid, _ := tenancy.From(ctx)
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT 'p:' || id, updated_at FROM catalog.products WHERE tenant_id = $1
		UNION ALL SELECT 'v:' || id, updated_at FROM catalog.variants WHERE tenant_id = $1`, tid)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var ts time.Time
		if err := rows.Scan(&id, &ts); err != nil {
			e.t.Fatal(err)
		}
		out[id] = ts
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// wantErr checks a connect error's code and the domain code and field the
// error interceptor put in its metadata.
func wantErr(t *testing.T, err error, code connect.Code, appCode, field string) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a connect error %s/%s", err, code, appCode)
	}
	e := apperr.FromConnect(ce)
	if ce.Code() != code || e.Code != appCode || e.Field != field {
		t.Fatalf("got %s %s field %q (%s), want %s %s field %q", ce.Code(), e.Code, e.Field, ce.Message(), code, appCode, field)
	}
}

func variant(sku string, price, stock int64) *catalogv1.Variant {
	return &catalogv1.Variant{Sku: sku, Title: "Variante " + sku, Price: price, Stock: stock, Active: true}
}

func bySKU(p *catalogv1.Product) map[string]*catalogv1.Variant {
	out := map[string]*catalogv1.Variant{}
	for _, v := range p.GetVariants() {
		out[v.GetSku()] = v
	}
	return out
}

func TestUpdateReplacesAndDeactivatesNeverDeletes(t *testing.T) {
	e := start(t)
	ctx := tenant()
	created := e.create(ctx, &catalogv1.Product{Id: "prd_cam", Title: "Camiseta", Active: true, Variants: []*catalogv1.Variant{
		variant("CAM-P", 5990, 10), variant("CAM-M", 5990, 10), variant("CAM-G", 6490, 3),
	}})
	orig := bySKU(created)
	other := e.create(ctx, &catalogv1.Product{Id: "prd_caneca", Title: "Caneca", Active: true, Variants: []*catalogv1.Variant{variant("CAN-1", 3990, 5)}})
	before := e.stamps(ctx)

	// P by id with a new price, M by SKU unchanged, G left out, GG new.
	p := orig["CAM-P"]
	got, err := e.update(ctx, &catalogv1.Product{Id: "prd_cam", Title: "Camiseta Básica", Active: true, Variants: []*catalogv1.Variant{
		{Id: p.GetId(), Sku: "CAM-P", Title: p.GetTitle(), Price: 4990, Stock: 10, Active: true},
		variant("CAM-M", 5990, 10),
		variant("CAM-GG", 6990, 2),
	}})
	if err != nil {
		t.Fatal(err)
	}
	vs := bySKU(got)
	if len(got.GetVariants()) != 4 || got.GetTitle() != "Camiseta Básica" {
		t.Fatalf("after update: %v", got)
	}
	if vs["CAM-P"].GetId() != p.GetId() || vs["CAM-P"].GetPrice() != 4990 {
		t.Fatalf("CAM-P not updated in place: %v", vs["CAM-P"])
	}
	if vs["CAM-M"].GetId() != orig["CAM-M"].GetId() {
		t.Fatalf("CAM-M matched by SKU must keep its id: %v", vs["CAM-M"])
	}
	if g := vs["CAM-G"]; g.GetId() != orig["CAM-G"].GetId() || g.GetActive() || g.GetStock() != 3 {
		t.Fatalf("CAM-G left out must be deactivated and otherwise kept: %v", g)
	}
	if gg := vs["CAM-GG"]; !strings.HasPrefix(gg.GetId(), "var_") || !gg.GetActive() {
		t.Fatalf("CAM-GG must be created with a generated id: %v", gg)
	}
	after := e.stamps(ctx)
	if !after["v:"+orig["CAM-M"].GetId()].Equal(before["v:"+orig["CAM-M"].GetId()]) {
		t.Fatal("an unchanged variant's updated_at moved")
	}
	if !after["p:prd_caneca"].Equal(before["p:prd_caneca"]) {
		t.Fatal("another product's updated_at moved")
	}
	if after["v:"+p.GetId()].Equal(before["v:"+p.GetId()]) {
		t.Fatal("a changed variant's updated_at did not move")
	}

	// Listing the deactivated variant again by SKU reactivates the same row,
	// and two variants may swap SKUs in one update.
	got, err = e.update(ctx, &catalogv1.Product{Id: "prd_cam", Title: "Camiseta Básica", Active: true, Variants: []*catalogv1.Variant{
		{Id: vs["CAM-P"].GetId(), Sku: "CAM-M", Title: "P", Price: 4990, Stock: 10, Active: true},
		{Id: vs["CAM-M"].GetId(), Sku: "CAM-P", Title: "M", Price: 5990, Stock: 10, Active: true},
		variant("CAM-G", 6490, 3),
		variant("CAM-GG", 6990, 2),
	}})
	if err != nil {
		t.Fatal(err)
	}
	swapped := bySKU(got)
	if swapped["CAM-M"].GetId() != p.GetId() || swapped["CAM-P"].GetId() != orig["CAM-M"].GetId() {
		t.Fatalf("SKU swap: %v", got.GetVariants())
	}
	if g := swapped["CAM-G"]; g.GetId() != orig["CAM-G"].GetId() || !g.GetActive() || len(got.GetVariants()) != 4 {
		t.Fatalf("CAM-G must be reactivated in place: %v", got.GetVariants())
	}

	base := func(vs ...*catalogv1.Variant) *catalogv1.Product {
		return &catalogv1.Product{Id: "prd_cam", Title: "Camiseta", Active: true, Variants: vs}
	}
	_, err = e.update(ctx, base(variant("CAN-1", 100, 1)))
	wantErr(t, err, connect.CodeInvalidArgument, "sku_taken", "product.variants[0].sku")
	_, err = e.update(ctx, base(&catalogv1.Variant{Id: other.GetVariants()[0].GetId(), Sku: "X-1", Title: "x", Price: 1, Active: true}))
	wantErr(t, err, connect.CodeInvalidArgument, "variant_of_other_product", "product.variants[0].id")
	// A new variant may not take the SKU of a variant that is left out: that
	// one is only deactivated and keeps its SKU.
	_, err = e.update(ctx, base(&catalogv1.Variant{Id: "var_novo", Sku: "CAM-G", Title: "x", Price: 1, Active: true}))
	wantErr(t, err, connect.CodeInvalidArgument, "sku_taken", "product.variants[0].sku")
	_, err = e.update(ctx, base(variant("A", -1, 1)))
	wantErr(t, err, connect.CodeInvalidArgument, "invalid_price", "product.variants[0].price")
	_, err = e.update(ctx, &catalogv1.Product{Id: "prd_nope", Title: "x", Variants: []*catalogv1.Variant{variant("Z", 1, 1)}})
	wantErr(t, err, connect.CodeNotFound, "product_not_found", "")
	_, err = e.update(ctx, &catalogv1.Product{Title: "x", Variants: []*catalogv1.Variant{variant("Z", 1, 1)}})
	wantErr(t, err, connect.CodeInvalidArgument, "id_required", "product.id")

	// Failed updates wrote nothing.
	if now := e.get(ctx, "prd_cam"); !proto.Equal(now, got) {
		t.Fatalf("a failed update changed the product:\n%v\n%v", now, got)
	}
	_, err = e.client.GetProduct(ctx, connect.NewRequest(&catalogv1.GetProductRequest{Id: "prd_nope"}))
	wantErr(t, err, connect.CodeNotFound, "product_not_found", "")

	// ListProducts still pages through everything, inactive variants included.
	l, err := e.client.ListProducts(ctx, connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 1}))
	if err != nil || len(l.Msg.GetProducts()) != 1 || l.Msg.GetNextPageToken() == "" {
		t.Fatalf("ListProducts page 1: %v %v", l, err)
	}
	l, err = e.client.ListProducts(ctx, connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 1, PageToken: l.Msg.GetNextPageToken()}))
	if err != nil || len(l.Msg.GetProducts()) != 1 || l.Msg.GetProducts()[0].GetId() != "prd_caneca" {
		t.Fatalf("ListProducts page 2: %v %v", l, err)
	}
}

func catalogFile() []*catalogv1.Product {
	return []*catalogv1.Product{
		{Id: "prd_cam", Title: "Camiseta", Description: "Algodão", Active: true, Variants: []*catalogv1.Variant{
			variant("CAM-P", 5990, 10), variant("CAM-M", 5990, 10), variant("CAM-G", 6490, 3),
		}},
		// No ids: found again through the SKU on the second import.
		{Title: "Caneca", ImageUrl: "https://cdn.example.com.br/caneca.png", Active: true, Variants: []*catalogv1.Variant{
			{Sku: "CAN-350", Title: "Caneca 350 ml", Price: 3990, Currency: "BRL", Stock: 100, Active: true},
		}},
		{Id: "prd_cafe", Title: "Café", Active: true, Variants: []*catalogv1.Variant{
			{Id: "var_cafe_250", Sku: "CAF-250", Title: "Café 250 g", Price: 4500, Stock: 25, Active: true},
		}},
	}
}

func TestImportIsIdempotent(t *testing.T) {
	e := start(t)
	ctx := tenant()
	r := e.importProducts(ctx, true, catalogFile()...)
	if r.GetCreated() != 3 || len(r.GetErrors()) != 0 {
		t.Fatalf("dry run: %v", r)
	}
	if len(e.stamps(ctx)) != 0 {
		t.Fatal("a dry run wrote rows")
	}
	r = e.importProducts(ctx, false, catalogFile()...)
	if r.GetCreated() != 3 || r.GetUpdated() != 0 || r.GetUnchanged() != 0 || len(r.GetErrors()) != 0 {
		t.Fatalf("first import: %v", r)
	}
	if v := bySKU(e.get(ctx, "prd_cafe"))["CAF-250"]; v.GetId() != "var_cafe_250" {
		t.Fatalf("a given variant id must be kept: %v", v)
	}
	before := e.stamps(ctx)
	if len(before) != 3+5 {
		t.Fatalf("rows after import: %d", len(before))
	}
	r = e.importProducts(ctx, false, catalogFile()...)
	if r.GetCreated() != 0 || r.GetUpdated() != 0 || r.GetUnchanged() != 3 || len(r.GetErrors()) != 0 {
		t.Fatalf("second import: %v", r)
	}
	if after := e.stamps(ctx); len(after) != len(before) {
		t.Fatalf("the second import added rows: %d -> %d", len(before), len(after))
	} else {
		for id, ts := range before {
			if !after[id].Equal(ts) {
				t.Fatalf("%s: updated_at moved on an identical import", id)
			}
		}
	}

	// One product changes (a price, a variant left out); the others stay.
	f := catalogFile()
	f[0].Variants = f[0].Variants[:2]
	f[0].Variants[0].Price = 5490
	r = e.importProducts(ctx, true, f...)
	if r.GetUpdated() != 1 || r.GetUnchanged() != 2 {
		t.Fatalf("dry run of a change: %v", r)
	}
	if got := bySKU(e.get(ctx, "prd_cam"))["CAM-P"].GetPrice(); got != 5990 {
		t.Fatalf("a dry run applied a price: %d", got)
	}
	r = e.importProducts(ctx, false, f...)
	if r.GetCreated() != 0 || r.GetUpdated() != 1 || r.GetUnchanged() != 2 {
		t.Fatalf("import of a change: %v", r)
	}
	cam := bySKU(e.get(ctx, "prd_cam"))
	if cam["CAM-P"].GetPrice() != 5490 || cam["CAM-G"].GetActive() || len(cam) != 3 {
		t.Fatalf("after change: %v", cam)
	}
	after := e.stamps(ctx)
	for _, id := range []string{"p:prd_cafe", "p:prd_cam", "v:" + cam["CAM-M"].GetId()} {
		if !after[id].Equal(before[id]) {
			t.Fatalf("%s: updated_at moved though the row did not change", id)
		}
	}
}

func TestImportReportsEveryProblemAndAppliesNothing(t *testing.T) {
	e := start(t)
	ctx := tenant()
	if r := e.importProducts(ctx, false, catalogFile()...); r.GetCreated() != 3 {
		t.Fatalf("seed: %v", r)
	}
	l, _ := e.client.ListProducts(ctx, connect.NewRequest(&catalogv1.ListProductsRequest{}))
	before, stamps := l.Msg, e.stamps(ctx)

	// Three bad rows among good ones, including a change that would
	// otherwise apply.
	f := catalogFile()
	f[0].Variants[0].Price = 1 // valid change, must not apply
	f[0].Variants[1].Price = -100
	f[2].Title = "  "
	f = append(f, &catalogv1.Product{Title: "Boné", Active: true, Variants: []*catalogv1.Variant{variant("CAM-P", 2990, 1)}})
	r := e.importProducts(ctx, false, f...)
	want := []string{
		"products[0].variants[1].price invalid_price",
		"products[2].title invalid_title",
		"products[3].variants[0].sku duplicate_sku",
	}
	if got := errorList(r); !slices.Equal(got, want) || r.GetCreated()+r.GetUpdated()+r.GetUnchanged() != 0 {
		t.Fatalf("errors:\n%s\nwant:\n%s\ncounts %d/%d/%d", strings.Join(got, "\n"), strings.Join(want, "\n"), r.GetCreated(), r.GetUpdated(), r.GetUnchanged())
	}
	l, _ = e.client.ListProducts(ctx, connect.NewRequest(&catalogv1.ListProductsRequest{}))
	if !proto.Equal(l.Msg, before) {
		t.Fatal("an import with errors changed the catalog")
	}
	for id, ts := range e.stamps(ctx) {
		if !stamps[id].Equal(ts) {
			t.Fatalf("%s changed by a rejected import", id)
		}
	}

	// Every other kind of problem, each reported at its path.
	bad := []*catalogv1.Product{
		{Id: "prd_novo", Title: "Novo", ImageUrl: "ftp://x/y.png", Variants: []*catalogv1.Variant{
			{Sku: "CAN-350", Title: "x", Price: 1, Stock: 1}, // another product's SKU
			{Sku: "N-1", Title: "x", Price: 1, Currency: "USD", Stock: -2, ImageUrl: "not a url"},
			{Sku: "", Title: "", Price: 1},
		}},
		{Id: "prd_cafe", Title: "Café", Variants: []*catalogv1.Variant{
			{Id: "var_outro", Sku: "CAF-250", Title: "x", Price: 1}, // SKU belongs to var_cafe_250
		}},
		{Id: "prd with spaces", Title: "x"},
		{Id: "prd_novo", Title: "Duplicado", Description: "nul \x00", Variants: []*catalogv1.Variant{
			{Sku: "N-2", Title: "linha\nquebrada", Price: 1}}},
	}
	r = e.importProducts(ctx, false, bad...)
	want = []string{
		"products[0].image_url invalid_url",
		"products[0].variants[0].sku sku_taken",
		"products[0].variants[1].currency unsupported_currency",
		"products[0].variants[1].stock invalid_stock",
		"products[0].variants[1].image_url invalid_url",
		"products[0].variants[2].sku invalid_sku",
		"products[0].variants[2].title invalid_title",
		"products[1].variants[0].id variant_id_mismatch",
		"products[2].id invalid_id",
		"products[2].variants variant_required",
		"products[3].id duplicate_product",
		"products[3].description invalid_description",
		"products[3].variants[0].title invalid_title",
	}
	if got := errorList(r); !slices.Equal(got, want) {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, ie := range r.GetErrors() {
		if ie.GetMessage() == "" {
			t.Fatalf("%s has no message", ie.GetPath())
		}
	}

	// A request malformed as a whole is an RPC error.
	_, err := e.client.ImportProducts(ctx, connect.NewRequest(&catalogv1.ImportProductsRequest{}))
	wantErr(t, err, connect.CodeInvalidArgument, "products_required", "products")
}

func errorList(r *catalogv1.ImportProductsResponse) []string {
	var out []string
	for _, e := range r.GetErrors() {
		out = append(out, e.GetPath()+" "+e.GetCode())
	}
	return out
}

func TestTenantsNeverSeeEachOther(t *testing.T) {
	e := start(t)
	a, b := tenant(), tenant()
	pa := e.create(a, &catalogv1.Product{Id: "prd_x", Title: "Produto de A", Active: true, Variants: []*catalogv1.Variant{
		{Id: "var_x", Sku: "X-1", Title: "X", Price: 1000, Stock: 5, Active: true},
	}})
	_, err := e.client.GetProduct(b, connect.NewRequest(&catalogv1.GetProductRequest{Id: "prd_x"}))
	wantErr(t, err, connect.CodeNotFound, "product_not_found", "")
	gv, err := e.client.GetVariants(b, connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: []string{"var_x"}}))
	if err != nil || len(gv.Msg.GetVariants()) != 0 {
		t.Fatalf("B sees A's variant: %v %v", gv, err)
	}
	_, err = e.update(b, &catalogv1.Product{Id: "prd_x", Title: "hijack", Variants: []*catalogv1.Variant{variant("X-1", 1, 1)}})
	wantErr(t, err, connect.CodeNotFound, "product_not_found", "")

	// Same product id and SKU in B: B gets its own product.
	r := e.importProducts(b, false, &catalogv1.Product{Id: "prd_x", Title: "Produto de B", Active: true, Variants: []*catalogv1.Variant{variant("X-1", 2000, 1)}})
	if r.GetCreated() != 1 || len(r.GetErrors()) != 0 {
		t.Fatalf("import into B: %v", r)
	}
	pb := e.get(b, "prd_x")
	if pb.GetTitle() != "Produto de B" || pb.GetVariants()[0].GetId() == "var_x" {
		t.Fatalf("B's product: %v", pb)
	}
	if now := e.get(a, "prd_x"); !proto.Equal(now, pa) {
		t.Fatalf("A's product changed by B's import: %v", now)
	}
	gv, err = e.client.GetVariants(b, connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: []string{"var_x", pb.GetVariants()[0].GetId()}}))
	if err != nil || len(gv.Msg.GetVariants()) != 1 || gv.Msg.GetVariants()[0].GetProductTitle() != "Produto de B" {
		t.Fatalf("B's GetVariants: %v %v", gv, err)
	}

	// No tenant header: refused before the handler.
	_, err = e.client.GetVariants(context.Background(), connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: []string{"var_x"}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("call without tenant: %v", err)
	}
}

func TestGetVariants(t *testing.T) {
	e := start(t)
	ctx := tenant()
	e.create(ctx, &catalogv1.Product{Id: "prd_cam", Title: "Camiseta", Active: true, Variants: []*catalogv1.Variant{
		{Id: "var_p", Sku: "CAM-P", Title: "P", Price: 5990, Stock: 4, Active: true, ImageUrl: "https://cdn.example/p.png"},
		{Id: "var_m", Sku: "CAM-M", Title: "M", Price: 5990, Stock: 0, Active: false},
	}})
	e.create(ctx, &catalogv1.Product{Id: "prd_off", Title: "Fora de linha", Active: false, Variants: []*catalogv1.Variant{
		{Id: "var_off", Sku: "OFF", Title: "Off", Price: 100, Stock: 1, Active: true},
	}})
	r, err := e.client.GetVariants(ctx, connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: []string{"var_off", "nope", "var_p", "", "var_m", "var_p"}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range r.Msg.GetVariants() {
		got = append(got, fmt.Sprintf("%s %s/%s %q %d %d %v %v", v.GetVariant().GetId(), v.GetProductId(), v.GetVariant().GetSku(),
			v.GetProductTitle(), v.GetVariant().GetPrice(), v.GetVariant().GetStock(), v.GetVariant().GetActive(), v.GetProductActive()))
	}
	want := []string{
		`var_off prd_off/OFF "Fora de linha" 100 1 true false`,
		`var_p prd_cam/CAM-P "Camiseta" 5990 4 true true`,
		`var_m prd_cam/CAM-M "Camiseta" 5990 0 false true`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("GetVariants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Msg.GetVariants()[1].GetVariant().GetCurrency() != "BRL" || r.Msg.GetVariants()[1].GetVariant().GetImageUrl() != "https://cdn.example/p.png" {
		t.Fatalf("variant fields: %v", r.Msg.GetVariants()[1])
	}
	r, err = e.client.GetVariants(ctx, connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: []string{"nope", "var_nope"}}))
	if err != nil || len(r.Msg.GetVariants()) != 0 {
		t.Fatalf("unknown ids only: %v %v", r, err)
	}
	r, err = e.client.GetVariants(ctx, connect.NewRequest(&catalogv1.GetVariantsRequest{}))
	if err != nil || len(r.Msg.GetVariants()) != 0 {
		t.Fatalf("no ids: %v %v", r, err)
	}
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("var_%d", i)
	}
	_, err = e.client.GetVariants(ctx, connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: many}))
	wantErr(t, err, connect.CodeInvalidArgument, "too_many_ids", "ids")
}

func TestCreateProductErrors(t *testing.T) {
	e := start(t)
	ctx := tenant()
	e.create(ctx, &catalogv1.Product{Id: "prd_a", Title: "A", Active: true, Variants: []*catalogv1.Variant{variant("A-1", 1, 1)}})
	_, err := e.client.CreateProduct(ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Id: "prd_a", Title: "A", Variants: []*catalogv1.Variant{variant("A-2", 1, 1)}}}))
	wantErr(t, err, connect.CodeAlreadyExists, "duplicate_product", "")
	_, err = e.client.CreateProduct(ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Title: "B", Variants: []*catalogv1.Variant{variant("B-1", 1, 1), variant("B-1", 1, 1)}}}))
	wantErr(t, err, connect.CodeInvalidArgument, "duplicate_sku", "product.variants[1].sku")
	_, err = e.client.CreateProduct(ctx, connect.NewRequest(&catalogv1.CreateProductRequest{}))
	wantErr(t, err, connect.CodeInvalidArgument, "product_required", "product")
}

// Concurrent imports of one tenant serialize: each validates the catalog
// the other left, so the same new file imported twice at once creates once.
func TestConcurrentImportsSerialize(t *testing.T) {
	e := start(t)
	ctx := tenant()
	results := make(chan *catalogv1.ImportProductsResponse, 4)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			r, err := e.client.ImportProducts(ctx, connect.NewRequest(&catalogv1.ImportProductsRequest{Products: catalogFile()}))
			if err != nil {
				errs <- err
				return
			}
			results <- r.Msg
		}()
	}
	var created, unchanged int32
	for range 4 {
		select {
		case err := <-errs:
			t.Fatalf("concurrent import: %v", err)
		case r := <-results:
			if len(r.GetErrors()) != 0 {
				t.Fatalf("concurrent import errors: %v", r.GetErrors())
			}
			created += r.GetCreated()
			unchanged += r.GetUnchanged()
		}
	}
	if created != 3 || unchanged != 9 {
		t.Fatalf("created %d, unchanged %d; want 3 and 9", created, unchanged)
	}
}

// GetVariants keeps one generic plan per connection: with thousands of
// merchants in the cluster PostgreSQL judged the generic plan costlier
// (it guesses ten ids) and planned the lookup again on every call.
func TestLookupVariantsPlansOnce(t *testing.T) {
	ctx := tenant()
	pool := testdb.New(t).OneConnPool(t, nil) // pg_prepared_statements is per connection
	s := catalog.New(pool)
	if _, err := s.CreateProduct(ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Id: "prd_cam", Title: "Camiseta", Active: true, Variants: []*catalogv1.Variant{
			{Id: "var_p", Sku: "CAM-P", Title: "P", Price: 5990, Stock: 4, Active: true},
			{Id: "var_m", Sku: "CAM-M", Title: "M", Price: 5990, Stock: 2, Active: true},
		}}})); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		ids := []string{"var_p"}
		if i%2 == 1 {
			ids = []string{"var_m", "var_p", "nope"}
		}
		r, err := s.GetVariants(ctx, connect.NewRequest(&catalogv1.GetVariantsRequest{Ids: ids}))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(r.Msg.GetVariants()), len(ids)-i%2; got != want {
			t.Fatalf("call %d: %d variants, want %d", i, got, want)
		}
	}
	if custom, generic := testdb.Plans(t, pool, "LookupVariants"); custom != 0 || generic != 8 {
		t.Fatalf("LookupVariants: %d custom and %d generic plans in 8 calls, want 0 and 8", custom, generic)
	}
}

// The checklist's question: an inactive product, a sold-out variant and an
// inactive variant in stock do not count; another merchant's stock is not
// seen.
func TestSalesReadiness(t *testing.T) {
	e := start(t)
	ctx, other := tenant(), tenant()
	readiness := func(ctx context.Context) string {
		t.Helper()
		r, err := e.client.SalesReadiness(ctx, connect.NewRequest(&catalogv1.SalesReadinessRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d %q", r.Msg.GetActiveProducts(), r.Msg.GetInStockTitle())
	}
	if got := readiness(ctx); got != `0 ""` {
		t.Fatalf("empty catalog: %s", got)
	}
	e.create(other, &catalogv1.Product{Id: "prd_x", Title: "Alheio", Active: true, Variants: []*catalogv1.Variant{
		{Id: "var_x", Sku: "X", Title: "X", Price: 100, Stock: 9, Active: true}}})
	e.create(ctx, &catalogv1.Product{Id: "prd_off", Title: "Fora de linha", Active: false, Variants: []*catalogv1.Variant{
		{Id: "var_off", Sku: "OFF", Title: "Off", Price: 100, Stock: 5, Active: true}}})
	e.create(ctx, &catalogv1.Product{Id: "prd_cam", Title: "Camiseta", Active: true, Variants: []*catalogv1.Variant{
		{Id: "var_p", Sku: "CAM-P", Title: "P", Price: 5990, Stock: 0, Active: true},
		{Id: "var_m", Sku: "CAM-M", Title: "M", Price: 5990, Stock: 3, Active: false}}})
	if got := readiness(ctx); got != `1 ""` {
		t.Fatalf("sold out: %s", got)
	}
	e.create(ctx, &catalogv1.Product{Id: "prd_caneca", Title: "Caneca", Active: true, Variants: []*catalogv1.Variant{
		{Id: "var_c", Sku: "CAN", Title: "Única", Price: 3990, Stock: 2, Active: true}}})
	if got := readiness(ctx); got != `2 "Caneca"` {
		t.Fatalf("in stock: %s", got)
	}
}
