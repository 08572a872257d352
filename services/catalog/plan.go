package catalog

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/ids"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/services/catalog/catalogdb"
)

// Limits keep one request inside one reasonable transaction and response.
const (
	maxImportProducts = 10_000
	maxImportVariants = 50_000
	maxReportedErrors = 1_000
	maxLookupIDs      = 1_000
	maxIDLen          = 100
	maxTitleLen       = 300
	maxSKULen         = 100
	maxDescriptionLen = 10_000
	maxURLLen         = 2_048
	maxCategoryLen    = 200
)

// productIn and variantIn are a request's product after normalisation
// (trimmed, currency defaulted), so that validation, comparison with the
// stored rows and the writes all see the same values.
type productIn struct {
	id, title, description, imageURL string
	// category is kept from the stored product when keepCategory (the
	// request did not set it).
	category     string
	keepCategory bool
	active       bool
	variants     []variantIn
}

type variantIn struct {
	id, sku, title, currency, imageURL string
	price, stock                       int64
	active                             bool
}

// variantText is what search reads of the product's variants: the titles
// and SKUs of those active once the write is applied (the listed ones; the
// others are deactivated), sorted by title then SKU in byte order as
// migration 00025 wrote it, so the same variants give the same text.
func (p productIn) variantText() string {
	var vs []variantIn
	for _, v := range p.variants {
		if v.active {
			vs = append(vs, v)
		}
	}
	slices.SortFunc(vs, func(a, b variantIn) int {
		return cmp.Or(strings.Compare(a.title, b.title), strings.Compare(a.sku, b.sku))
	})
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.title + " " + v.sku
	}
	return strings.Join(parts, " ")
}

func normalize(p *catalogv1.Product) productIn {
	out := productIn{
		id: strings.TrimSpace(p.GetId()), title: strings.TrimSpace(p.GetTitle()), description: p.GetDescription(),
		imageURL: strings.TrimSpace(p.GetImageUrl()), active: p.GetActive(),
		category: strings.TrimSpace(p.GetCategory()), keepCategory: p.Category == nil,
	}
	for _, v := range p.GetVariants() {
		cur := strings.TrimSpace(v.GetCurrency())
		if cur == "" {
			cur = "BRL"
		}
		out.variants = append(out.variants, variantIn{
			id: strings.TrimSpace(v.GetId()), sku: strings.TrimSpace(v.GetSku()), title: strings.TrimSpace(v.GetTitle()),
			currency: cur, imageURL: strings.TrimSpace(v.GetImageUrl()), price: v.GetPrice(), stock: v.GetStock(), active: v.GetActive(),
		})
	}
	return out
}

// problem is one invalid value. p and v (-1 for the product itself) order
// the report the way the request is laid out.
type problem struct {
	p, v             int
	path, code, text string
}

type problems []problem

// paths names the values of a request: "products[3]..." for an import,
// "product..." for create and update.
type paths struct{ list bool }

func (pa paths) product(i int) string {
	if pa.list {
		return fmt.Sprintf("products[%d]", i)
	}
	return "product"
}

func (pa paths) variant(i, j int) string { return fmt.Sprintf("%s.variants[%d]", pa.product(i), j) }

func (ps *problems) add(p, v int, path, code, format string, args ...any) {
	*ps = append(*ps, problem{p: p, v: v, path: path, code: code, text: fmt.Sprintf(format, args...)})
}

// sorted orders problems by product and variant, keeping the order in which
// each value's problems were found.
func (ps problems) sorted() problems {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b problem) int {
		if c := cmp.Compare(a.p, b.p); c != 0 {
			return c
		}
		return cmp.Compare(a.v, b.v)
	})
	return out
}

func (ps problems) toProto() []*catalogv1.ImportError {
	var out []*catalogv1.ImportError
	for i, p := range ps.sorted() {
		if i == maxReportedErrors {
			out = append(out, &catalogv1.ImportError{Code: "too_many_errors", Message: fmt.Sprintf("%d more errors not shown", len(ps)-i)})
			break
		}
		out = append(out, &catalogv1.ImportError{Path: p.path, Code: p.code, Message: p.text})
	}
	return out
}

