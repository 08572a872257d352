package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/catalogcsv"
	"github.com/bcpdev/bcp/internal/money"
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", pr.GetId(), pr.GetTitle(), v.GetId(), v.GetSku(), money.FormatBRL(v.GetPrice()), v.GetStock(), active)
		}
	}
	return tw.Flush()
}

// parsePrice reads a CSV price into centavos (catalogcsv.ParsePrice),
// with an English message when it does not parse.
func parsePrice(s string) (int64, error) {
	n, code, v := catalogcsv.ParsePrice(s)
	if code != "" {
		return 0, errors.New(csvProblemText(catalogcsv.Problem{Code: code, Value: v}))
	}
	return n, nil
}

// catalogInput is an import file read into a request, with what is needed
// to point at the file's own lines and columns.
type catalogInput struct {
	products []*catalogv1.Product
	fatal    []string         // the file could not be read as a whole
	local    []fileProblem    // values that did not parse (CSV)
	csv      *catalogcsv.File // nil for JSON
	// For CSV: the line of each product's first row and of each variant's
	// row (csv.ProductLine, csv.VariantLine).
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

// locate maps an ImportError path back to the file: a JSON file keeps the
// path, a CSV file gets the line and column of the offending value.
func (f *catalogInput) locate(e *catalogv1.ImportError) fileProblem {
	if f.csv == nil {
		return fileProblem{column: e.GetPath(), msg: e.GetMessage()}
	}
	msg := f.csv.ReplacePaths(e.GetMessage(), func(l int) string { return fmt.Sprintf("line %d", l) })
	line, col := f.csv.Locate(e.GetPath())
	if line == 0 {
		return fileProblem{column: e.GetPath(), msg: msg}
	}
	return fileProblem{line: line, column: col, order: catalogcsv.ColumnOrder(col), msg: msg}
}

// jsonFile is the JSON import format. active defaults to true so that a
// file need not repeat it; prices are integer centavos.
type jsonFile struct {
	Products []struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		Description string `json:"description"`
		ImageURL    string `json:"image_url"`
		// Category absent keeps the product's stored category.
		Category *string `json:"category"`
		Active   *bool   `json:"active"`
		Variants []struct {
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
		pp := &catalogv1.Product{Id: p.ID, Title: p.Title, Description: p.Description, ImageUrl: p.ImageURL, Category: p.Category, Active: orTrue(p.Active)}
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

// parseCatalogCSV reads the CSV format (catalogcsv.Parse) and words its
// problems in English.
func parseCatalogCSV(b []byte) *catalogInput {
	cf := catalogcsv.Parse(b)
	f := &catalogInput{products: cf.Products, csv: cf, productLine: cf.ProductLine, variantLine: cf.VariantLine}
	header := false
	for _, p := range cf.Fatal {
		switch p.Code {
		case catalogcsv.NoHeader:
			f.fatal = append(f.fatal, "line 1: a header row is required: "+strings.Join(catalogcsv.Columns, ","))
		case catalogcsv.NoRows:
			f.fatal = append(f.fatal, "no product rows after the header")
		default:
			header = true
			f.fatal = append(f.fatal, fmt.Sprintf("line %d: %s", p.Line, csvProblemText(p)))
		}
	}
	if header {
		f.fatal = append(f.fatal, "the header must name the columns "+strings.Join(catalogcsv.Columns, ",")+" (and may name "+strings.Join(catalogcsv.OptionalColumns, ",")+")")
	}
	for _, p := range cf.Problems {
		f.local = append(f.local, fileProblem{line: p.Line, column: p.Column, order: max(catalogcsv.ColumnOrder(p.Column), 0), msg: csvProblemText(p)})
	}
	return f
}

// csvProblemText words a CSV problem, without its line and column.
func csvProblemText(p catalogcsv.Problem) string {
	switch p.Code {
	case catalogcsv.UnknownColumn:
		return fmt.Sprintf("unknown column %q", p.Value)
	case catalogcsv.DuplicateColumn:
		return fmt.Sprintf("column %q appears twice", p.Value)
	case catalogcsv.MissingColumn:
		return fmt.Sprintf("missing column %q", p.Value)
	case catalogcsv.MalformedCSV:
		return p.Err.Error()
	case catalogcsv.FieldCount:
		return fmt.Sprintf("expected %d fields, got %d", p.Want, p.Got)
	case catalogcsv.DiffersFirst:
		return fmt.Sprintf("differs from line %d, the first row of product %s", p.FirstLine, p.ProductID)
	case catalogcsv.MissingPrice:
		return "price is required"
	case catalogcsv.AmbiguousPrice:
		return fmt.Sprintf("%q is ambiguous: write reais with a decimal comma (59,90) or whole centavos (5990)", p.Value)
	case catalogcsv.BadCents:
		return fmt.Sprintf("%q: write one or two digits of centavos after the comma (59,90)", p.Value)
	case catalogcsv.BadPrice:
		return fmt.Sprintf("%q is not a price: use 59,90, 1.234,56 or whole centavos (5990)", p.Value)
	case catalogcsv.PriceTooLarge:
		return fmt.Sprintf("%q is too large", p.Value)
	case catalogcsv.MissingStock:
		return "stock is required (0 or more)"
	case catalogcsv.BadStock:
		return fmt.Sprintf("%q is not a whole number", p.Value)
	case catalogcsv.BadActive:
		return fmt.Sprintf("%q is not true or false (sim/não)", p.Value)
	}
	return string(p.Code)
}
