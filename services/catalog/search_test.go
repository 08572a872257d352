package catalog_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"connectrpc.com/connect"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/jackc/pgx/v5/pgxpool"
)

func ptr[T any](v T) *T { return &v }

// seedSearch creates a small Portuguese catalog; offset tells two tenants'
// prices apart.
func (e *env) seedSearch(ctx context.Context, offset int64) {
	e.t.Helper()
	for _, p := range []*catalogv1.Product{
		{Id: "prd_camiseta_preta", Title: "Camiseta Básica Preta", Description: "Algodão penteado, gola careca.", Category: ptr("Vestuário"), Active: true,
			Variants: []*catalogv1.Variant{variant("CAM-PRETA-P", 5990+offset, 0), variant("CAM-PRETA-M", 5990+offset, 4)}},
		{Id: "prd_camiseta_branca", Title: "Camiseta Básica Branca", Description: "Algodão penteado.", Category: ptr("Vestuário"), Active: true,
			Variants: []*catalogv1.Variant{variant("CAM-BRANCA-M", 5490+offset, 3)}},
		{Id: "prd_caneca", Title: "Caneca de Cerâmica 350 ml", Description: "Vai ao micro-ondas.", Category: ptr("Cozinha"), Active: true,
			Variants: []*catalogv1.Variant{variant("CAN-350", 3990+offset, 2)}},
		{Id: "prd_cafe", Title: "Café Especial Torrado 250 g", Description: "Grãos do sul de Minas.", Category: ptr("Mercearia"), Active: true,
			Variants: []*catalogv1.Variant{variant("CAFE-250", 2990+offset, 10)}},
		{Id: "prd_chinelo", Title: "Chinelo de Borracha", Description: "Confortável.", Category: ptr("Calçados"), Active: true,
			Variants: []*catalogv1.Variant{variant("CHI-40", 2490+offset, 0)}},
		{Id: "prd_inativo", Title: "Camiseta Antiga", Category: ptr("Vestuário"), Active: false,
			Variants: []*catalogv1.Variant{variant("CAM-OLD", 1990+offset, 5)}},
	} {
		e.create(ctx, p)
	}
}

func (e *env) search(ctx context.Context, req *catalogv1.SearchCatalogRequest) *catalogv1.SearchCatalogResponse {
	e.t.Helper()
	r, err := e.client.SearchCatalog(ctx, connect.NewRequest(req))
	if err != nil {
		e.t.Fatalf("SearchCatalog %v: %v", req, err)
	}
	return r.Msg
}

func productIDs(ps []*catalogv1.CatalogProduct) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.GetId())
	}
	return out
}