// checkFields reports every value of the products that is wrong on its own
// or within the request (duplicates), without looking at the catalog.
func checkFields(items []productIn, pa paths) problems {
	var ps problems
	firstSKU := map[string]string{}
	firstVariantID := map[string]string{}
	firstProductID := map[string]string{}
	for i, p := range items {
		base := pa.product(i)
		if p.id != "" {
			if !validID(p.id) {
				ps.add(i, -1, base+".id", "invalid_id", "id must be 1 to %d letters, digits or . _ : -", maxIDLen)
			} else if first, dup := firstProductID[p.id]; dup {
				ps.add(i, -1, base+".id", "duplicate_product", "product %q appears twice (first at %s)", p.id, first)
			} else {
				firstProductID[p.id] = base
			}
		}
		if !validText(p.title, maxTitleLen) {
			ps.add(i, -1, base+".title", "invalid_title", "title is required (1 to %d characters, no control characters)", maxTitleLen)
		}
		// PostgreSQL text cannot hold NUL; line breaks are fine here.
		if utf8.RuneCountInString(p.description) > maxDescriptionLen || strings.ContainsRune(p.description, 0) {
			ps.add(i, -1, base+".description", "invalid_description", "description must be at most %d characters, without NUL", maxDescriptionLen)
		}
		if !validText(p.category, maxCategoryLen) && p.category != "" {
			ps.add(i, -1, base+".category", "invalid_category", "category must be at most %d characters, no control characters", maxCategoryLen)
		}
		if !validImageURL(p.imageURL) {
			ps.add(i, -1, base+".image_url", "invalid_url", "image_url must be an absolute http(s) URL of at most %d characters", maxURLLen)
		}
		if len(p.variants) == 0 {
			ps.add(i, -1, base+".variants", "variant_required", "a product needs at least one variant")
		}
		for j, v := range p.variants {
			vb := pa.variant(i, j)
			if v.id != "" {
				if !validID(v.id) {
					ps.add(i, j, vb+".id", "invalid_id", "id must be 1 to %d letters, digits or . _ : -", maxIDLen)
				} else if first, dup := firstVariantID[v.id]; dup {
					ps.add(i, j, vb+".id", "duplicate_variant", "variant %q appears twice (first at %s)", v.id, first)
				} else {
					firstVariantID[v.id] = vb
				}
			}
			if !validText(v.sku, maxSKULen) {
				ps.add(i, j, vb+".sku", "invalid_sku", "sku is required (1 to %d characters, no control characters)", maxSKULen)
			} else if first, dup := firstSKU[v.sku]; dup {
				ps.add(i, j, vb+".sku", "duplicate_sku", "sku %q appears twice (first at %s)", v.sku, first)
			} else {
				firstSKU[v.sku] = vb
			}
			if !validText(v.title, maxTitleLen) {
				ps.add(i, j, vb+".title", "invalid_title", "title is required (1 to %d characters, no control characters)", maxTitleLen)
			}
			if v.price < 0 {
				ps.add(i, j, vb+".price", "invalid_price", "price must be zero or more centavos, got %d", v.price)
			}
			if v.currency != "BRL" {
				ps.add(i, j, vb+".currency", "unsupported_currency", "only BRL is supported, got %q", v.currency)
			}
			if v.stock < 0 {
				ps.add(i, j, vb+".stock", "invalid_stock", "stock must be zero or more, got %d", v.stock)
			}
			if !validImageURL(v.imageURL) {
				ps.add(i, j, vb+".image_url", "invalid_url", "image_url must be an absolute http(s) URL of at most %d characters", maxURLLen)
			}
		}
	}
	return ps
}

// validID accepts ids safe in URLs, logs and BCP item.id values.
func validID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)) {
			return false
		}
	}
	return true
}

