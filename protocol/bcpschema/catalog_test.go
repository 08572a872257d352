package bcpschema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// catalogTools are the catalog rows of the edge's operation table.
var catalogTools = []bcpschema.Tool{
	{Name: "search_catalog", Root: bcpschema.RootCatalogSearch, Op: bcpschema.OpRead},
	{Name: "lookup_catalog", Root: bcpschema.RootCatalogLookup, Op: bcpschema.OpRead},
	{Name: "get_product", Root: bcpschema.RootCatalogProduct, Op: bcpschema.OpRead},
}

func TestCatalogToolSchemas(t *testing.T) {
	v, err := bcpschema.NewToolValidator(catalogTools)
	if err != nil {
		t.Fatal(err)
	}
	meta := `"meta":{"ucp-agent":{"profile":"https://agent.example/p.json"}}`
	for _, c := range []struct {
		tool, args string
		paths      []string // nil: valid
	}{
		{"search_catalog", `{` + meta + `,"catalog":{"query":"caneca","filters":{"categories":["Cozinha"],"price":{"min":100,"max":5000}},"pagination":{"limit":5}}}`, nil},
		{"search_catalog", `{` + meta + `,"catalog":{}}`, nil},
		{"search_catalog", `{` + meta + `,"catalog":{"pagination":{"limit":0}}}`, []string{"$.catalog.pagination.limit"}},
		{"search_catalog", `{` + meta + `,"catalog":{"filters":{"price":{"min":-1}}}}`, []string{"$.catalog.filters.price.min"}},
		{"search_catalog", `{` + meta + `}`, []string{"$.catalog"}},
		{"search_catalog", `{"catalog":{},` + meta + `,"id":"x"}`, []string{"$.id"}},
		{"lookup_catalog", `{` + meta + `,"catalog":{"ids":["var_1","prd_2"]}}`, nil},
		{"lookup_catalog", `{` + meta + `,"catalog":{"ids":[]}}`, []string{"$.catalog.ids"}},
		{"lookup_catalog", `{` + meta + `,"catalog":{"ids":[1]}}`, []string{"$.catalog.ids[0]"}},
		{"get_product", `{` + meta + `,"catalog":{"id":"prd_1"}}`, nil},
		{"get_product", `{` + meta + `,"catalog":{}}`, []string{"$.catalog.id"}},
		{"get_product", `{"meta":{"ucp-agent":{"profile":"not a uri"}},"catalog":{"id":"prd_1"}}`, []string{"$.meta['ucp-agent'].profile"}},
	} {
		err := v.ValidateToolInput(c.tool, json.RawMessage(c.args))
		if c.paths == nil {
			if err != nil {
				t.Errorf("%s %s: %v", c.tool, c.args, err)
			}
			continue
		}
		var ve *bcpschema.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s %s: got %v, want violations at %v", c.tool, c.args, err, c.paths)
			continue
		}
		var got []string
		for _, x := range ve.Violations {
			got = append(got, x.Path)
		}
		if !slices.Equal(got, c.paths) {
			t.Errorf("%s %s: violations at %v, want %v", c.tool, c.args, got, c.paths)
		}
	}

	product := `{"id":"prd_1","title":"Caneca","description":{"plain":"Cerâmica"},"price_range":{"min":{"amount":3990,"currency":"BRL"},"max":{"amount":3990,"currency":"BRL"}},
		"variants":[{"id":"var_1","title":"350 ml","description":{"plain":"350 ml"},"price":{"amount":3990,"currency":"BRL"},"availability":{"available":true,"status":"in_stock"}%s}]}`
	ucp := `"ucp":{"version":"2026-07-28","capabilities":{"br.dev.bcp.shopping.catalog.lookup":[{"version":"2026-07-28"}]}}`
	lookupOK := `{` + ucp + `,"products":[` + fmt.Sprintf(product, `,"inputs":[{"id":"var_1","match":"exact"}]`) + `]}`
	if err := v.ValidateResult("lookup_catalog", json.RawMessage(lookupOK)); err != nil {
		t.Errorf("lookup result: %v", err)
	}
	// A lookup variant must say which input resolved to it.
	if err := v.ValidateResult("lookup_catalog", json.RawMessage(`{`+ucp+`,"products":[`+fmt.Sprintf(product, ``)+`]}`)); err == nil {
		t.Error("a lookup variant without inputs passed")
	}
	if err := v.ValidateResult("search_catalog", json.RawMessage(`{`+ucp+`,"products":[`+fmt.Sprintf(product, ``)+`],"pagination":{"has_next_page":true}}`)); err == nil {
		t.Error("has_next_page without a cursor passed")
	}
	if err := v.ValidateResult("get_product", json.RawMessage(`{"ucp":{"version":"2026-07-28","status":"error"},"messages":[{"type":"error","code":"not_found","content":"x","severity":"unrecoverable"}]}`)); err != nil {
		t.Errorf("get_product error_response: %v", err)
	}
	for _, tool := range catalogTools {
		in, err := bcpschema.ToolInputSchema(tool, nil)
		if err != nil || !json.Valid(in) {
			t.Fatalf("%s input schema: %v", tool.Name, err)
		}
		out, err := bcpschema.ToolOutputSchema(tool, nil)
		var doc map[string]any
		if err != nil || json.Unmarshal(out, &doc) != nil || doc["type"] != "object" {
			t.Fatalf("%s output schema: %v %s", tool.Name, err, out)
		}
	}
}