func TestSearchCatalogPortuguese(t *testing.T) {
	e := start(t)
	ctx, other := tenant(), tenant()
	e.seedSearch(ctx, 0)
	e.seedSearch(other, 1000)

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"camiseta preta", []string{"prd_camiseta_preta"}},
		{"caneca ceramica", []string{"prd_caneca"}},                         // no accent finds "Cerâmica"
		{"CANECA CERÂMICA", []string{"prd_caneca"}},                         // case and accents
		{"cafe", []string{"prd_cafe"}},                                      // "Café", not "Caneca"
		{"camizeta preta", []string{"prd_camiseta_preta"}},                  // typo: trigram similarity
		{"camizeta", []string{"prd_camiseta_branca", "prd_camiseta_preta"}}, // typo: equal similarity, by id
		{"cafe", []string{"prd_cafe"}},
		{"camisetas", []string{"prd_camiseta_branca", "prd_camiseta_preta"}}, // plural stems; equal rank by id
		{"micro-ondas", []string{"prd_caneca"}},                              // description
		{"cozinha", []string{"prd_caneca"}},                                  // category
		{"antiga", []string{}},                                               // inactive products are not in the agent's catalog
		{"geladeira", []string{}},
	} {
		got := productIDs(e.search(ctx, &catalogv1.SearchCatalogRequest{Query: c.query}).GetProducts())
		if !slices.Equal(got, c.want) {
			t.Errorf("search %q = %v, want %v", c.query, got, c.want)
		}
	}

	// Results carry variants with prices in centavos, availability and the
	// item id checkout takes; the available variant is featured first.
	r := e.search(other, &catalogv1.SearchCatalogRequest{Query: "camiseta preta"})
	if len(r.GetProducts()) != 1 {
		t.Fatalf("other tenant: %v", r.GetProducts())
	}
	p := r.GetProducts()[0]
	if p.GetCategory() != "Vestuário" || len(p.GetVariants()) != 2 {
		t.Fatalf("product = %v", p)
	}
	v0, v1 := p.GetVariants()[0], p.GetVariants()[1]
	if v0.GetSku() != "CAM-PRETA-M" || !v0.GetAvailable() || v0.GetPrice() != 6990 || v0.GetCurrency() != "BRL" || v1.GetSku() != "CAM-PRETA-P" || v1.GetAvailable() {
		t.Fatalf("variants = %v", p.GetVariants())
	}

	// Variants' titles and SKUs are searched too, and follow the writes.
	if got := productIDs(e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "CAM-BRANCA-M"}).GetProducts()); !slices.Equal(got, []string{"prd_camiseta_branca"}) {
		t.Errorf("by SKU: %v", got)
	}
	lim := &catalogv1.Product{Id: "prd_caneca", Title: "Caneca de Cerâmica 350 ml", Description: "Vai ao micro-ondas.", Active: true,
		Variants: []*catalogv1.Variant{variant("CAN-350", 3990, 2), {Sku: "CAN-ED", Title: "Edição limitada dourada", Price: 5990, Stock: 1, Active: true}}}
	if _, err := e.update(ctx, lim); err != nil {
		t.Fatal(err)
	}
	if got := productIDs(e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "edicao dourada"}).GetProducts()); !slices.Equal(got, []string{"prd_caneca"}) {
		t.Errorf("by variant title: %v", got)
	}
	lim.Variants = lim.Variants[:1]
	if _, err := e.update(ctx, lim); err != nil {
		t.Fatal(err)
	}
	if got := productIDs(e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "edicao dourada"}).GetProducts()); len(got) != 0 {
		t.Errorf("a deactivated variant's title still finds %v", got)
	}

	// Filters: categories (exact values, OR) and price (any variant in
	// range; only those variants returned).
	got := e.search(ctx, &catalogv1.SearchCatalogRequest{Categories: []string{"Cozinha", "Mercearia"}})
	if ids := productIDs(got.GetProducts()); !slices.Equal(ids, []string{"prd_cafe", "prd_caneca"}) {
		t.Errorf("categories = %v", ids)
	}
	got = e.search(ctx, &catalogv1.SearchCatalogRequest{MinPrice: ptr[int64](2500), MaxPrice: ptr[int64](4000)})
	if ids := productIDs(got.GetProducts()); !slices.Equal(ids, []string{"prd_cafe", "prd_caneca"}) {
		t.Errorf("price 2500..4000 = %v", ids)
	}
	got = e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "camiseta", MaxPrice: ptr[int64](5500)})
	if ids := productIDs(got.GetProducts()); !slices.Equal(ids, []string{"prd_camiseta_branca"}) {
		t.Errorf("camiseta ≤ 5500 = %v", ids)
	}
	got = e.search(ctx, &catalogv1.SearchCatalogRequest{MinPrice: ptr[int64](9000), MaxPrice: ptr[int64](100)})
	if len(got.GetProducts()) != 0 {
		t.Errorf("empty price range found %v", productIDs(got.GetProducts()))
	}

	_, err := e.client.SearchCatalog(ctx, connect.NewRequest(&catalogv1.SearchCatalogRequest{Cursor: "not a cursor"}))
	wantErr(t, err, connect.CodeInvalidArgument, "invalid_cursor", "pagination.cursor")
}

