package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// inputError lists what is wrong with an input file; it exits with status 2
// and nothing was changed.
type inputError struct {
	summary string
	lines   []string
}

func (e inputError) Error() string {
	return e.summary + "\n  " + strings.Join(e.lines, "\n  ")
}

// tenantContext resolves a tenant ref (id, slug or domain) through the
// registry and scopes ctx to it, so the client interceptor sends the
// tenant header the catalog's tenant-scoped procedures require.
func (c *cli) tenantContext(ctx context.Context, ref string) (context.Context, error) {
	r, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: ref}))
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(r.Msg.GetTenant().GetId())
	if err != nil {
		return nil, fmt.Errorf("tenant %q has a malformed id %q", ref, r.Msg.GetTenant().GetId())
	}
	return tenancy.With(ctx, id), nil
}

func (c *cli) catalogImport(ctx context.Context, args []string) error {
	fs := newFS("catalog import")
	dryRun := fs.Bool("dry-run", false, "")
	p, err := parse(fs, args, 2, "<tenant> <file>")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p[1])
	if err != nil {
		return inputError{summary: "cannot read the catalog file", lines: []string{err.Error()}}
	}
	var f *catalogInput
	if strings.EqualFold(filepath.Ext(p[1]), ".csv") {
		f = parseCatalogCSV(b)
	} else {
		f = parseCatalogJSON(b)
	}
	if f.fatal != nil {
		return inputError{summary: p[1] + ": nothing imported", lines: f.fatal}
	}
	tctx, err := c.tenantContext(ctx, p[0])
	if err != nil {
		return err
	}
	// With local errors (a CSV value that does not parse) the file is still
	// checked by the server, as a dry run, so every problem shows at once.
	r, err := c.catalog.ImportProducts(tctx, connect.NewRequest(&catalogv1.ImportProductsRequest{
		Products: f.products, DryRun: *dryRun || len(f.local) > 0,
	}))
	if err != nil && len(f.local) == 0 {
		return err
	}
	problems := f.local
	if err == nil {
		for _, e := range r.Msg.GetErrors() {
			problems = append(problems, f.locate(e))
		}
	}
	if len(problems) > 0 {
		slices.SortStableFunc(problems, func(a, b fileProblem) int {
			return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.order, b.order))
		})
		lines := make([]string, 0, len(problems))
		for _, pr := range problems {
			if s := pr.String(); len(lines) == 0 || lines[len(lines)-1] != s {
				lines = append(lines, s)
			}
		}
		return inputError{summary: fmt.Sprintf("%s: %d error(s), nothing imported:", p[1], len(lines)), lines: lines}
	}
	if c.json {
		return c.printJSON(r.Msg)
	}
	fmt.Fprintf(c.out, "created %d, updated %d, unchanged %d", r.Msg.GetCreated(), r.Msg.GetUpdated(), r.Msg.GetUnchanged())
	if *dryRun {
		fmt.Fprint(c.out, " (dry run: nothing changed)")
	}
	fmt.Fprintln(c.out)
	return nil
}

func (c *cli) catalogList(ctx context.Context, args []string) error {
	p, err := parse(newFS("catalog list"), args, 1, "<tenant>")
	if err != nil {
		return err
	}
	tctx, err := c.tenantContext(ctx, p[0])
	if err != nil {
		return err
	}
	var all []*catalogv1.Product
	token := ""
	for {
		r, err := c.catalog.ListProducts(tctx, connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 500, PageToken: token}))
		if err != nil {
			return err
		}
		all = append(all, r.Msg.GetProducts()...)
		if token = r.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	if c.json {
		return c.printJSON(all)
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRODUCT\tTITLE\tVARIANT\tSKU\tPRICE\tSTOCK\tACTIVE")
	for _, pr := range all {
		for _, v := range pr.GetVariants() {
			active := "yes"
			switch {
			case !v.GetActive():
				active = "no"
			case !pr.GetActive():
				active = "no (product)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", pr.GetId(), pr.GetTitle(), v.GetId(), v.GetSku(), formatBRL(v.GetPrice()), v.GetStock(), active)
		}
	}
	return tw.Flush()
}

