package catalog_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
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
		{"camizeta preta", []string{"prd_camiseta_preta"}},                  // typo: corrected to the merchant's words
		{"camizeta", []string{"prd_camiseta_branca", "prd_camiseta_preta"}}, // typo: equal rank, by id
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

// searchWords is the tenant's search words as "word:products", sorted, read
// as the superuser; stale reports the rows of every tenant that differ from
// the words of the active products counted afresh (migration 00040's
// catalog.search_words), in either direction.
func (e *env) searchWords(ctx context.Context) (words []string, stale []string) {
	e.t.Helper()
	tid, _ := tenancy.From(ctx)
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT word || ':' || products FROM catalog.search_words WHERE tenant_id = $1 ORDER BY word`, tid)
	if err != nil {
		e.t.Fatal(err)
	}
	if words, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		e.t.Fatal(err)
	}
	rows, err = conn.Query(ctx, `
		WITH fresh AS (
		  SELECT p.tenant_id, w.word, count(*)::integer AS products
		  FROM catalog.products p, unnest(catalog.search_words(p.title, p.category, p.description, p.variant_text)) w (word)
		  WHERE p.active GROUP BY 1, 2)
		SELECT 'stored ' || x.word || ':' || x.products FROM (SELECT tenant_id, word, products FROM catalog.search_words EXCEPT SELECT * FROM fresh) x
		UNION ALL
		SELECT 'missing ' || x.word || ':' || x.products FROM (SELECT * FROM fresh EXCEPT SELECT tenant_id, word, products FROM catalog.search_words) x`)
	if err != nil {
		e.t.Fatal(err)
	}
	if stale, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		e.t.Fatal(err)
	}
	return words, stale
}

// A misspelt query is corrected against the words of the merchant's own
// active products and searched with full text: a misspelt word becomes the
// merchant's closest word, a word the merchant has not at all is left out,
// and everything else (a number, a negation, a phrase's quotes, a stop
// word) stays as written; another merchant's words are never used.
func TestSearchCorrectsTyposWithMerchantWords(t *testing.T) {
	e := start(t)
	ctx, other := tenant(), tenant()
	e.seedSearch(ctx, 0)
	e.seedSearch(other, 1000)
	e.create(other, &catalogv1.Product{Id: "prd_geladeira", Title: "Geladeira Duplex", Category: ptr("Eletro"), Active: true,
		Variants: []*catalogv1.Variant{variant("GEL-1", 300000, 1)}})

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"camizeta preta", []string{"prd_camiseta_preta"}},
		{"camizeta -preta", []string{"prd_camiseta_branca"}},                          // the negation stays
		{`"camizeta basica"`, []string{"prd_camiseta_branca", "prd_camiseta_preta"}},  // a phrase stays a phrase
		{"camizeta com", []string{"prd_camiseta_branca", "prd_camiseta_preta"}},       // "com" is a stop word, not "confortável"
		{"canneca 350", []string{"prd_caneca"}},                                       // the number stays…
		{"canneca 999", []string{}},                                                   // …and must match
		{"cerâmika", []string{"prd_caneca"}},                                          // accents folded
		{"caneca preta", []string{}},                                                  // both the merchant's words: nothing to correct
		{"camizeta geladeyra", []string{"prd_camiseta_branca", "prd_camiseta_preta"}}, // nothing here is close to "geladeyra"
		{"camizeta -xpto", []string{"prd_camiseta_branca", "prd_camiseta_preta"}},
		{"geladeyra", []string{}}, // another merchant's word
		{"antigua", []string{}},   // an inactive product's word
		{"xpto", []string{}},
	} {
		got := productIDs(e.search(ctx, &catalogv1.SearchCatalogRequest{Query: c.query}).GetProducts())
		if !slices.Equal(got, c.want) {
			t.Errorf("search %q = %v, want %v", c.query, got, c.want)
		}
	}
	if got := productIDs(e.search(other, &catalogv1.SearchCatalogRequest{Query: "geladeyra"}).GetProducts()); !slices.Equal(got, []string{"prd_geladeira"}) {
		t.Errorf("the other merchant's geladeyra = %v", got)
	}
	// A corrected query's second page is corrected the same way.
	r := e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "camizeta", Limit: 1})
	next := e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "camizeta", Limit: 1, Cursor: r.GetNextCursor()})
	if got := append(productIDs(r.GetProducts()), productIDs(next.GetProducts())...); !slices.Equal(got, []string{"prd_camiseta_branca", "prd_camiseta_preta"}) || next.GetNextCursor() != "" {
		t.Errorf("camizeta by pages = %v (next cursor %q)", got, next.GetNextCursor())
	}
}

// The merchant's search words follow every write of its catalog: create,
// update (title, description, category, variants), deactivation, import
// and deletion; each word counts the active products that have it, and a
// word no active product has any more is gone, so a typo is never
// corrected to it.
func TestSearchWordsFollowTheCatalog(t *testing.T) {
	e := start(t)
	ctx, other := tenant(), tenant()
	e.create(other, &catalogv1.Product{Id: "prd_o", Title: "Geladeira", Active: true, Variants: []*catalogv1.Variant{variant("O-1", 100, 1)}})
	check := func(step string, want ...string) {
		t.Helper()
		words, stale := e.searchWords(ctx)
		if !slices.Equal(words, want) || len(stale) != 0 {
			t.Errorf("%s: words %v, want %v; differing from a fresh count: %v", step, words, want, stale)
		}
	}
	finds := func(query string, want ...string) {
		t.Helper()
		if got := productIDs(e.search(ctx, &catalogv1.SearchCatalogRequest{Query: query}).GetProducts()); !slices.Equal(got, append([]string{}, want...)) {
			t.Errorf("search %q = %v, want %v", query, got, want)
		}
	}
	// variant(sku) is titled "Variante <sku>"; "XG" and "1" are too short
	// and the SKU's numbers are not words.
	e.create(ctx, &catalogv1.Product{Id: "prd_a", Title: "Garrafa Térmica", Description: "Inox de parede dupla.", Category: ptr("Cozinha"), Active: true,
		Variants: []*catalogv1.Variant{variant("GAR-1", 100, 1)}})
	check("create", "cozinha:1", "dupla:1", "gar:1", "garrafa:1", "inox:1", "parede:1", "termica:1", "variante:1")
	e.create(ctx, &catalogv1.Product{Id: "prd_b", Title: "Garrafa de Vidro", Active: true, Variants: []*catalogv1.Variant{variant("VID-1", 100, 1)}})
	check("second product", "cozinha:1", "dupla:1", "gar:1", "garrafa:2", "inox:1", "parede:1", "termica:1", "variante:2", "vid:1", "vidro:1")
	finds("garafa", "prd_a", "prd_b")

	if _, err := e.update(ctx, &catalogv1.Product{Id: "prd_b", Title: "Pote de Vidro", Category: ptr("Casa"), Active: true,
		Variants: []*catalogv1.Variant{variant("VID-1", 100, 1), {Sku: "VID-2", Title: "Tampa Bambu", Price: 200, Stock: 1, Active: true}}}); err != nil {
		t.Fatal(err)
	}
	check("update", "bambu:1", "casa:1", "cozinha:1", "dupla:1", "gar:1", "garrafa:1", "inox:1", "parede:1", "pote:1", "tampa:1", "termica:1",
		"variante:2", "vid:1", "vidro:1")
	finds("bambo", "prd_b")

	if _, err := e.update(ctx, &catalogv1.Product{Id: "prd_a", Title: "Garrafa Térmica", Description: "Inox de parede dupla.", Category: ptr("Cozinha"), Active: false,
		Variants: []*catalogv1.Variant{variant("GAR-1", 100, 1)}}); err != nil {
		t.Fatal(err)
	}
	check("deactivate", "bambu:1", "casa:1", "pote:1", "tampa:1", "variante:1", "vid:1", "vidro:1")
	finds("garafa") // "garrafa" is no active product's word any more

	if r := e.importProducts(ctx, false,
		&catalogv1.Product{Id: "prd_a", Title: "Garrafa Térmica", Description: "Inox de parede dupla.", Category: ptr("Cozinha"), Active: true,
			Variants: []*catalogv1.Variant{variant("GAR-1", 100, 1)}},
		&catalogv1.Product{Id: "prd_c", Title: "Pote Hermético", Active: true, Variants: []*catalogv1.Variant{variant("HER-1", 100, 1)}},
	); r.GetCreated() != 1 || r.GetUpdated() != 1 {
		t.Fatalf("import: %v", r)
	}
	check("import", "bambu:1", "casa:1", "cozinha:1", "dupla:1", "gar:1", "garrafa:1", "her:1", "hermetico:1", "inox:1", "parede:1", "pote:2",
		"tampa:1", "termica:1", "variante:3", "vid:1", "vidro:1")
	finds("garafa", "prd_a")

	// Products are deactivated, not deleted, by the service; a deletion
	// (by hand, or a merchant's data removed) counts too.
	tid, _ := tenancy.From(ctx)
	if err := pgstore.InTenant(ctx, e.db.Pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM catalog.products WHERE tenant_id = $1 AND id IN ('prd_b', 'prd_c')`, tid)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check("delete", "cozinha:1", "dupla:1", "gar:1", "garrafa:1", "inox:1", "parede:1", "termica:1", "variante:1")
	if words, _ := e.searchWords(other); !slices.Equal(words, []string{"geladeira:1", "variante:1"}) {
		t.Errorf("the other merchant's words = %v", words)
	}
}

