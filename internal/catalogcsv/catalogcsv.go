// Package catalogcsv reads the catalog import CSV (one row per variant),
// the format shared by `bcpctl catalog import` and the admin's upload, into
// the products of a catalog ImportProductsRequest. It reports problems as
// codes with the offending value, so each caller words them in its own
// language, and maps the paths of the catalog's ImportErrors back to the
// file's lines and columns.
package catalogcsv

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

// Columns are the CSV columns, all required (an import replaces each listed
// product, so a missing column would silently clear values).
var Columns = []string{"product_id", "product_title", "description", "image_url", "sku", "variant_title", "price", "stock", "active"}

// OptionalColumns may be left out: a file without one keeps what the
// catalog has (files written before category existed import as before);
// with it, an empty cell clears the value.
var OptionalColumns = []string{"category"}

// ColumnOrder is the position of a column in Columns then OptionalColumns
// (-1 for none), to sort problems of one line in column order.
func ColumnOrder(col string) int {
	if i := slices.Index(Columns, col); i >= 0 {
		return i
	}
	if i := slices.Index(OptionalColumns, col); i >= 0 {
		return len(Columns) + i
	}
	return -1
}

// Code says what is wrong; the caller words it.
type Code string

const (
	// The file as a whole (File.Fatal): nothing can be sent.
	NoHeader        Code = "no_header"        // line 1
	UnknownColumn   Code = "unknown_column"   // line 1; Column and Value: the header name
	DuplicateColumn Code = "duplicate_column" // line 1; Column and Value: the header name
	MissingColumn   Code = "missing_column"   // line 1; Column and Value: the missing column
	NoRows          Code = "no_rows"          // line 2: no product row after the header

	// One row or value (File.Problems).
	MalformedCSV   Code = "malformed_csv"          // Err: encoding/csv's error; reading stopped there
	FieldCount     Code = "field_count"            // Want fields as in the header, Got in the row; row skipped
	DiffersFirst   Code = "differs_from_first_row" // a product field differs from the product's first row (FirstLine, ProductID)
	MissingPrice   Code = "missing_price"
	AmbiguousPrice Code = "ambiguous_price" // "59.90", "1.234": no decimal comma but a dot
	BadCents       Code = "bad_cents"       // not one or two digits after the comma
	BadPrice       Code = "bad_price"
	PriceTooLarge  Code = "price_too_large"
	MissingStock   Code = "missing_stock"
	BadStock       Code = "bad_stock"
	BadActive      Code = "bad_active"
)

// Problem is one thing wrong with the file.
type Problem struct {
	Line   int    // 1-based file line
	Column string // CSV column; "" for the whole row
	Code   Code
	// Value is the offending value, trimmed; for prices without the sign
	// and "R$" (the amount the price rules judged).
	Value     string
	Err       error  // MalformedCSV
	Want, Got int    // FieldCount
	FirstLine int    // DiffersFirst
	ProductID string // DiffersFirst
}

// File is a CSV read into the products of an import request.
type File struct {
	Products []*catalogv1.Product
	// Fatal problems leave nothing to send (header, no rows).
	Fatal []Problem
	// Problems are values that did not parse. They are replaced by harmless
	// ones so the catalog can still check the rest of the file, as a dry run.
	Problems []Problem
	// The line of each product's first row and of each variant's row.
	ProductLine []int
	VariantLine [][]int
}