// formatBRL renders centavos the Brazilian way: R$ 1.234,56.
func formatBRL(c int64) string {
	sign := ""
	u := uint64(c)
	if c < 0 {
		sign, u = "-", uint64(-(c+1))+1 // no overflow at math.MinInt64
	}
	reais := strconv.FormatUint(u/100, 10)
	var b strings.Builder
	for i, d := range reais {
		if i > 0 && (len(reais)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteRune(d)
	}
	return fmt.Sprintf("%sR$ %s,%02d", sign, b.String(), u%100)
}

// parsePrice reads a CSV price into centavos with integer arithmetic only.
// A bare integer ("5990") is centavos. An amount with a decimal comma
// ("59,90", "R$ 1.234,56") is reais, dots being thousands separators only;
// "59.90" and "1.234" are rejected as ambiguous instead of guessed.
func parsePrice(s string) (int64, error) {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\u00a0", " ")) // spreadsheets put a no-break space after R$
	neg := false
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		neg, s = true, strings.TrimSpace(rest)
	}
	if rest, ok := strings.CutPrefix(s, "R$"); ok {
		s = strings.TrimSpace(rest)
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok && !neg {
		neg, s = true, strings.TrimSpace(rest)
	}
	if s == "" {
		return 0, errors.New("price is required")
	}
	whole, frac, hasComma := strings.Cut(s, ",")
	var cents int64
	if !hasComma {
		if strings.Contains(s, ".") {
			return 0, fmt.Errorf("%q is ambiguous: write reais with a decimal comma (59,90) or whole centavos (5990)", s)
		}
	} else {
		if len(frac) == 0 || len(frac) > 2 || !allDigits(frac) {
			return 0, fmt.Errorf("%q: write one or two digits of centavos after the comma (59,90)", s)
		}
		cents, _ = strconv.ParseInt(frac, 10, 64)
		if len(frac) == 1 {
			cents *= 10 // 59,9 is 59,90
		}
		groups := strings.Split(whole, ".")
		for i, g := range groups {
			if !allDigits(g) || (len(groups) > 1 && (i == 0 && len(g) > 3 || i > 0 && len(g) != 3)) {
				return 0, fmt.Errorf("%q is not a price: use 59,90, 1.234,56 or whole centavos (5990)", s)
			}
		}
		whole = strings.Join(groups, "")
	}
	if !allDigits(whole) {
		return 0, fmt.Errorf("%q is not a price: use 59,90, 1.234,56 or whole centavos (5990)", s)
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err == nil && hasComma {
		if n > (math.MaxInt64-cents)/100 {
			err = strconv.ErrRange
		}
		n = n*100 + cents
	}
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if neg {
		n = -n
	}
	return n, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// catalogInput is an import file read into a request, with what is needed
// to point at the file's own lines and columns.
type catalogInput struct {
	products []*catalogv1.Product
	fatal    []string      // the file could not be read as a whole
	local    []fileProblem // values that did not parse (CSV)
	csv      bool
	// For CSV: the line of each product's first row and of each variant's row.
	productLine []int
	variantLine [][]int
}

// fileProblem is one error, located in the file when possible.
type fileProblem struct {
	line   int    // 0: not a file line
	column string // CSV column, or the JSON path when line is 0
	order  int    // column order within a line
	msg    string
}

func (p fileProblem) String() string {
	switch {
	case p.line == 0 && p.column == "":
		return p.msg
	case p.line == 0:
		return p.column + ": " + p.msg
	case p.column == "":
		return fmt.Sprintf("line %d: %s", p.line, p.msg)
	}
	return fmt.Sprintf("line %d: %s: %s", p.line, p.column, p.msg)
}

var (
	importPath = regexp.MustCompile(`^products\[(\d+)\](?:\.variants\[(\d+)\])?(?:\.([a-z_]+))?$`)
	pathInText = regexp.MustCompile(`products\[\d+\](?:\.variants\[\d+\])?(?:\.[a-z_]+)?`)
)

// The CSV column of each product and variant field (the CSV has no variant
// id or image and no currency: a variant is its SKU, prices are BRL).
var (
	productColumn = map[string]string{"id": "product_id", "title": "product_title", "description": "description", "image_url": "image_url", "variants": "sku"}
	variantColumn = map[string]string{"id": "sku", "sku": "sku", "title": "variant_title", "price": "price", "currency": "price", "stock": "stock", "active": "active", "image_url": "image_url"}
)

// locate maps an ImportError path back to the file: a JSON file keeps the
// path, a CSV file gets the line and column of the offending value.
func (f *catalogInput) locate(e *catalogv1.ImportError) fileProblem {
	if !f.csv {
		return fileProblem{column: e.GetPath(), msg: e.GetMessage()}
	}
	msg := pathInText.ReplaceAllStringFunc(e.GetMessage(), func(p string) string {
		if l, _ := f.csvLine(p); l > 0 {
			return fmt.Sprintf("line %d", l)
		}
		return p
	})
	line, col := f.csvLine(e.GetPath())
	if line == 0 {
		return fileProblem{column: e.GetPath(), msg: msg}
	}
	return fileProblem{line: line, column: col, order: slices.Index(csvColumns, col), msg: msg}
}

func (f *catalogInput) csvLine(path string) (int, string) {
	m := importPath.FindStringSubmatch(path)
	if m == nil {
		return 0, ""
	}
	i, _ := strconv.Atoi(m[1])
	if i >= len(f.productLine) {
		return 0, ""
	}
	if m[2] == "" {
		return f.productLine[i], productColumn[m[3]]
	}
	j, _ := strconv.Atoi(m[2])
	if j >= len(f.variantLine[i]) {
		return 0, ""
	}
	return f.variantLine[i][j], variantColumn[m[3]]
}

// jsonFile is the JSON import format. active defaults to true so that a
// file need not repeat it; prices are integer centavos.
type jsonFile struct {
	Products []struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		Description string `json:"description"`
		ImageURL    string `json:"image_url"`
		Active      *bool  `json:"active"`
		Variants    []struct {
			ID       string `json:"id"`
			SKU      string `json:"sku"`
			Title    string `json:"title"`
			Price    int64  `json:"price"`
			Currency string `json:"currency"`
			Stock    int64  `json:"stock"`
			Active   *bool  `json:"active"`
			ImageURL string `json:"image_url"`
		} `json:"variants"`
	} `json:"products"`
}

func parseCatalogJSON(b []byte) *catalogInput {
	f := &catalogInput{}
	var doc jsonFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt field would silently import as empty
	err := dec.Decode(&doc)
	if err == nil && dec.More() {
		err = errors.New("unexpected data after the catalog object")
	}
	if err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		msg := err.Error()
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case strings.HasPrefix(msg, "json: unknown field "):
			// The decoder reports no position: point at the key's first use.
			if i := bytes.Index(b, []byte(strings.TrimPrefix(msg, "json: unknown field "))); i >= 0 {
				off = int64(i)
			}
		case errors.As(err, &te):
			off = te.Offset
			msg = fmt.Sprintf("%s: expected %s, got %s", te.Field, te.Type, te.Value)
			if strings.HasSuffix(te.Field, "price") {
				msg += " (prices are integer centavos: 5990 for R$ 59,90)"
			}
		}
		f.fatal = []string{fmt.Sprintf("line %d: %s", 1+bytes.Count(b[:min(int(off), len(b))], []byte("\n")), msg)}
		return f
	}
	if len(doc.Products) == 0 {
		f.fatal = []string{`no products: the file must look like {"products": [...]}`}
		return f
	}
	orTrue := func(b *bool) bool { return b == nil || *b }
	for _, p := range doc.Products {
		pp := &catalogv1.Product{Id: p.ID, Title: p.Title, Description: p.Description, ImageUrl: p.ImageURL, Active: orTrue(p.Active)}
		for _, v := range p.Variants {
			pp.Variants = append(pp.Variants, &catalogv1.Variant{
				Id: v.ID, Sku: v.SKU, Title: v.Title, Price: v.Price, Currency: v.Currency, Stock: v.Stock,
				Active: orTrue(v.Active), ImageUrl: v.ImageURL,
			})
		}
		f.products = append(f.products, pp)
	}
	return f
}