// The merchant's words are its own: another merchant's scope neither sees
// nor writes them (row security, as on every catalog table).
func TestSearchWordsAreTheMerchants(t *testing.T) {
	e := start(t)
	ctx, other := tenant(), tenant()
	e.create(ctx, &catalogv1.Product{Id: "prd_a", Title: "Garrafa", Active: true, Variants: []*catalogv1.Variant{variant("A-1", 100, 1)}})
	tid, _ := tenancy.From(ctx)
	err := pgstore.InTenant(other, e.db.Pool, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM catalog.search_words`).Scan(&n); err != nil || n != 0 {
			t.Errorf("another merchant sees %d words (%v), want 0", n, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO catalog.search_words (tenant_id, word, products) VALUES ($1, 'garrafa', 1)`, tid)
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("writing another merchant's word: %v, want a row security violation", err)
	}
}

// A word of many products is ranked by ts_rank alone: the products with it
// in the title before those with it in the description only, equal ranks
// by id. The variants (the price filter) are read after the ranking, and
// paging through still returns every product in the price range exactly
// once, in that order, and none outside it.
func TestSearchRanksBroadWordThenFiltersByPrice(t *testing.T) {
	e := start(t)
	ctx := tenant()
	var inTitle, inDescription []string
	for i := range 24 {
		id := fmt.Sprintf("prd_%02d", i)
		p := &catalogv1.Product{Id: id, Title: fmt.Sprintf("Caneca modelo %d", i), Description: "Ideal para presente.", Active: true,
			Variants: []*catalogv1.Variant{variant(fmt.Sprintf("SKU-%d", i), 1000+int64(i), 1)}}
		if i%4 == 0 {
			p.Title = fmt.Sprintf("Kit Presente %d", i)
			p.Description = ""
		}
		if i%3 == 0 {
			p.Variants[0].Price = 9000 // out of the range searched
		}
		e.create(ctx, p)
		switch {
		case i%3 == 0:
		case i%4 == 0:
			inTitle = append(inTitle, id)
		default:
			inDescription = append(inDescription, id)
		}
	}
	want := append(slices.Clone(inTitle), inDescription...)
	var got []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		r := e.search(ctx, &catalogv1.SearchCatalogRequest{Query: "presente", MaxPrice: ptr[int64](5000), Limit: 4, Cursor: cursor})
		got = append(got, productIDs(r.GetProducts())...)
		if cursor = r.GetNextCursor(); cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("presente ≤ R$ 50 by pages of 4 = %v, want %v", got, want)
	}
}