// Paging through the whole catalog, with and without a query, returns every
// matching product exactly once, and a cursor only works with its query.
func TestSearchCatalogPagination(t *testing.T) {
	e := start(t)
	ctx := tenant()
	var all []string
	for i := range 23 {
		id := fmt.Sprintf("prd_%02d", i)
		all = append(all, id)
		// Titles share "caneca" and differ in rank (repeated words) so both
		// distinct and equal scores are crossed by page boundaries.
		title := fmt.Sprintf("Caneca modelo %d", i)
		if i%3 == 0 {
			title = fmt.Sprintf("Caneca caneca modelo %d", i)
		}
		e.create(ctx, &catalogv1.Product{Id: id, Title: title, Active: true, Variants: []*catalogv1.Variant{variant(fmt.Sprintf("SKU-%d", i), 1000+int64(i), 1)}})
	}
	for _, query := range []string{"", "caneca", "canecca"} {
		var seen []string
		cursor := ""
		pages := 0
		for {
			r := e.search(ctx, &catalogv1.SearchCatalogRequest{Query: query, Limit: 5, Cursor: cursor})
			pages++
			seen = append(seen, productIDs(r.GetProducts())...)
			if r.GetNextCursor() == "" {
				break
			}
			if pages > 10 {
				t.Fatalf("query %q: more pages than products", query)
			}
			cursor = r.GetNextCursor()
		}
		sorted := slices.Clone(seen)
		slices.Sort(sorted)
		if !slices.Equal(sorted, all) || pages != 5 {
			t.Errorf("query %q: %d pages, products %v, want each of %v once", query, pages, seen, all)
		}
		if query == "" && !slices.Equal(seen, all) {
			t.Errorf("browse order = %v, want id order", seen)
		}
	}
	// Default page size 10; a cursor from another query is refused.
	r := e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "caneca"})
	if len(r.GetProducts()) != 10 || r.GetNextCursor() == "" {
		t.Fatalf("default page: %d products, cursor %q", len(r.GetProducts()), r.GetNextCursor())
	}
	_, err := e.client.SearchCatalog(ctx, connect.NewRequest(&catalogv1.SearchCatalogRequest{Query: "modelo", Cursor: r.GetNextCursor()}))
	wantErr(t, err, connect.CodeInvalidArgument, "invalid_cursor", "pagination.cursor")
}

