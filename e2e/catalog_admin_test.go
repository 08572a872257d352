package e2e

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

// The merchant sets a product's category in the admin form and through the
// CSV import; an import without the category column keeps it, and agents'
// search filters by it.
func TestAdminProductCategory(t *testing.T) {
	s := newShopper(t, 0, "alfa.localhost")
	b := newBrowser(t, s.r, "alfa.localhost")
	m := s.merchant["alfa.localhost"]
	if p := b.signIn("dona@alfa.com.br", invite(t, s.r, m.tenantID.String(), "dona@alfa.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	token := csrfOf(t, b.do("GET", "/admin/produtos", nil))
	ctx := tenancy.With(context.Background(), m.tenantID)
	ops := s.r.ClientsWithToken(operatorToken)
	category := func() string {
		t.Helper()
		r, err := ops.Catalog.GetProduct(ctx, connect.NewRequest(&catalogv1.GetProductRequest{Id: "prd_cam"}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetProduct().GetCategory()
	}
	form := url.Values{"_csrf": {token}, "title": {"Camiseta"}, "category": {"Vestuário > Camisetas"}, "active": {"on"}, "variants": {"1"},
		"v0_id": {"var_cam"}, "v0_sku": {"CAM"}, "v0_title": {"Camiseta M"}, "v0_price": {"59,90"}, "v0_stock": {"10"}, "v0_active": {"on"}, "v0_keep": {"1"}}
	if p := b.do("POST", "/admin/produtos/prd_cam", form); p.status != 303 {
		t.Fatalf("save: %d\n%s", p.status, p.body)
	}
	if got := category(); got != "Vestuário > Camisetas" {
		t.Fatalf("category after the form = %q", got)
	}
	if p := b.do("GET", "/admin/produtos/prd_cam", nil); !strings.Contains(p.body, `name="category" value="Vestuário &gt; Camisetas"`) {
		t.Fatalf("the form does not show the category:\n%s", p.body)
	}

	const header = "product_id;product_title;description;image_url;sku;variant_title;price;stock;active"
	row := "prd_cam;Camiseta;;;CAM;Camiseta M;59,90;10;sim"
	if p := b.upload("/admin/produtos/importar", url.Values{"_csrf": {token}}, "sem-categoria.csv", []byte(header+"\n"+row+"\n")); p.status != 200 {
		t.Fatalf("import without category: %d\n%s", p.status, p.body)
	}
	if got := category(); got != "Vestuário > Camisetas" {
		t.Fatalf("an import without the column changed the category to %q", got)
	}
	if p := b.upload("/admin/produtos/importar", url.Values{"_csrf": {token}}, "com-categoria.csv", []byte(header+";category\n"+row+";Camisetas\n")); p.status != 200 ||
		!strings.Contains(p.body, `<strong data-count="updated">1</strong>`) {
		t.Fatalf("import with category: %d\n%s", p.status, p.body)
	}
	if got := category(); got != "Camisetas" {
		t.Fatalf("category after the import = %q", got)
	}
	r, err := ops.Catalog.SearchCatalog(ctx, connect.NewRequest(&catalogv1.SearchCatalogRequest{Categories: []string{"Camisetas"}}))
	if err != nil || len(r.Msg.GetProducts()) != 1 || r.Msg.GetProducts()[0].GetId() != "prd_cam" {
		t.Fatalf("search by the category: %v %v", r, err)
	}

	// What agents searched for shows on the products page: the top terms
	// and those that found nothing.
	if p := b.do("GET", "/admin/produtos", nil); !strings.Contains(p.body, "Nenhuma busca de agentes nos últimos 30 dias.") {
		t.Fatalf("before any search:\n%s", p.body)
	}
	for _, q := range []string{"Camiseta", "camiseta", "Geladeira"} {
		if _, err := ops.Catalog.SearchCatalog(ctx, connect.NewRequest(&catalogv1.SearchCatalogRequest{Query: q})); err != nil {
			t.Fatal(err)
		}
	}
	p := b.do("GET", "/admin/produtos", nil)
	for _, want := range []string{
		`<tr data-term="camiseta"><td data-label="Termo">camiseta</td><td data-label="Buscas" class="num">2</td><td data-label="Sem resultado" class="num">0</td></tr>`,
		`<tr data-term="geladeira"><td data-label="Termo">geladeira</td><td data-label="Buscas" class="num">1</td><td data-label="Sem resultado" class="num">1</td></tr>`,
		`<li><strong>geladeira</strong> — 1 busca</li>`,
	} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("products page lacks %s:\n%s", want, p.body)
		}
	}
}
