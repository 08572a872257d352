package catalogcsv

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  int64
		code  Code
		value string
	}{
		{in: "59,90", want: 5990},
		{in: "R$ 1.234,56", want: 123456},
		{in: "1234", want: 1234}, // a bare integer is centavos
		{in: "0", want: 0},
		{in: "R$\u00a059,90", want: 5990},
		{in: "  59,9 ", want: 5990},
		{in: "0,05", want: 5},
		{in: "1.234.567,89", want: 123456789},
		{in: "-5,00", want: -500},
		{in: "R$ -5,00", want: -500},
		{in: "-R$ 5,00", want: -500},
		{in: "92233720368547758,07", want: math.MaxInt64},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "-R$ 59.90", code: AmbiguousPrice, value: "59.90"},
		{in: "1.234", code: AmbiguousPrice, value: "1.234"},
		{in: "1,234", code: BadCents, value: "1,234"},
		{in: "59,", code: BadCents, value: "59,"},
		{in: ",90", code: BadPrice, value: ",90"},
		{in: "12.34,56", code: BadPrice, value: "12.34,56"},
		{in: "1 234,56", code: BadPrice, value: "1 234,56"},
		{in: "US$ 5,00", code: BadPrice, value: "US$ 5,00"},
		{in: "", code: MissingPrice},
		{in: " R$ ", code: MissingPrice},
		{in: "92233720368547758,08", code: PriceTooLarge, value: "92233720368547758,08"},
		{in: "9223372036854775808", code: PriceTooLarge, value: "9223372036854775808"},
	} {
		got, code, value := ParsePrice(tc.in)
		if got != tc.want || code != tc.code || value != tc.value {
			t.Errorf("ParsePrice(%q) = %d, %q, %q; want %d, %q, %q", tc.in, got, code, value, tc.want, tc.code, tc.value)
		}
	}
}

func TestParse(t *testing.T) {
	// ';' with a BOM, as spreadsheets export; the quoted description spans
	// two lines, so the rows after it are one line further down.
	f := Parse([]byte("\ufeffProduct_ID;product_title;description;image_url;sku;variant_title;price;stock;active\n" +
		"prd_cam;Camiseta;\"Algodão\nfio 30\";;CAM-P;P;59,90;10;sim\n" +
		"prd_cam;;;;CAM-M;;R$ 1.234,56;0;NÃO\n" +
		";Caneca;;https://x.example/c.png;CAN-1;;3990;5;\n" +
		";;;;;;;;\n" +
		";Caneca;;;CAN-2;;1;1;1\n"))
	if f.Fatal != nil || f.Problems != nil {
		t.Fatalf("fatal %+v problems %+v", f.Fatal, f.Problems)
	}
	want := []*catalogv1.Product{
		{Id: "prd_cam", Title: "Camiseta", Description: "Algodão\nfio 30", Active: true, Variants: []*catalogv1.Variant{
			{Sku: "CAM-P", Title: "P", Price: 5990, Currency: "BRL", Stock: 10, Active: true},
			{Sku: "CAM-M", Title: "Camiseta", Price: 123456, Currency: "BRL", Stock: 0, Active: false},
		}},
		{Title: "Caneca", ImageUrl: "https://x.example/c.png", Active: true, Variants: []*catalogv1.Variant{
			{Sku: "CAN-1", Title: "Caneca", Price: 3990, Currency: "BRL", Stock: 5, Active: true},
		}},
		// An empty product_id is a product of its own, even with the same title.
		{Title: "Caneca", Active: true, Variants: []*catalogv1.Variant{
			{Sku: "CAN-2", Title: "Caneca", Price: 1, Currency: "BRL", Stock: 1, Active: true},
		}},
	}
	if len(f.Products) != len(want) {
		t.Fatalf("%d products, want %d: %v", len(f.Products), len(want), f.Products)
	}
	for i := range want {
		if !proto.Equal(f.Products[i], want[i]) {
			t.Errorf("product %d = %v, want %v", i, f.Products[i], want[i])
		}
	}
	if !reflect.DeepEqual(f.ProductLine, []int{2, 5, 7}) || !reflect.DeepEqual(f.VariantLine, [][]int{{2, 4}, {5}, {7}}) {
		t.Fatalf("lines %v %v", f.ProductLine, f.VariantLine)
	}
}

