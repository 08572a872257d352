package admin

import (
	"strings"
	"testing"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

func TestNormalizePixKey(t *testing.T) {
	for _, tc := range []struct{ kind, in, want, err string }{
		{"cpf", "529.982.247-25", "52998224725", ""},
		{"cpf", "123.456.789-00", "", "CPF inválido"},
		{"cnpj", "11.222.333/0001-81", "11222333000181", ""},
		{"cnpj", "11.222.333/0001-80", "", "CNPJ inválido"},
		{"phone", "(48) 99123-4567", "+5548991234567", ""},
		{"phone", "+55 48 99123-4567", "+5548991234567", ""},
		{"phone", "5548991234567", "+5548991234567", ""},
		{"phone", "abc", "", "Informe a chave"},
		{"phone", "+55", "", "Telefone inválido"},
		{"phone", "1234", "", "Telefone inválido"},
		{"phone", "+1 415 555 0100", "", "Telefone inválido"},
		{"email", " Loja@Exemplo.com.br ", "loja@exemplo.com.br", ""},
		{"email", "loja@", "", "E-mail inválido"},
		{"evp", "123E4567-E89B-12D3-A456-426614174000", "123e4567-e89b-12d3-a456-426614174000", ""},
		{"evp", "52998224725", "", "Chave aleatória inválida"},
		{"email", "529.982.247-25", "", "E-mail inválido"},
		{"", "x", "", "Escolha o tipo"},
	} {
		got, msg := normalizePixKey(tc.kind, tc.in)
		if got != tc.want || (tc.err == "") != (msg == "") || !strings.HasPrefix(msg, tc.err) {
			t.Errorf("normalizePixKey(%q, %q) = %q, %q; want %q, %q…", tc.kind, tc.in, got, msg, tc.want, tc.err)
		}
	}
}

func TestParseCSVPrice(t *testing.T) {
	for in, want := range map[string]int64{"59,90": 5990, "R$ 1.234,56": 123456, "5990": 5990, "59,9": 5990, "-5,00": -500, "0": 0} {
		if got, msg := parseCSVPrice(in); got != want || msg != "" {
			t.Errorf("parseCSVPrice(%q) = %d, %q; want %d", in, got, msg, want)
		}
	}
	for _, in := range []string{"59.90", "1.234", "", "12,345", "1.23,45", "dez"} {
		if _, msg := parseCSVPrice(in); msg == "" {
			t.Errorf("parseCSVPrice(%q) accepted", in)
		}
	}
}

// Local problems and catalog paths both point at file lines and columns.
func TestParseImportCSV(t *testing.T) {
	in := parseImportCSV([]byte("\ufeffproduct_id;product_title;description;image_url;sku;variant_title;price;stock;active\n" +
		"p1;Meia;;;M-P;;59,90;3;\n" +
		"p1;Outra;;;M-M;Meia M;1.234;-;não\n" +
		";Luva;;;L;;10;1;sim\n"))
	if in.fatal != nil || len(in.products) != 2 || len(in.products[0].GetVariants()) != 2 || in.products[0].GetVariants()[0].GetTitle() != "Meia" || in.products[0].GetVariants()[1].GetActive() {
		t.Fatalf("parsed %+v %v", in.products, in.fatal)
	}
	var got []string
	for _, p := range in.local {
		got = append(got, p.Column)
	}
	if strings.Join(got, ",") != "product_title,price,stock" || in.local[0].Line != 3 {
		t.Fatalf("local problems %+v", in.local)
	}
	p := in.locate(&catalogv1.ImportError{Path: "products[1].variants[0].sku", Code: "sku_taken", Message: "x"})
	if p.Line != 4 || p.Column != "sku" || p.Msg != "Este SKU já pertence a outro produto do catálogo." {
		t.Fatalf("located %+v", p)
	}
	if p := in.locate(&catalogv1.ImportError{Path: "products[0].title", Code: "weird", Message: "as is"}); p.Line != 2 || p.Column != "product_title" || p.Msg != "as is" {
		t.Fatalf("located %+v", p)
	}
	if bad := parseImportCSV([]byte("title,sku\nx,y\n")); len(bad.fatal) != 9 {
		t.Fatalf("header problems %+v", bad.fatal)
	}
}