func TestLookupCatalog(t *testing.T) {
	e := start(t)
	ctx, other := tenant(), tenant()
	e.seedSearch(ctx, 0)
	e.seedSearch(other, 1000)
	cam := e.get(ctx, "prd_camiseta_preta")
	m := bySKU(cam)["CAM-PRETA-M"].GetId()
	p := bySKU(cam)["CAM-PRETA-P"].GetId()
	otherCafe := bySKU(e.get(other, "prd_cafe"))["CAFE-250"].GetId()
	inactive := bySKU(e.get(ctx, "prd_inativo"))["CAM-OLD"].GetId()

	r, err := e.client.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{
		Ids: []string{"prd_caneca", p, "prd_caneca", "prd_nope", "prd_camiseta_preta", otherCafe, inactive},
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Msg
	if ids := productIDs(got.GetProducts()); !slices.Equal(ids, []string{"prd_caneca", "prd_camiseta_preta"}) {
		t.Fatalf("products = %v", ids)
	}
	// The camiseta once, with the requested variant (exact) and the
	// featured one for the product id.
	vs := got.GetProducts()[1].GetVariants()
	if len(vs) != 2 || vs[0].GetId() != m || vs[0].GetInputs()[0].GetMatch() != "featured" || vs[1].GetId() != p ||
		vs[1].GetInputs()[0].GetId() != p || vs[1].GetInputs()[0].GetMatch() != "exact" {
		t.Fatalf("camiseta variants = %v", vs)
	}
	// Another tenant's id and an inactive variant are simply not found.
	if !slices.Equal(got.GetNotFound(), []string{"prd_nope", otherCafe, inactive}) {
		t.Fatalf("not_found = %v", got.GetNotFound())
	}

	// A SKU resolves to its variant (exact); an id naming a variant wins
	// over a product with that id.
	r, err = e.client.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: []string{"CAN-350", "CAM-PRETA-M", "CAM-OLD"}}))
	if err != nil {
		t.Fatal(err)
	}
	if ids := productIDs(r.Msg.GetProducts()); !slices.Equal(ids, []string{"prd_caneca", "prd_camiseta_preta"}) || !slices.Equal(r.Msg.GetNotFound(), []string{"CAM-OLD"}) {
		t.Fatalf("by SKU: %v, not found %v", ids, r.Msg.GetNotFound())
	}
	if in := r.Msg.GetProducts()[1].GetVariants()[0].GetInputs(); len(r.Msg.GetProducts()[1].GetVariants()) != 1 || in[0].GetId() != "CAM-PRETA-M" || in[0].GetMatch() != "exact" {
		t.Fatalf("by SKU: %v", r.Msg.GetProducts()[1])
	}

	// get_product's form: every active variant, the requested one first.
	r, err = e.client.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: []string{p}, AllVariants: true}))
	if err != nil {
		t.Fatal(err)
	}
	if vs := r.Msg.GetProducts()[0].GetVariants(); len(vs) != 2 || vs[0].GetId() != p || vs[1].GetId() != m {
		t.Fatalf("all variants = %v", vs)
	}

	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf("prd_%d", i)
	}
	_, err = e.client.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: many}))
	wantErr(t, err, connect.CodeInvalidArgument, "request_too_large", "ids")
	// 50 distinct ids (duplicates do not count) are fine.
	if _, err := e.client.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: append(many[:50], many[0])})); err != nil {
		t.Fatalf("50 distinct ids: %v", err)
	}
}

// A writer that does not set the category (the admin form, CSV import)
// keeps it; setting it to "" clears it.
func TestCategoryKeptWhenUnset(t *testing.T) {
	e := start(t)
	ctx := tenant()
	e.create(ctx, &catalogv1.Product{Id: "prd_x", Title: "Caneca", Category: ptr("Cozinha"), Active: true, Variants: []*catalogv1.Variant{variant("X", 100, 1)}})
	got, err := e.update(ctx, &catalogv1.Product{Id: "prd_x", Title: "Caneca azul", Active: true, Variants: []*catalogv1.Variant{variant("X", 100, 1)}})
	if err != nil || got.GetCategory() != "Cozinha" || got.GetTitle() != "Caneca azul" {
		t.Fatalf("update without category: %v %v", got, err)
	}
	if r := e.importProducts(ctx, false, &catalogv1.Product{Id: "prd_x", Title: "Caneca azul", Active: true, Variants: []*catalogv1.Variant{variant("X", 100, 1)}}); r.GetUnchanged() != 1 {
		t.Fatalf("import without category must change nothing: %v", r)
	}
	got, err = e.update(ctx, &catalogv1.Product{Id: "prd_x", Title: "Caneca azul", Category: ptr(""), Active: true, Variants: []*catalogv1.Variant{variant("X", 100, 1)}})
	if err != nil || got.Category == nil || got.GetCategory() != "" {
		t.Fatalf("update clearing category: %v %v", got, err)
	}
}