// validText accepts 1 to max characters and no control characters (a
// title or SKU is one line; PostgreSQL text cannot hold NUL).
func validText(s string, max int) bool {
	if n := utf8.RuneCountInString(s); n == 0 || n > max {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

// validImageURL accepts empty (no image) or an absolute http(s) URL: agents
// and the hosted checkout page fetch it.
func validImageURL(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > maxURLLen || strings.ContainsFunc(s, unicode.IsSpace) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil
}

// productPlan is what applying one product of a request changes.
type productPlan struct {
	in      productIn // with the final product id
	create  bool
	changed bool // the product row itself differs
	// textChanged: only variant_text differs (the variants changed); it is
	// written without moving the product's updated_at.
	textChanged bool
	inserts     []catalogdb.InsertVariantsParams
	updates     []catalogdb.UpdateVariantParams
	renamed     []string // ids of updated variants whose SKU changes
	deactivate  []string // listed nowhere, active: deactivated, never deleted
}

type outcome int

const (
	outcomeUnchanged outcome = iota
	outcomeCreated
	outcomeUpdated
)

func (pp *productPlan) outcome() outcome {
	switch {
	case pp.create:
		return outcomeCreated
	case pp.changed || len(pp.inserts)+len(pp.updates)+len(pp.deactivate) > 0:
		return outcomeUpdated
	}
	return outcomeUnchanged
}

// catalogState is the part of the stored catalog a request touches.
type catalogState struct {
	products      map[string]catalogdb.CatalogProduct
	variantsByID  map[string]catalogdb.CatalogVariant
	variantsBySKU map[string]catalogdb.CatalogVariant
	ofProduct     map[string][]catalogdb.CatalogVariant
}

func loadState(ctx context.Context, q *catalogdb.Queries, tid uuid.UUID, items []productIn) (*catalogState, error) {
	st := &catalogState{
		products: map[string]catalogdb.CatalogProduct{}, variantsByID: map[string]catalogdb.CatalogVariant{},
		variantsBySKU: map[string]catalogdb.CatalogVariant{}, ofProduct: map[string][]catalogdb.CatalogVariant{},
	}
	var pids, vids, skus []string
	for _, p := range items {
		if p.id != "" {
			pids = append(pids, p.id)
		}
		for _, v := range p.variants {
			if v.id != "" {
				vids = append(vids, v.id)
			}
			if v.sku != "" {
				skus = append(skus, v.sku)
			}
		}
	}
	byID, err := q.GetVariantsByIDs(ctx, catalogdb.GetVariantsByIDsParams{TenantID: tid, Ids: vids})
	if err != nil {
		return nil, err
	}
	bySKU, err := q.GetVariantsBySKUs(ctx, catalogdb.GetVariantsBySKUsParams{TenantID: tid, Skus: skus})
	if err != nil {
		return nil, err
	}
	for _, v := range byID {
		st.variantsByID[v.ID] = v
	}
	for _, v := range bySKU {
		st.variantsBySKU[v.Sku] = v
		// A product listed without an id is found through its SKUs.
		pids = append(pids, v.ProductID)
	}
	prods, err := q.GetProductsByIDs(ctx, catalogdb.GetProductsByIDsParams{TenantID: tid, Ids: pids})
	if err != nil {
		return nil, err
	}
	found := make([]string, 0, len(prods))
	for _, p := range prods {
		st.products[p.ID] = p
		found = append(found, p.ID)
	}
	vs, err := q.ListVariantsOfProducts(ctx, catalogdb.ListVariantsOfProductsParams{TenantID: tid, ProductIds: found})
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		st.ofProduct[v.ProductID] = append(st.ofProduct[v.ProductID], v)
	}
	return st, nil
}

// matchMode is how a request's variants find stored ones.
type matchMode int

const (
	// matchBySKU (import): a variant is the tenant's variant with its SKU; an
	// id, when given, must agree.
	matchBySKU matchMode = iota
	// matchByID (update): a variant is the product's variant with its id,
	// or without an id the product's variant with its SKU.
	matchByID
)

// plan checks items against the stored catalog and computes the changes.
// Callers check fields first (checkFields); plan adds the problems only the
// catalog reveals. The plans are meaningful only when there are no problems.
func plan(st *catalogState, items []productIn, pa paths, mode matchMode) ([]productPlan, problems) {
	var ps problems
	// SKUs and ids that checkFields rejected (malformed, or repeated in the
	// request) take no part in matching: one mistake, one error.
	skus, vids := map[string]int{}, map[string]int{}
	for _, p := range items {
		for _, v := range p.variants {
			skus[v.sku]++
			vids[v.id]++
		}
	}
	clean := make([]productIn, len(items))
	for i, p := range items {
		clean[i] = p
		clean[i].variants = slices.Clone(p.variants)
		for j, v := range clean[i].variants {
			if !validText(v.sku, maxSKULen) || skus[v.sku] > 1 {
				clean[i].variants[j].sku = ""
			}
			if !validID(v.id) || vids[v.id] > 1 {
				clean[i].variants[j].id = ""
			}
		}
	}
	plans := make([]productPlan, len(items))
	// product id -> the first item that writes it; explicit duplicate ids
	// are already reported by checkFields.
	type claim struct {
		i        int
		explicit bool
	}
	claimed := map[string]claim{}
	for i, p := range items {
		base := pa.product(i)
		pp := &plans[i]
		pp.in = p
		if p.id == "" {
			// Without an id, the product is the one owning its SKUs, so a
			// file without ids imports the same way twice.
			for _, v := range clean[i].variants {
				if e, ok := st.variantsBySKU[v.sku]; ok && v.sku != "" {
					pp.in.id = e.ProductID
					break
				}
			}
		}
		stored, exists := st.products[pp.in.id]
		if pp.in.id == "" {
			pp.in.id = ids.New("prd")
		}
		if first, dup := claimed[pp.in.id]; !dup {
			claimed[pp.in.id] = claim{i, p.id != ""}
		} else if !first.explicit || p.id == "" {
			ps.add(i, -1, base+".id", "duplicate_product", "product %q is also imported by %s (products without an id are found by their SKUs)", pp.in.id, pa.product(first.i))
		}
		pp.create = !exists
		if exists && p.keepCategory {
			pp.in.category = stored.Category
		}
		if exists {
			pp.textChanged = stored.VariantText != p.variantText()
			pp.changed = stored.Category != pp.in.category || stored.Title != p.title || stored.Description != p.description || stored.ImageUrl != p.imageURL || stored.Active != p.active
		}
		planVariants(st, pp, clean[i].variants, i, pa, mode, exists, &ps)
	}
	return plans, ps
}

// planVariants matches the request's variants (clean: with rejected SKUs
// and ids blanked) to the stored ones of product pp.in.id.
func planVariants(st *catalogState, pp *productPlan, clean []variantIn, i int, pa paths, mode matchMode, exists bool, ps *problems) {
	pid := pp.in.id
	listed := map[string]int{} // stored variant id -> request index
	target := make([]*catalogdb.CatalogVariant, len(pp.in.variants))
	for j, v := range clean {
		if v.sku == "" {
			continue
		}
		vb := pa.variant(i, j)
		owner, skuUsed := st.variantsBySKU[v.sku]
		if skuUsed && owner.ProductID != pid {
			ps.add(i, j, vb+".sku", "sku_taken", "sku %q already belongs to product %q", v.sku, owner.ProductID)
		}
		var e *catalogdb.CatalogVariant
		switch mode {
		case matchBySKU:
			byID, idUsed := st.variantsByID[v.id]
			switch {
			case v.id != "" && skuUsed && owner.ID != v.id:
				ps.add(i, j, vb+".id", "variant_id_mismatch", "sku %q belongs to variant %q, not %q (variants are matched by SKU)", v.sku, owner.ID, v.id)
			case v.id != "" && !skuUsed && idUsed:
				ps.add(i, j, vb+".id", "variant_id_mismatch", "variant %q has sku %q, not %q (variants are matched by SKU)", v.id, byID.Sku, v.sku)
			case skuUsed && owner.ProductID == pid:
				e = &owner
			}
		case matchByID:
			if v.id != "" {
				if byID, ok := st.variantsByID[v.id]; ok {
					if byID.ProductID != pid {
						ps.add(i, j, vb+".id", "variant_of_other_product", "variant %q belongs to product %q", v.id, byID.ProductID)
					} else {
						e = &byID
					}
				}
			} else if skuUsed && owner.ProductID == pid {
				e = &owner
			}
		}
		if e == nil {
			continue
		}
		if first, dup := listed[e.ID]; dup {
			ps.add(i, j, vb+".id", "duplicate_variant", "variant %q is already listed at %s", e.ID, pa.variant(i, first))
			continue
		}
		listed[e.ID] = j
		target[j] = e
	}
	if !exists {
		pp.inserts = newVariants(pp, target)
		return
	}
	// A stored variant of this product left out of the request keeps its SKU
	// (it is only deactivated), so nobody else may take that SKU. (Matching
	// by SKU, the owner is always the match.)
	for j, v := range clean {
		owner, ok := st.variantsBySKU[v.sku]
		if v.sku == "" || mode != matchByID || !ok || owner.ProductID != pid || (target[j] != nil && target[j].ID == owner.ID) {
			continue
		}
		if _, moved := listed[owner.ID]; !moved {
			ps.add(i, j, pa.variant(i, j)+".sku", "sku_taken",
				"sku %q belongs to variant %q of this product, which is not listed (unlisted variants are deactivated and keep their SKU)", v.sku, owner.ID)
		}
	}
	for _, sv := range st.ofProduct[pid] {
		if _, ok := listed[sv.ID]; !ok && sv.Active {
			pp.deactivate = append(pp.deactivate, sv.ID)
		}
	}
	for j, v := range pp.in.variants {
		e := target[j]
		if e == nil {
			continue
		}
		if e.Sku == v.sku && e.Title == v.title && e.Price == v.price && e.Currency == v.currency &&
			e.Stock == v.stock && e.Active == v.active && e.ImageUrl == v.imageURL {
			continue
		}
		if e.Sku != v.sku {
			pp.renamed = append(pp.renamed, e.ID)
		}
		pp.updates = append(pp.updates, catalogdb.UpdateVariantParams{
			TenantID: e.TenantID, ID: e.ID, ProductID: pid, Sku: v.sku, Title: v.title, Price: v.price, Currency: v.currency,
			Stock: v.stock, Active: v.active, ImageUrl: v.imageURL,
		})
	}
	pp.inserts = newVariants(pp, target)
}

// newVariants lists the request's variants that match no stored one.
// TenantID is filled in by apply.
func newVariants(pp *productPlan, target []*catalogdb.CatalogVariant) []catalogdb.InsertVariantsParams {
	var out []catalogdb.InsertVariantsParams
	for j, v := range pp.in.variants {
		if target[j] != nil {
			continue
		}
		id := v.id
		if id == "" {
			id = ids.New("var")
		}
		out = append(out, catalogdb.InsertVariantsParams{
			ID: id, ProductID: pp.in.id, Sku: v.sku, Title: v.title, Price: v.price, Currency: v.currency,
			Stock: v.stock, Active: v.active, ImageUrl: v.imageURL,
		})
	}
	return out
}

// apply writes the plans in the caller's transaction. Rows that do not
// change are not written, so their updated_at stays. Inserts go in batches:
// one round trip each for products and variants.
func apply(ctx context.Context, q *catalogdb.Queries, tid uuid.UUID, plans []productPlan) error {
	var productRows []catalogdb.InsertProductsParams
	var variantRows []catalogdb.InsertVariantsParams
	for _, pp := range plans {
		if pp.create {
			p := pp.in
			productRows = append(productRows, catalogdb.InsertProductsParams{
				TenantID: tid, ID: p.id, Title: p.title, Description: p.description, ImageUrl: p.imageURL, Active: p.active,
				Category: p.category, VariantText: p.variantText(),
			})
		}
		for _, v := range pp.inserts {
			v.TenantID = tid
			variantRows = append(variantRows, v)
		}
	}
	// Park renamed variants on unique temporary SKUs first: two variants
	// may swap SKUs, and the unique constraint is checked per statement.
	for _, pp := range plans {
		for _, id := range pp.renamed {
			if err := one(q.SetVariantSKU(ctx, catalogdb.SetVariantSKUParams{TenantID: tid, ID: id, Sku: "~" + ids.New("sku")})); err != nil {
				return err
			}
		}
	}
	if len(productRows) > 0 {
		if err := batch(q.InsertProducts(ctx, productRows)); err != nil {
			return err
		}
	}
	for _, pp := range plans {
		p := pp.in
		if pp.changed {
			if err := one(q.UpdateProduct(ctx, catalogdb.UpdateProductParams{
				TenantID: tid, ID: p.id, Title: p.title, Description: p.description, ImageUrl: p.imageURL, Active: p.active,
				Category: p.category, VariantText: p.variantText(),
			})); err != nil {
				return err
			}
		} else if pp.textChanged {
			if err := one(q.SetVariantText(ctx, catalogdb.SetVariantTextParams{TenantID: tid, ID: p.id, VariantText: p.variantText()})); err != nil {
				return err
			}
		}
		if len(pp.deactivate) > 0 {
			if _, err := q.DeactivateVariants(ctx, catalogdb.DeactivateVariantsParams{TenantID: tid, Ids: pp.deactivate}); err != nil {
				return err
			}
		}
		for _, u := range pp.updates {
			u.TenantID = tid
			if err := one(q.UpdateVariant(ctx, u)); err != nil {
				return err
			}
		}
	}
	if len(variantRows) > 0 {
		return batch(q.InsertVariants(ctx, variantRows))
	}
	return nil
}

// batch runs a sqlc batch and returns its first error.
func batch(b interface{ Exec(func(int, error)) }) error {
	var first error
	b.Exec(func(_ int, err error) {
		if first == nil {
			first = err
		}
	})
	return first
}

// one checks that a write hit exactly one row: the writer lock makes
// anything else a bug, and a silent no-op would report a change that did
// not happen.
func one(n int64, err error) error {
	if err == nil && n != 1 {
		err = fmt.Errorf("catalog: write touched %d rows, want 1", n)
	}
	return err
}