// Parse reads one row per variant. Rows sharing a product_id form one
// product whose fields come from its first row; a row with an empty
// product_id is a product of its own. An empty variant_title is the
// product_title, an empty active is true; prices are BRL.
func Parse(b []byte) *File {
	f := &File{}
	b = bytes.TrimPrefix(b, []byte("\ufeff")) // spreadsheet exports start with a BOM
	rd := csv.NewReader(bytes.NewReader(b))
	rd.FieldsPerRecord = -1
	// Spreadsheets in Brazil export with ';' because ',' is the decimal mark.
	if first, _, _ := bytes.Cut(b, []byte("\n")); bytes.Count(first, []byte(";")) > bytes.Count(first, []byte(",")) {
		rd.Comma = ';'
	}
	header, err := rd.Read()
	if err != nil {
		f.Fatal = []Problem{{Line: 1, Code: NoHeader}}
		return f
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case !slices.Contains(Columns, h) && !slices.Contains(OptionalColumns, h):
			f.Fatal = append(f.Fatal, Problem{Line: 1, Column: h, Code: UnknownColumn, Value: h})
		case col[h] != 0:
			f.Fatal = append(f.Fatal, Problem{Line: 1, Column: h, Code: DuplicateColumn, Value: h})
		default:
			col[h] = i + 1
		}
	}
	for _, c := range Columns {
		if col[c] == 0 {
			f.Fatal = append(f.Fatal, Problem{Line: 1, Column: c, Code: MissingColumn, Value: c})
		}
	}
	if f.Fatal != nil {
		return f
	}
	byID := map[string]int{} // product_id -> index in f.Products
	for {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// Not FieldPos: it panics when the error came before the
			// record's first field (a broken quote opening the row).
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line, err = pe.Line, pe.Err
			}
			// A broken quote can swallow the rest of the file: stop here.
			f.Problems = append(f.Problems, Problem{Line: line, Code: MalformedCSV, Err: err})
			break
		}
		line, _ := rd.FieldPos(0)
		if len(rec) != len(header) {
			f.Problems = append(f.Problems, Problem{Line: line, Code: FieldCount, Want: len(header), Got: len(rec)})
			continue
		}
		if strings.TrimSpace(strings.Join(rec, "")) == "" {
			continue // a row of empty cells, as spreadsheets write
		}
		get := func(c string) string { return strings.TrimSpace(rec[col[c]-1]) }
		bad := func(c string, code Code, value string) {
			f.Problems = append(f.Problems, Problem{Line: line, Column: c, Code: code, Value: value})
		}
		pid := get("product_id")
		i, seen := byID[pid]
		if !seen || pid == "" {
			i = len(f.Products)
			if pid != "" {
				byID[pid] = i
			}
			np := &catalogv1.Product{Id: pid, Title: get("product_title"), Description: get("description"), ImageUrl: get("image_url"), Active: true}
			if col["category"] != 0 {
				c := get("category")
				np.Category = &c
			}
			f.Products = append(f.Products, np)
			f.ProductLine = append(f.ProductLine, line)
			f.VariantLine = append(f.VariantLine, nil)
		} else {
			p := f.Products[i]
			for _, c := range []struct{ col, have string }{{"product_title", p.GetTitle()}, {"description", p.GetDescription()}, {"image_url", p.GetImageUrl()}, {"category", p.GetCategory()}} {
				if col[c.col] == 0 {
					continue
				}
				if got := get(c.col); got != "" && got != c.have {
					f.Problems = append(f.Problems, Problem{Line: line, Column: c.col, Code: DiffersFirst, Value: got, FirstLine: f.ProductLine[i], ProductID: pid})
				}
			}
		}
		p := f.Products[i]
		v := &catalogv1.Variant{Sku: get("sku"), Title: get("variant_title"), Currency: "BRL", Active: true}
		if v.Title == "" {
			v.Title = p.GetTitle()
		}
		var code Code
		var value string
		if v.Price, code, value = ParsePrice(get("price")); code != "" {
			bad("price", code, value)
		}
		if s := get("stock"); s == "" {
			bad("stock", MissingStock, "")
		} else if v.Stock, err = strconv.ParseInt(s, 10, 64); err != nil {
			v.Stock = 0
			bad("stock", BadStock, s)
		}
		switch a := get("active"); strings.ToLower(a) {
		case "", "true", "1", "yes", "sim", "s", "y":
		case "false", "0", "no", "não", "nao", "n":
			v.Active = false
		default:
			bad("active", BadActive, a)
		}
		p.Variants = append(p.Variants, v)
		f.VariantLine[i] = append(f.VariantLine[i], line)
	}
	if len(f.Products) == 0 && len(f.Problems) == 0 {
		f.Fatal = []Problem{{Line: 2, Code: NoRows}}
	}
	return f
}

