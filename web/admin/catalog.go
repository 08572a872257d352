package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

type productsData struct {
	Query    string
	Products []productRow
	Next     string
	// Searches is what agents searched for in the last 30 days (nil when
	// the catalog could not say: the list still shows).
	Searches *catalogv1.SearchTermsResponse
}

// products lists the catalog (ListProducts pages of 100), filtered by a
// case-insensitive search on product title and variant SKU/title.
func (a *Admin) products(rw http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	resp, err := a.opts.Catalog.ListProducts(r.Context(), connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 100, PageToken: r.URL.Query().Get("pagina")}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d := productsData{Query: q, Next: resp.Msg.GetNextPageToken()}
	needle := strings.ToLower(q)
	for _, p := range resp.Msg.GetProducts() {
		if needle == "" || matches(p, needle) {
			d.Products = append(d.Products, newProductRow(p))
		}
	}
	if st, err := a.opts.Catalog.SearchTerms(r.Context(), connect.NewRequest(&catalogv1.SearchTermsRequest{Days: 30, Limit: 10})); err == nil {
		d.Searches = st.Msg
	} else {
		a.log.WarnContext(r.Context(), "admin: search terms", "err", err)
	}
	a.render(rw, r, http.StatusOK, "products", a.newPage(r, "Produtos", "produtos", d))
}

// lowStock is the stock at or under which an active variant is "low".
const lowStock = 5

// productRow is a product as the list shows it: its thumbnail, its stock
// state and each variant's line.
type productRow struct {
	*catalogv1.Product
	Thumb      string // an https (or same-origin) image URL; "" for none
	Badge      string // Ativo | Estoque baixo | Esgotado | Inativo
	BadgeClass string
	Rows       []variantRow
}

type variantRow struct {
	*catalogv1.Variant
	State string // "" | "low" | "out"
}

// newProductRow reads the stock state: an active product whose active
// variants have no stock is "Esgotado" (agents cannot buy it), one with an
// active variant at or under lowStock "Estoque baixo".
func newProductRow(p *catalogv1.Product) productRow {
	row := productRow{Product: p, Thumb: thumbURL(p.GetImageUrl())}
	var inStock, low bool
	for _, v := range p.GetVariants() {
		vr := variantRow{Variant: v}
		if v.GetActive() {
			switch {
			case v.GetStock() <= 0:
				vr.State = "out"
			case v.GetStock() <= lowStock:
				vr.State, low, inStock = "low", true, true
			default:
				inStock = true
			}
		}
		if row.Thumb == "" {
			row.Thumb = thumbURL(v.GetImageUrl())
		}
		row.Rows = append(row.Rows, vr)
	}
	switch {
	case !p.GetActive():
		row.Badge, row.BadgeClass = "Inativo", "badge-neutral"
	case !inStock:
		row.Badge, row.BadgeClass = "Esgotado", "badge-danger"
	case low:
		row.Badge, row.BadgeClass = "Estoque baixo", "badge-warn"
	default:
		row.Badge, row.BadgeClass = "Ativo", "badge-ok"
	}
	return row
}

// thumbURL keeps the image URLs the admin's CSP lets the browser load
// (https, or a path on the merchant's host).
func thumbURL(u string) string {
	if strings.HasPrefix(u, "https://") || (strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//")) {
		return u
	}
	return ""
}

func matches(p *catalogv1.Product, needle string) bool {
	if strings.Contains(strings.ToLower(p.GetTitle()), needle) || strings.Contains(strings.ToLower(p.GetId()), needle) {
		return true
	}
	for _, v := range p.GetVariants() {
		if strings.Contains(strings.ToLower(v.GetSku()), needle) || strings.Contains(strings.ToLower(v.GetTitle()), needle) {
			return true
		}
	}
	return false
}

// productForm is the form as typed: strings, so nothing is lost on error.
type productForm struct {
	New         bool
	ID          string
	Title       string
	Description string
	Category    string
	ImageURL    string
	Active      bool
	Variants    []variantForm
	Errors      map[string]string // field name → message
	Error       string            // form-level message
}

type variantForm struct {
	ID     string
	SKU    string
	Title  string
	Price  string
	Stock  string
	Active bool
	Keep   bool // an existing variant (id fixed)
}

func (f *productForm) fail(field, msg string) {
	if f.Errors == nil {
		f.Errors = map[string]string{}
	}
	if _, ok := f.Errors[field]; !ok {
		f.Errors[field] = msg
	}
}

func formFromProduct(p *catalogv1.Product) productForm {
	f := productForm{ID: p.GetId(), Title: p.GetTitle(), Description: p.GetDescription(), Category: p.GetCategory(), ImageURL: p.GetImageUrl(), Active: p.GetActive()}
	for _, v := range p.GetVariants() {
		f.Variants = append(f.Variants, variantForm{ID: v.GetId(), SKU: v.GetSku(), Title: v.GetTitle(),
			Price: FormatReais(v.GetPrice()), Stock: strconv.FormatInt(v.GetStock(), 10), Active: v.GetActive(), Keep: true})
	}
	return f
}