func TestParseProblems(t *testing.T) {
	f := Parse([]byte("product_id,product_title,description,image_url,sku,variant_title,price,stock,active\n" +
		"p1,A,,,A-1,,59.90,1,true\n" +
		"p1,B,d,,A-2,,\"R$ 1,5\",x,Talvez\n" +
		"p2,C,,,C-1,,1\n" +
		"p3,D,,,D-1,,,,\n" +
		"p4,E,,,E-1,,\"1.2,00\",-3,n\n" +
		"p5,\"F,,,F-1,,1,1,\n"))
	var gotErr error
	for i := range f.Problems {
		if f.Problems[i].Code == MalformedCSV {
			gotErr, f.Problems[i].Err = f.Problems[i].Err, nil
		}
	}
	want := []Problem{
		{Line: 2, Column: "price", Code: AmbiguousPrice, Value: "59.90"},
		{Line: 3, Column: "product_title", Code: DiffersFirst, Value: "B", FirstLine: 2, ProductID: "p1"},
		{Line: 3, Column: "description", Code: DiffersFirst, Value: "d", FirstLine: 2, ProductID: "p1"},
		{Line: 3, Column: "stock", Code: BadStock, Value: "x"},
		{Line: 3, Column: "active", Code: BadActive, Value: "Talvez"},
		{Line: 4, Code: FieldCount, Want: 9, Got: 7},
		{Line: 5, Column: "price", Code: MissingPrice},
		{Line: 5, Column: "stock", Code: MissingStock},
		{Line: 6, Column: "price", Code: BadPrice, Value: "1.2,00"},
		{Line: 7, Code: MalformedCSV},
	}
	if !reflect.DeepEqual(f.Problems, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", dump(f.Problems), dump(want))
	}
	if !errors.Is(gotErr, csv.ErrQuote) {
		t.Fatalf("malformed CSV error %v, want %v", gotErr, csv.ErrQuote)
	}
	// Rows with problems are still sent, with harmless values, so the
	// catalog checks the rest: the skipped row (line 4) and the broken one
	// (line 7) are not.
	if len(f.Products) != 3 || !reflect.DeepEqual(f.ProductLine, []int{2, 5, 6}) {
		t.Fatalf("%d products, lines %v", len(f.Products), f.ProductLine)
	}
	if !reflect.DeepEqual(f.VariantLine, [][]int{{2, 3}, {5}, {6}}) {
		t.Fatalf("variant lines %v", f.VariantLine)
	}
	if v := f.Products[0].GetVariants()[1]; v.GetPrice() != 150 || v.GetStock() != 0 || !v.GetActive() {
		t.Fatalf("p1 second variant %v", v)
	}
	if v := f.Products[2].GetVariants()[0]; v.GetPrice() != 0 || v.GetStock() != -3 || v.GetActive() {
		t.Fatalf("p4 variant %v", v) // a negative stock is the catalog's to refuse
	}
}

// A broken quote opening the first row used to panic (csv.Reader.FieldPos
// has no field to report after that error). The line is where encoding/csv
// noticed the error.
func TestParseBrokenFirstRow(t *testing.T) {
	f := Parse([]byte("product_id,product_title,description,image_url,sku,variant_title,price,stock,active\n" +
		"\"broken\np1,A,,,A-1,,1,1,\n"))
	if len(f.Problems) != 1 || f.Problems[0].Line != 3 || f.Problems[0].Code != MalformedCSV || !errors.Is(f.Problems[0].Err, csv.ErrQuote) || f.Products != nil || f.Fatal != nil {
		t.Fatalf("problems %+v products %v fatal %+v", f.Problems, f.Products, f.Fatal)
	}
}

func TestParseFatal(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []Problem
	}{
		{"empty", "", []Problem{{Line: 1, Code: NoHeader}}},
		{"header only", "product_id,product_title,description,image_url,sku,variant_title,price,stock,active\r\n,,,,,,,,\r\n", []Problem{{Line: 2, Code: NoRows}}},
		{"bad header", "Title, sku ,sku,product_id,product_title,description,image_url,variant_title,price,stock\n", []Problem{
			{Line: 1, Column: "title", Code: UnknownColumn, Value: "title"},
			{Line: 1, Column: "sku", Code: DuplicateColumn, Value: "sku"},
			{Line: 1, Column: "active", Code: MissingColumn, Value: "active"},
		}},
	} {
		f := Parse([]byte(tc.src))
		if !reflect.DeepEqual(f.Fatal, tc.want) || f.Products != nil {
			t.Errorf("%s: fatal\n%s\nwant\n%s", tc.name, dump(f.Fatal), dump(tc.want))
		}
	}
}