// ParsePrice reads a CSV price into centavos with integer arithmetic only.
// A bare integer ("5990") is centavos. An amount with a decimal comma
// ("59,90", "R$ 1.234,56") is reais, dots being thousands separators only;
// "59.90" and "1.234" are refused as ambiguous instead of guessed. A
// negative amount is returned as such: the catalog refuses it at its path.
// On failure it returns a code and the amount without sign and "R$".
func ParsePrice(s string) (cents int64, code Code, value string) {
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
		return 0, MissingPrice, ""
	}
	whole, frac, hasComma := strings.Cut(s, ",")
	var c int64
	if !hasComma {
		if strings.Contains(s, ".") {
			return 0, AmbiguousPrice, s
		}
	} else {
		if len(frac) == 0 || len(frac) > 2 || !allDigits(frac) {
			return 0, BadCents, s
		}
		c, _ = strconv.ParseInt(frac, 10, 64)
		if len(frac) == 1 {
			c *= 10 // 59,9 is 59,90
		}
		groups := strings.Split(whole, ".")
		for i, g := range groups {
			if !allDigits(g) || (len(groups) > 1 && (i == 0 && len(g) > 3 || i > 0 && len(g) != 3)) {
				return 0, BadPrice, s
			}
		}
		whole = strings.Join(groups, "")
	}
	if !allDigits(whole) {
		return 0, BadPrice, s
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err == nil && hasComma {
		if n > (math.MaxInt64-c)/100 {
			err = strconv.ErrRange
		}
		n = n*100 + c
	}
	if err != nil {
		return 0, PriceTooLarge, s
	}
	if neg {
		n = -n
	}
	return n, "", ""
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

var (
	importPath = regexp.MustCompile(`^products\[(\d+)\](?:\.variants\[(\d+)\])?(?:\.([a-z_]+))?$`)
	pathInText = regexp.MustCompile(`products\[\d+\](?:\.variants\[\d+\])?(?:\.[a-z_]+)?`)
)

// The CSV column of each product and variant field (the CSV has no variant
// id or image and no currency: a variant is its SKU, prices are BRL).
var (
	productColumn = map[string]string{"id": "product_id", "title": "product_title", "description": "description", "image_url": "image_url", "variants": "sku", "category": "category"}
	variantColumn = map[string]string{"id": "sku", "sku": "sku", "title": "variant_title", "price": "price", "currency": "price", "stock": "stock", "active": "active", "image_url": "image_url"}
)

// Locate maps an ImportError path ("products[1].variants[0].sku") to the
// file's line and column. line is 0 when the path names no row of the file;
// column is "" when the field has no column of its own. A variant index the
// file does not have (the catalog only reports what was sent) gives the
// product's line.
func (f *File) Locate(path string) (line int, column string) {
	m := importPath.FindStringSubmatch(path)
	if m == nil {
		return 0, ""
	}
	i, _ := strconv.Atoi(m[1])
	if i >= len(f.ProductLine) {
		return 0, ""
	}
	if m[2] == "" {
		return f.ProductLine[i], productColumn[m[3]]
	}
	j, _ := strconv.Atoi(m[2])
	if j >= len(f.VariantLine[i]) {
		return f.ProductLine[i], ""
	}
	return f.VariantLine[i][j], variantColumn[m[3]]
}

// ReplacePaths rewrites each import path in a catalog message that names a
// row of the file with lineText(its line), e.g. "line 4".
func (f *File) ReplacePaths(msg string, lineText func(line int) string) string {
	return pathInText.ReplaceAllStringFunc(msg, func(p string) string {
		if l, _ := f.Locate(p); l > 0 {
			return lineText(l)
		}
		return p
	})
}