// csvColumns are the CSV import columns, all required (an import replaces
// each listed product, so a missing column would silently clear values).
var csvColumns = []string{"product_id", "product_title", "description", "image_url", "sku", "variant_title", "price", "stock", "active"}

// parseCatalogCSV reads one row per variant. Rows sharing a product_id
// form one product whose fields come from its first row; a row with an
// empty product_id is a product of its own. An empty variant_title is the
// product_title, an empty active is true. Values that do not parse are
// reported and replaced by harmless ones so the server can still check the
// rest of the file.
func parseCatalogCSV(b []byte) *catalogInput {
	f := &catalogInput{csv: true}
	b = bytes.TrimPrefix(b, []byte("\ufeff")) // spreadsheet exports start with a BOM
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	// Spreadsheets in Brazil export with ';' because ',' is the decimal mark.
	if first, _, _ := bytes.Cut(b, []byte("\n")); bytes.Count(first, []byte(";")) > bytes.Count(first, []byte(",")) {
		r.Comma = ';'
	}
	header, err := r.Read()
	if err != nil {
		f.fatal = []string{"line 1: a header row is required: " + strings.Join(csvColumns, ",")}
		return f
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case !slices.Contains(csvColumns, h):
			f.fatal = append(f.fatal, fmt.Sprintf("line 1: unknown column %q", h))
		case col[h] != 0:
			f.fatal = append(f.fatal, fmt.Sprintf("line 1: column %q appears twice", h))
		default:
			col[h] = i + 1
		}
	}
	for _, c := range csvColumns {
		if col[c] == 0 {
			f.fatal = append(f.fatal, fmt.Sprintf("line 1: missing column %q", c))
		}
	}
	if f.fatal != nil {
		f.fatal = append(f.fatal, "the header must name the columns "+strings.Join(csvColumns, ","))
		return f
	}
	byID := map[string]int{} // product_id -> index in f.products
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
				err = pe.Err
			}
			// A broken quote can swallow the rest of the file: stop here.
			f.local = append(f.local, fileProblem{line: line, msg: err.Error()})
			break
		}
		if len(rec) != len(header) {
			f.local = append(f.local, fileProblem{line: line, msg: fmt.Sprintf("expected %d fields, got %d", len(header), len(rec))})
			continue
		}
		if strings.TrimSpace(strings.Join(rec, "")) == "" {
			continue // a row of empty cells, as spreadsheets write
		}
		get := func(c string) string { return strings.TrimSpace(rec[col[c]-1]) }
		bad := func(c string, err error) {
			f.local = append(f.local, fileProblem{line: line, column: c, order: slices.Index(csvColumns, c), msg: err.Error()})
		}
		pid := get("product_id")
		i, seen := byID[pid]
		if !seen || pid == "" {
			i = len(f.products)
			if pid != "" {
				byID[pid] = i
			}
			f.products = append(f.products, &catalogv1.Product{
				Id: pid, Title: get("product_title"), Description: get("description"), ImageUrl: get("image_url"), Active: true,
			})
			f.productLine = append(f.productLine, line)
			f.variantLine = append(f.variantLine, nil)
		} else {
			p := f.products[i]
			for c, v := range map[string]string{"product_title": p.GetTitle(), "description": p.GetDescription(), "image_url": p.GetImageUrl()} {
				if got := get(c); got != "" && got != v {
					bad(c, fmt.Errorf("differs from line %d, the first row of product %s", f.productLine[i], pid))
				}
			}
		}
		p := f.products[i]
		v := &catalogv1.Variant{Sku: get("sku"), Title: get("variant_title"), Active: true}
		if v.Title == "" {
			v.Title = p.GetTitle()
		}
		if v.Price, err = parsePrice(get("price")); err != nil {
			bad("price", err)
		}
		if s := get("stock"); s == "" {
			bad("stock", errors.New("stock is required (0 or more)"))
		} else if v.Stock, err = strconv.ParseInt(s, 10, 64); err != nil {
			v.Stock = 0
			bad("stock", fmt.Errorf("%q is not a whole number", s))
		}
		switch strings.ToLower(get("active")) {
		case "", "true", "1", "yes", "sim", "s", "y":
		case "false", "0", "no", "não", "nao", "n":
			v.Active = false
		default:
			bad("active", fmt.Errorf("%q is not true or false (sim/não)", get("active")))
		}
		p.Variants = append(p.Variants, v)
		f.variantLine[i] = append(f.variantLine[i], line)
	}
	if len(f.products) == 0 && len(f.local) == 0 {
		f.fatal = []string{"no product rows after the header"}
	}
	return f
}