// First-page searches with a query are counted per folded term; the terms
// that found nothing are listed apart; another tenant's searches never
// show.
func TestSearchTerms(t *testing.T) {
	e := start(t)
	ctx, other := tenant(), tenant()
	e.seedSearch(ctx, 0)
	e.seedSearch(other, 0)
	for _, q := range []string{"Caneca", "caneca", "CANECA", "café", "cafe", "geladeira", "geladeira", "camiseta"} {
		e.search(ctx, &catalogv1.SearchCatalogRequest{Query: q})
	}
	r := e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "camiseta", Limit: 1})
	e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "camiseta", Limit: 1, Cursor: r.GetNextCursor()}) // a next page is not a search
	e.search(ctx, &catalogv1.SearchCatalogRequest{})                                                       // browsing is not a search
	e.search(other, &catalogv1.SearchCatalogRequest{Query: "chinelo"})

	got, err := e.client.SearchTerms(ctx, connect.NewRequest(&catalogv1.SearchTermsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	str := func(ts []*catalogv1.SearchTerm) string {
		var out []string
		for _, x := range ts {
			out = append(out, fmt.Sprintf("%s:%d/%d", x.GetTerm(), x.GetSearches(), x.GetEmpty()))
		}
		return fmt.Sprint(out)
	}
	if s := str(got.Msg.GetTop()); s != "[caneca:3/0 cafe:2/0 camiseta:2/0 geladeira:2/2]" {
		t.Errorf("top = %s", s)
	}
	if s := str(got.Msg.GetNoResults()); s != "[geladeira:2/2]" {
		t.Errorf("no results = %s", s)
	}
	got, err = e.client.SearchTerms(other, connect.NewRequest(&catalogv1.SearchTermsRequest{Limit: 1}))
	if err != nil || str(got.Msg.GetTop()) != "[chinelo:1/0]" || len(got.Msg.GetNoResults()) != 0 {
		t.Errorf("other tenant: %v %v", got, err)
	}
}

// Text PostgreSQL cannot store (NUL, invalid UTF-8) is an invalid argument
// at its field, never an internal error.
func TestCatalogUnstorableText(t *testing.T) {
	e := start(t)
	ctx := tenant()
	_, err := e.client.LookupCatalog(ctx, connect.NewRequest(&catalogv1.LookupCatalogRequest{Ids: []string{"prd_a", "prd\x00b"}}))
	wantErr(t, err, connect.CodeInvalidArgument, "invalid_id", "ids[1]")
	_, err = e.client.SearchCatalog(ctx, connect.NewRequest(&catalogv1.SearchCatalogRequest{Categories: []string{"Casa", "Co\x00zinha"}}))
	wantErr(t, err, connect.CodeInvalidArgument, "invalid_category", "filters.categories[1]")
	_, err = e.client.SearchCatalog(ctx, connect.NewRequest(&catalogv1.SearchCatalogRequest{Query: "cane\x00ca"}))
	wantErr(t, err, connect.CodeInvalidArgument, "invalid_query", "query")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"d":"x","i":"a\u0000b"}`))
	_, err = e.client.SearchCatalog(ctx, connect.NewRequest(&catalogv1.SearchCatalogRequest{Cursor: forged}))
	wantErr(t, err, connect.CodeInvalidArgument, "invalid_cursor", "pagination.cursor")
}

// A search writes nothing: its term is counted in memory and written on a
// clean stop (Run's end), or before the merchant reads the terms; two
// spellings of one term add to one row.
func TestSearchTermsCountedInMemory(t *testing.T) {
	e := start(t)
	ctx := tenant()
	e.seedSearch(ctx, 0)
	run, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.svc.Run(run, slog.New(slog.DiscardHandler)) }()
	for _, q := range []string{"Café", "cafe", "geladeira"} {
		e.search(ctx, &catalogv1.SearchCatalogRequest{Query: q})
	}
	super, err := pgxpool.New(context.Background(), e.db.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	rows := func() string {
		t.Helper()
		var out string
		if err := super.QueryRow(context.Background(), `SELECT coalesce(string_agg(term || ':' || searches || '/' || empty, ' ' ORDER BY term), '') FROM catalog.search_terms`).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := rows(); got != "" {
		t.Fatalf("searches wrote %q before any flush; want nothing", got)
	}
	stop()
	<-done
	if got := rows(); got != "cafe:2/0 geladeira:1/1" {
		t.Fatalf("after a clean stop: %q, want cafe:2/0 geladeira:1/1", got)
	}
}
