package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/services/edge"
)

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "59,90", want: 5990},
		{in: "R$ 1.234,56", want: 123456},
		{in: "1234", want: 1234}, // a bare integer is centavos
		{in: "0", want: 0},
		{in: "R$59,90", want: 5990},
		{in: "R$\u00a059,90", want: 5990},
		{in: "  59,9 ", want: 5990},
		{in: "0,05", want: 5},
		{in: "1.234.567,89", want: 123456789},
		{in: "1234,56", want: 123456},
		{in: "-5,00", want: -500}, // the server rejects it, at its path
		{in: "R$ -5,00", want: -500},
		{in: "92233720368547758,07", want: math.MaxInt64},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "59.90", err: "ambiguous"},
		{in: "1.234", err: "ambiguous"},
		{in: "1,234", err: "one or two digits"},
		{in: "59,", err: "one or two digits"},
		{in: ",90", err: "not a price"},
		{in: "12.34,56", err: "not a price"},
		{in: "1234.567,00", err: "not a price"},
		{in: "1 234,56", err: "not a price"},
		{in: "abc", err: "not a price"},
		{in: "US$ 5,00", err: "not a price"},
		{in: "", err: "required"},
		{in: "R$", err: "required"},
		{in: "92233720368547758,08", err: "too large"},
		{in: "9223372036854775808", err: "too large"},
	} {
		got, err := parsePrice(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parsePrice(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parsePrice(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCatalogCSV(t *testing.T) {
	// ';' separated with a BOM, as spreadsheets export; a quoted
	// description spanning two lines shifts the line numbers after it.
	src := "\ufeffproduct_id;product_title;description;image_url;sku;variant_title;price;stock;active\n" +
		"prd_cam;Camiseta;\"Algodão\nfio 30\";;CAM-P;P;59,90;10;sim\n" +
		"prd_cam;;;;CAM-M;;R$ 1.234,56;0;não\n" +
		";Caneca;;;CAN-1;;3990;5;\n" +
		";;;;;;;;\n"
	f := parseCatalogCSV([]byte(src))
	if f.fatal != nil || f.local != nil {
		t.Fatalf("fatal %v local %v", f.fatal, f.local)
	}
	if len(f.products) != 2 || len(f.products[0].GetVariants()) != 2 {
		t.Fatalf("products: %v", f.products)
	}
	cam, m := f.products[0], f.products[0].GetVariants()[1]
	if cam.GetDescription() != "Algodão\nfio 30" || m.GetPrice() != 123456 || m.GetActive() || m.GetTitle() != "Camiseta" {
		t.Fatalf("camiseta: %v", cam)
	}
	if f.productLine[1] != 5 || f.variantLine[0][1] != 4 {
		t.Fatalf("lines: %v %v", f.productLine, f.variantLine)
	}
	if v := f.products[1].GetVariants()[0]; v.GetPrice() != 3990 || !v.GetActive() || v.GetTitle() != "Caneca" {
		t.Fatalf("caneca: %v", v)
	}

	f = parseCatalogCSV([]byte("product_id,product_title,description,image_url,sku,variant_title,price,stock,active\n" +
		"p1,A,,,A-1,,59.90,1,true\n" +
		"p1,B,,,A-2,,1,x,talvez\n" +
		"p2,C,,,C-1,,1\n" +
		"p3,D,,,D-1,,1,,\n"))
	var got []string
	for _, p := range f.local {
		got = append(got, p.String())
	}
	want := []string{
		`line 2: price: "59.90" is ambiguous: write reais with a decimal comma (59,90) or whole centavos (5990)`,
		"line 3: product_title: differs from line 2, the first row of product p1",
		`line 3: stock: "x" is not a whole number`,
		`line 3: active: "talvez" is not true or false (sim/não)`,
		"line 4: expected 9 fields, got 7",
		"line 5: stock: stock is required (0 or more)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("local errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	f = parseCatalogCSV([]byte("product_id,title,sku,price\n"))
	if len(f.fatal) == 0 || !strings.Contains(strings.Join(f.fatal, "\n"), `line 1: unknown column "title"`) ||
		!strings.Contains(strings.Join(f.fatal, "\n"), `line 1: missing column "stock"`) {
		t.Fatalf("header errors: %v", f.fatal)
	}
}

func TestParseCatalogJSON(t *testing.T) {
	f := parseCatalogJSON([]byte(`{"products":[{"id":"p","title":"T","variants":[{"sku":"S","title":"V","price":5990,"stock":1}]}]}`))
	if f.fatal != nil || !f.products[0].GetActive() || !f.products[0].GetVariants()[0].GetActive() || f.products[0].GetVariants()[0].GetPrice() != 5990 {
		t.Fatalf("defaults: %v %v", f.fatal, f.products)
	}
	for src, want := range map[string]string{
		"{\"products\":[\n{\"title\":\"T\",\n\"variants\":[{\"price\":59.90}]}]}": "line 3: products.variants.price: expected int64, got number 59.90 (prices are integer centavos",
		"{\"products\":[\n{\"titel\":\"T\"}\n]}":                                  `line 2: json: unknown field "titel"`,
		"{\"products\":[\n\n{\"title\":}]}":                                       "line 3: invalid character '}'",
		`{"products":[]}`:                                                         "no products",
	} {
		f := parseCatalogJSON([]byte(src))
		if len(f.fatal) != 1 || !strings.Contains(f.fatal[0], want) {
			t.Errorf("%q: %v, want %q", src, f.fatal, want)
		}
	}
}

func TestCatalogCommands(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{3}, 32), Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"--server", "http://" + r.InternalAddr, "--token", "op"}, args...), &out)
		return out.String(), err
	}
	mustOK := func(args ...string) string {
		t.Helper()
		out, err := ctl(args...)
		if err != nil {
			t.Fatalf("bcpctl %v: %v", args, err)
		}
		return out
	}
	wantErr := func(code int, contains []string, args ...string) {
		t.Helper()
		_, err := ctl(args...)
		if err == nil {
			t.Fatalf("bcpctl %v succeeded, want an error", args)
		}
		msg := errorMessage(err)
		for _, c := range contains {
			if !strings.Contains(msg, c) {
				t.Fatalf("bcpctl %v: %q does not contain %q", args, msg, c)
			}
		}
		if exitCode(err) != code {
			t.Fatalf("bcpctl %v: exit %d, want %d (%s)", args, exitCode(err), code, msg)
		}
	}
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mustOK("tenant", "create", "--name", "Loja A", "--domain", "loja-a.localhost")
	mustOK("tenant", "create", "--name", "Loja B", "--domain", "loja-b.localhost")

	jsonFile := file("catalogo.json", `{"products": [
  {"id": "prd_cam", "title": "Camiseta", "variants": [
    {"sku": "CAM-P", "title": "Camiseta P", "price": 5990, "stock": 10},
    {"sku": "CAM-M", "title": "Camiseta M", "price": 5990, "stock": 0, "active": false}]},
  {"title": "Caneca", "image_url": "https://cdn.example.com.br/caneca.png", "variants": [
    {"sku": "CAN-350", "title": "Caneca 350 ml", "price": 123456, "currency": "BRL", "stock": 100}]}
]}`)
	if out := mustOK("catalog", "import", "loja-a", jsonFile, "--dry-run"); out != "created 2, updated 0, unchanged 0 (dry run: nothing changed)\n" {
		t.Fatalf("dry run: %q", out)
	}
	if out := mustOK("catalog", "list", "loja-a"); strings.Count(out, "\n") != 1 {
		t.Fatalf("a dry run imported:\n%s", out)
	}
	if out := mustOK("catalog", "import", "loja-a", jsonFile); out != "created 2, updated 0, unchanged 0\n" {
		t.Fatalf("json import: %q", out)
	}
	if out := mustOK("catalog", "import", "loja-a.localhost", jsonFile); out != "created 0, updated 0, unchanged 2\n" {
		t.Fatalf("json import again: %q", out)
	}
	list := mustOK("catalog", "list", "loja-a")
	for _, want := range []string{"PRODUCT", "prd_cam", "CAM-P", "R$ 59,90", "R$ 1.234,56", "Caneca", "CAN-350"} {
		if !strings.Contains(list, want) {
			t.Fatalf("list lacks %q:\n%s", want, list)
		}
	}
	if !strings.Contains(lineWith(list, "CAM-M"), "  no") || !strings.Contains(lineWith(list, "CAM-P"), "  yes") {
		t.Fatalf("active column:\n%s", list)
	}

	// CSV: the same products (Caneca found by its SKU), one price changed,
	// one product added; then the same file again.
	csvFile := file("catalogo.csv", "product_id,product_title,description,image_url,sku,variant_title,price,stock,active\n"+
		"prd_cam,Camiseta,,,CAM-P,Camiseta P,\"59,90\",10,true\n"+
		"prd_cam,,,,CAM-M,Camiseta M,5990,0,false\n"+
		",Caneca,,https://cdn.example.com.br/caneca.png,CAN-350,Caneca 350 ml,\"R$ 1.199,90\",100,\n"+
		"prd_cafe,Café,Torrado,,CAF-250,,\"45,00\",25,sim\n")
	if out := mustOK("catalog", "import", "loja-a", csvFile); out != "created 1, updated 1, unchanged 1\n" {
		t.Fatalf("csv import: %q", out)
	}
	if out := mustOK("catalog", "import", "loja-a", csvFile); out != "created 0, updated 0, unchanged 3\n" {
		t.Fatalf("csv import again: %q", out)
	}
	list = mustOK("catalog", "list", "loja-a")
	if !strings.Contains(lineWith(list, "CAN-350"), "R$ 1.199,90") || !strings.Contains(lineWith(list, "CAF-250"), "R$ 45,00") {
		t.Fatalf("after csv:\n%s", list)
	}

	// Three bad rows: errors at their lines and columns, nothing changed.
	bad := file("ruim.csv", "product_id,product_title,description,image_url,sku,variant_title,price,stock,active\n"+
		"prd_cam,Camiseta,,,CAM-P,Camiseta P,\"49,90\",10,true\n"+
		"prd_cam,,,,CAM-M,Camiseta M,-100,0,false\n"+
		"prd_bone,,,,BON-1,Boné,\"29,90\",3,true\n"+
		"prd_meia,Meia,,,CAM-P,,990,-1,\n")
	wantErr(2, []string{
		"ruim.csv: 4 error(s), nothing imported:",
		"line 3: price: price must be zero or more centavos, got -100",
		"line 4: product_title: title is required",
		`line 5: sku: sku "CAM-P" appears twice (first at line 2)`,
		"line 5: stock: stock must be zero or more, got -1",
	}, "catalog", "import", "loja-a", bad)
	if after := mustOK("catalog", "list", "loja-a"); after != list {
		t.Fatalf("a rejected import changed the catalog:\n%s\nwas:\n%s", after, list)
	}
	// Values that do not parse and errors only the catalog knows are
	// reported together.
	mixed := file("misto.csv", "product_id,product_title,description,image_url,sku,variant_title,price,stock,active\n"+
		"prd_x,X,,,X-1,,59.90,1,\n"+
		"prd_y,Y,,ftp://imagem,CAN-350,,100,1,\n")
	wantErr(2, []string{
		"3 error(s)", "line 2: price: \"59.90\" is ambiguous",
		"line 3: image_url: image_url must be an absolute http(s) URL",
	}, "catalog", "import", "loja-a", mixed)
	_, err = ctl("catalog", "import", "loja-a", mixed)
	if msg := errorMessage(err); !strings.Contains(msg, `line 3: sku: sku "CAN-350" already belongs to product "prd_`) {
		t.Fatalf("catalog errors in a file with parse errors: %s", msg)
	}
	badJSON := file("ruim.json", `{"products":[{"id":"prd_cam","title":"Camiseta","variants":[{"sku":"CAM-P","title":"P","price":5990,"currency":"USD","stock":1}]}]}`)
	wantErr(2, []string{"products[0].variants[0].currency: only BRL is supported"}, "catalog", "import", "loja-a", badJSON)

	// Another tenant: same ids and SKUs are its own.
	if out := mustOK("catalog", "import", "loja-b", jsonFile); out != "created 2, updated 0, unchanged 0\n" {
		t.Fatalf("import into B: %q", out)
	}

	wantErr(2, []string{"tenant_not_found"}, "catalog", "import", "nope", jsonFile)
	wantErr(2, []string{"tenant_not_found"}, "catalog", "list", "nope")
	wantErr(2, []string{"cannot read the catalog file"}, "catalog", "import", "loja-a", filepath.Join(dir, "missing.json"))
	wantErr(2, []string{"expects 2 argument(s)"}, "catalog", "import", "loja-a")
	wantErr(2, []string{"unknown command catalog explode"}, "catalog", "explode")
	wantErr(2, []string{`missing column "stock"`}, "catalog", "import", "loja-a", file("h.csv", "product_id,product_title,description,image_url,sku,variant_title,price,active\n"))
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