// withBlankRow offers one empty variant row for adding a variant.
func (f productForm) withBlankRow() productForm {
	f.Variants = append(f.Variants, variantForm{Active: true})
	return f
}

const maxVariantRows = 50

// parseProductForm reads the posted form; rows with every field empty are
// the unused blank row and are dropped.
func parseProductForm(r *http.Request, isNew bool) productForm {
	f := productForm{New: isNew, Title: strings.TrimSpace(r.PostFormValue("title")), Description: strings.TrimSpace(r.PostFormValue("description")),
		Category: strings.TrimSpace(r.PostFormValue("category")),
		ImageURL: strings.TrimSpace(r.PostFormValue("image_url")), Active: r.PostFormValue("active") == "on"}
	n, _ := strconv.Atoi(r.PostFormValue("variants"))
	n = min(max(n, 0), maxVariantRows)
	for i := range n {
		g := func(k string) string { return strings.TrimSpace(r.PostFormValue(fmt.Sprintf("v%d_%s", i, k))) }
		v := variantForm{ID: g("id"), SKU: g("sku"), Title: g("title"), Price: g("price"), Stock: g("stock"), Active: g("active") == "on", Keep: g("keep") == "1"}
		if !v.Keep && v.ID == "" && v.SKU == "" && v.Title == "" && v.Price == "" && v.Stock == "" {
			continue
		}
		f.Variants = append(f.Variants, v)
	}
	return f
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// toProduct validates the form and builds the product; errors go next to
// their fields (v{i}_price, …).
func (f *productForm) toProduct() *catalogv1.Product {
	// The form always shows the category, so what it posts is the category
	// (empty clears it).
	p := &catalogv1.Product{Id: f.ID, Title: f.Title, Description: f.Description, Category: &f.Category, ImageUrl: f.ImageURL, Active: f.Active}
	if f.Title == "" {
		f.fail("title", "Informe o nome do produto.")
	}
	if len(f.Variants) == 0 {
		f.Error = "Um produto precisa de ao menos uma variante (SKU, nome e preço)."
	}
	skus := map[string]int{}
	for i, v := range f.Variants {
		name := func(k string) string { return fmt.Sprintf("v%d_%s", i, k) }
		if v.ID != "" && !idPattern.MatchString(v.ID) {
			f.fail(name("id"), "Use letras, números e . _ : - (até 64).")
		}
		if v.SKU == "" {
			f.fail(name("sku"), "Informe o SKU.")
		} else if j, dup := skus[v.SKU]; dup {
			f.fail(name("sku"), fmt.Sprintf("SKU repetido (também na variante %d).", j+1))
		} else {
			skus[v.SKU] = i
		}
		if v.Title == "" {
			f.fail(name("title"), "Informe o nome da variante.")
		}
		price, msg := ParseBRL(v.Price)
		if msg != "" {
			f.fail(name("price"), msg)
		}
		stock, err := strconv.ParseInt(v.Stock, 10, 64)
		if v.Stock == "" {
			stock, err = 0, nil
		}
		if err != nil || stock < 0 || stock > 1_000_000_000 {
			f.fail(name("stock"), "Estoque é um número inteiro, zero ou mais.")
		}
		id := v.ID
		if id == "" {
			id = ids.New("var")
		}
		p.Variants = append(p.Variants, &catalogv1.Variant{Id: id, Sku: v.SKU, Title: v.Title, Price: price, Currency: "BRL", Stock: stock, Active: v.Active})
	}
	return p
}

// variantField maps a catalog error path (product.variants[2].price) to
// the form field (v2_price).
var variantPath = regexp.MustCompile(`variants\[(\d+)\]\.([a-z_]+)$`)

func (f *productForm) serviceProblem(field, code, msg string) {
	if m := variantPath.FindStringSubmatch(field); m != nil {
		key := "v" + m[1] + "_" + m[2]
		switch code {
		case "duplicate_sku":
			f.fail(key, "Este SKU já existe no catálogo.")
		case "duplicate_variant":
			f.fail(key, "Este id de variante já existe no catálogo.")
		default:
			f.fail(key, msg)
		}
		return
	}
	switch {
	case code == "duplicate_product":
		f.Error = "Já existe um produto com este id."
	case code == "duplicate_sku":
		f.Error = "Um SKU deste produto já existe no catálogo."
	case strings.HasSuffix(field, ".title"):
		f.fail("title", msg)
	case strings.HasSuffix(field, ".description"):
		f.fail("description", msg)
	case strings.HasSuffix(field, ".category"):
		f.fail("category", "Use até 200 caracteres, sem caracteres de controle.")
	case strings.HasSuffix(field, ".image_url"):
		f.fail("image_url", "Use um endereço http(s) completo.")
	default:
		f.Error = msg
	}
}

func (a *Admin) newProduct(rw http.ResponseWriter, r *http.Request) {
	f := productForm{New: true, Active: true}.withBlankRow()
	a.render(rw, r, http.StatusOK, "product", a.newPage(r, "Novo produto", "produtos", f))
}

func (a *Admin) createProduct(rw http.ResponseWriter, r *http.Request) {
	f := parseProductForm(r, true)
	f.ID = ""
	p := f.toProduct()
	if len(f.Errors) == 0 && f.Error == "" {
		p.Id = ids.New("prod")
		resp, err := a.opts.Catalog.CreateProduct(r.Context(), connect.NewRequest(&catalogv1.CreateProductRequest{Product: p}))
		if err == nil {
			http.Redirect(rw, r, "/admin/produtos/"+url.PathEscape(resp.Msg.GetProduct().GetId())+"?ok=criado", http.StatusSeeOther)
			return
		}
		if !a.formProblem(rw, r, &f, err) {
			return
		}
	}
	a.render(rw, r, http.StatusUnprocessableEntity, "product", a.newPage(r, "Novo produto", "produtos", f.withBlankRow()))
}

// formProblem puts a business error on the form; false when the error is
// not about the input and a page was written instead.
func (a *Admin) formProblem(rw http.ResponseWriter, r *http.Request, f *productForm, err error) bool {
	e := appErr(err)
	switch e.Code {
	case "duplicate_sku", "duplicate_product", "duplicate_variant":
		// The catalog says only that an id or SKU is taken; the product id
		// is ours, so find which SKU belongs to another product.
		if !variantPath.MatchString(e.Field) && a.markTakenSKUs(r, f) {
			return true
		}
		f.serviceProblem(e.Field, e.Code, e.Message)
		return true
	}
	if e.Kind == apperr.KindInvalidArgument {
		f.serviceProblem(e.Field, e.Code, e.Message)
		return true
	}
	a.serviceError(rw, r, err)
	return false
}

func (a *Admin) editProduct(rw http.ResponseWriter, r *http.Request) {
	resp, err := a.opts.Catalog.GetProduct(r.Context(), connect.NewRequest(&catalogv1.GetProductRequest{Id: r.PathValue("id")}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	f := formFromProduct(resp.Msg.GetProduct()).withBlankRow()
	a.render(rw, r, http.StatusOK, "product", a.newPage(r, f.Title, "produtos", f))
}

func (a *Admin) updateProduct(rw http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	// The product must exist in this tenant before anything is written.
	if _, err := a.opts.Catalog.GetProduct(r.Context(), connect.NewRequest(&catalogv1.GetProductRequest{Id: id})); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	f := parseProductForm(r, false)
	f.ID = id
	p := f.toProduct()
	if len(f.Errors) == 0 && f.Error == "" {
		_, err := a.opts.Catalog.UpdateProduct(r.Context(), connect.NewRequest(&catalogv1.UpdateProductRequest{Product: p}))
		if err == nil {
			http.Redirect(rw, r, "/admin/produtos/"+url.PathEscape(id)+"?ok=salvo", http.StatusSeeOther)
			return
		}
		if !a.formProblem(rw, r, &f, err) {
			return
		}
	}
	for i := range f.Variants {
		f.Variants[i].Keep = f.Variants[i].Keep || f.Variants[i].ID != ""
	}
	a.render(rw, r, http.StatusUnprocessableEntity, "product", a.newPage(r, f.Title, "produtos", f.withBlankRow()))
}

// markTakenSKUs puts "SKU já existe" next to every SKU of the form that
// another product of the catalog uses; false when it finds none.
func (a *Admin) markTakenSKUs(r *http.Request, f *productForm) bool {
	owner := map[string]string{}
	token := ""
	for range 50 { // 5,000 products
		resp, err := a.opts.Catalog.ListProducts(r.Context(), connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 100, PageToken: token}))
		if err != nil {
			return false
		}
		for _, p := range resp.Msg.GetProducts() {
			for _, v := range p.GetVariants() {
				owner[v.GetSku()] = p.GetTitle()
			}
			if p.GetId() == f.ID {
				for _, v := range p.GetVariants() {
					delete(owner, v.GetSku())
				}
			}
		}
		if token = resp.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	found := false
	for i, v := range f.Variants {
		if title, ok := owner[v.SKU]; ok {
			f.fail(fmt.Sprintf("v%d_sku", i), "Este SKU já existe no catálogo ("+title+").")
			found = true
		}
	}
	return found
}