func TestLocate(t *testing.T) {
	f := Parse([]byte("product_id,product_title,description,image_url,sku,variant_title,price,stock,active\n" +
		"p1,A,,,A-1,,1,1,\n" +
		",B,,,B-1,,1,1,\n" +
		"p1,,,,A-2,,1,1,\n"))
	if f.Fatal != nil || f.Problems != nil {
		t.Fatalf("fatal %+v problems %+v", f.Fatal, f.Problems)
	}
	for _, tc := range []struct {
		path string
		line int
		col  string
	}{
		{"products[0].title", 2, "product_title"},
		{"products[0].id", 2, "product_id"},
		{"products[0].variants", 2, "sku"},
		{"products[0]", 2, ""},
		{"products[0].active", 2, ""}, // no column of its own
		{"products[1].description", 3, "description"},
		{"products[0].variants[1].sku", 4, "sku"},
		{"products[0].variants[1].id", 4, "sku"},
		{"products[0].variants[1].currency", 4, "price"},
		{"products[0].variants[0].stock", 2, "stock"},
		{"products[1].variants[0].title", 3, "variant_title"},
		{"products[0].variants[2].sku", 2, ""}, // not in the file: the product's line
		{"products[2].title", 0, ""},
		{"products", 0, ""},
		{"x.products[0].title", 0, ""},
	} {
		line, col := f.Locate(tc.path)
		if line != tc.line || col != tc.col {
			t.Errorf("Locate(%q) = %d, %q; want %d, %q", tc.path, line, col, tc.line, tc.col)
		}
	}
	got := f.ReplacePaths("sku A-2 of products[0].variants[1] is also at products[1].variants[0].sku, not products[9]", func(l int) string { return fmt.Sprintf("line %d", l) })
	if want := "sku A-2 of line 4 is also at line 3, not products[9]"; got != want {
		t.Fatalf("ReplacePaths = %q, want %q", got, want)
	}
}

func TestColumnOrder(t *testing.T) {
	if ColumnOrder("product_id") != 0 || ColumnOrder("price") != 6 || ColumnOrder("active") != 8 || ColumnOrder("") != -1 {
		t.Fatal("column order")
	}
}

func dump(ps []Problem) string {
	s := ""
	for _, p := range ps {
		s += fmt.Sprintf("  %+v\n", p)
	}
	return s
}

// category is optional: without the column a product's category is unset
// (the catalog keeps the stored one); with it, each product takes its first
// row's value, "" included, and a later row may not contradict it.
func TestParseCategory(t *testing.T) {
	f := Parse([]byte("product_id,product_title,description,image_url,sku,variant_title,price,stock,active,category\n" +
		"prd_cam,Camiseta,,,CAM-P,P,5990,1,,Vestuário\n" +
		"prd_cam,,,,CAM-M,M,5990,1,,\n" +
		"prd_can,Caneca,,,CAN,,3990,1,,\n" +
		"prd_cam,,,,CAM-G,G,5990,1,,Cozinha\n"))
	if f.Fatal != nil {
		t.Fatalf("fatal %+v", f.Fatal)
	}
	if len(f.Products) != 2 || f.Products[0].Category == nil || f.Products[0].GetCategory() != "Vestuário" ||
		f.Products[1].Category == nil || f.Products[1].GetCategory() != "" {
		t.Fatalf("products %v", f.Products)
	}
	if len(f.Problems) != 1 || f.Problems[0].Line != 5 || f.Problems[0].Column != "category" || f.Problems[0].Code != DiffersFirst {
		t.Fatalf("problems:\n%s", dump(f.Problems))
	}
	if line, col := f.Locate("products[0].category"); line != 2 || col != "category" {
		t.Fatalf("locate category: %d %q", line, col)
	}
	without := Parse([]byte("product_id,product_title,description,image_url,sku,variant_title,price,stock,active\nprd_cam,Camiseta,,,CAM-P,P,5990,1,\n"))
	if without.Fatal != nil || len(without.Products) != 1 || without.Products[0].Category != nil {
		t.Fatalf("without the column: %+v %v", without.Fatal, without.Products)
	}
	if ColumnOrder("category") != len(Columns) {
		t.Fatal("category sorts after the required columns")
	}
}
