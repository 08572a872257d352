package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

// catalogProfile is an agent profile with checkout and the catalog
// capabilities (roots: no extends).
func catalogProfile(catalog bool) string {
	doc := agentProfile("br.dev.bcp.shopping.checkout")
	if !catalog {
		return doc
	}
	entry := func(name, file string) string {
		return fmt.Sprintf(`%q:[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/catalog/%s","schema":"https://bcp.dev.br/draft/schemas/shopping/catalog_%s.json"}],`, "br.dev.bcp.shopping.catalog."+name, name, file)
	}
	return strings.Replace(doc, `"capabilities":{`, `"capabilities":{`+entry("search", "search")+entry("lookup", "lookup"), 1)
}

// catalogDriver performs one catalog operation over a binding: a payload
// validated against the BCP result schema, or a protocol error.
type catalogDriver interface {
	name() string
	op(t *testing.T, host, tool string, catalog map[string]any) outcome
}

type mcpCatalog struct {
	sessions map[string]*mcp.ClientSession
	profile  string
	v        *bcpschema.ToolValidator
	cv       *bcpschema.Validator
}

func (mcpCatalog) name() string { return "mcp" }

func (d mcpCatalog) op(t *testing.T, host, tool string, catalog map[string]any) outcome {
	t.Helper()
	res, err := d.sessions[host].CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{
		"meta": map[string]any{"ucp-agent": map[string]any{"profile": d.profile}}, "catalog": catalog,
	}})
	if err != nil {
		var e *jsonrpc.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s over MCP: %v", tool, err)
		}
		var data struct {
			Code  string   `json:"code"`
			Paths []string `json:"paths"`
		}
		_ = json.Unmarshal(e.Data, &data)
		return outcome{errCode: data.Code, errPaths: data.Paths, rpcCode: e.Code}
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if text, ok := res.Content[0].(*mcp.TextContent); len(res.Content) != 1 || !ok || !jsonEqual(text.Text, string(raw)) {
		t.Fatalf("%s: the text block is not the structuredContent", tool)
	}
	return checkCatalogPayload(t, d.v, d.cv, tool, raw, 0)
}

type restCatalog struct {
	addr    string
	clients map[string]*http.Client
	v       *bcpschema.ToolValidator
	cv      *bcpschema.Validator
}

func (restCatalog) name() string { return "rest" }

func (d restCatalog) op(t *testing.T, host, tool string, catalog map[string]any) outcome {
	t.Helper()
	path := map[string]string{"search_catalog": "/catalog/search", "lookup_catalog": "/catalog/lookup", "get_product": "/catalog/product"}[tool]
	b, _ := json.Marshal(catalog)
	req, err := http.NewRequest(http.MethodPost, "http://"+d.addr+"/bcp/rest"+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.clients[host].Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var flat struct {
			Code    string   `json:"code"`
			Content string   `json:"content"`
			Paths   []string `json:"paths"`
		}
		if err := json.Unmarshal(raw, &flat); err != nil || flat.Code == "" || flat.Content == "" {
			t.Fatalf("%s: HTTP %d with body %s", tool, resp.StatusCode, raw)
		}
		return outcome{errCode: flat.Code, errPaths: flat.Paths, httpStatus: resp.StatusCode, raw: raw}
	}
	return checkCatalogPayload(t, d.v, d.cv, tool, raw, resp.StatusCode)
}

// checkCatalogPayload validates a business payload against the BCP
// schemas: the tool's result schema, and an error_response's own schema.
func checkCatalogPayload(t *testing.T, v *bcpschema.ToolValidator, cv *bcpschema.Validator, tool string, raw []byte, status int) outcome {
	t.Helper()
	o := outcome{raw: raw, httpStatus: status}
	if err := json.Unmarshal(raw, &o.body); err != nil {
		t.Fatalf("%s: not a JSON object: %s", tool, raw)
	}
	if err := v.ValidateResult(tool, raw); err != nil {
		t.Fatalf("%s: result fails the BCP schema: %v\n%s", tool, err, raw)
	}
	if _, hasProducts := o.body["products"]; !hasProducts && o.body["ucp"].(map[string]any)["status"] == "error" {
		if err := cv.ValidateErrorResponse(raw); err != nil {
			t.Fatalf("%s: error_response fails the schema: %v\n%s", tool, err, raw)
		}
	}
	return o
}

func catalogProducts(t *testing.T, o outcome) []map[string]any {
	t.Helper()
	if o.body == nil {
		t.Fatalf("want products, got protocol error %s %v", o.errCode, o.errPaths)
	}
	var out []map[string]any
	for _, p := range o.body["products"].([]any) {
		out = append(out, p.(map[string]any))
	}
	return out
}

func titles(ps []map[string]any) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p["title"].(string))
	}
	return out
}

// The catalog over MCP and REST on two merchants: Portuguese search with
// and without accents and with a typo, filters, pagination that returns
// every product exactly once, lookups with unknown ids and over the batch
// limit, get_product, negotiation, and a found variant bought through
// checkout. Neither merchant ever sees the other's products.
func TestCatalogOverMCPAndREST(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	alfa := setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)
	beta := setupMerchant(t, r, "Loja Beta", "beta.localhost", 1000)
	ops := r.ClientsWithToken(operatorToken)
	cat := func(s string) *string { return &s }
	// Beyond setupMerchant's Camiseta, Caneca and Chinelo (sold out): a
	// few products each, one only alfa sells and one only beta sells.
	extra := map[string][]*catalogv1.Product{
		alfa.host: {
			{Id: "prd_ceramica", Title: "Caneca de Cerâmica Azul", Description: "Vai ao micro-ondas.", Category: cat("Cozinha"), Active: true,
				Variants: []*catalogv1.Variant{{Id: "var_ceramica", Sku: "CER-AZ", Title: "350 ml", Price: 4590, Stock: 5, Active: true}}},
			{Id: "prd_cafe", Title: "Café Especial Torrado", Description: "Grãos do sul de Minas.", Category: cat("Mercearia"), Active: true,
				Variants: []*catalogv1.Variant{{Id: "var_cafe", Sku: "CAFE", Title: "250 g", Price: 3290, Stock: 8, Active: true}}},
			{Id: "prd_so_alfa", Title: "Rede de Descanso Alfa", Category: cat("Casa"), Active: true,
				Variants: []*catalogv1.Variant{{Id: "var_rede", Sku: "REDE", Title: "Casal", Price: 18900, Stock: 1, Active: true}}},
		},
		beta.host: {
			{Id: "prd_chaleira", Title: "Chaleira Esmaltada Beta", Category: cat("Cozinha"), Active: true,
				Variants: []*catalogv1.Variant{{Id: "var_chaleira", Sku: "CHA", Title: "1,5 l", Price: 12900, Stock: 3, Active: true}}},
		},
	}
	for _, m := range []merchant{alfa, beta} {
		for _, p := range extra[m.host] {
			if _, err := ops.Catalog.CreateProduct(tenancy.With(context.Background(), m.tenantID), connect.NewRequest(&catalogv1.CreateProductRequest{Product: p})); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 7 { // enough for three pages of three on alfa
		p := &catalogv1.Product{Id: fmt.Sprintf("prd_toalha_%d", i), Title: fmt.Sprintf("Toalha de Banho %d", i), Category: cat("Banho"), Active: true,
			Variants: []*catalogv1.Variant{{Id: fmt.Sprintf("var_toalha_%d", i), Sku: fmt.Sprintf("TOA-%d", i), Title: "Única", Price: 2000 + int64(i), Stock: 1, Active: true}}}
		if _, err := ops.Catalog.CreateProduct(tenancy.With(context.Background(), alfa.tenantID), connect.NewRequest(&catalogv1.CreateProductRequest{Product: p})); err != nil {
			t.Fatal(err)
		}
	}
	alfaIDs := []string{"prd_cafe", "prd_cam", "prd_can", "prd_ceramica", "prd_out", "prd_so_alfa"}
	for i := range 7 {
		alfaIDs = append(alfaIDs, fmt.Sprintf("prd_toalha_%d", i))
	}
	slices.Sort(alfaIDs)

	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(catalogProfile(req.URL.Path == "/catalog.json")))
	}))
	t.Cleanup(profiles.Close)
	profile, noCatalog := profiles.URL+"/catalog.json", profiles.URL+"/checkout-only.json"
	v, err := edge.NewToolValidator()
	if err != nil {
		t.Fatal(err)
	}
	cv, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	restClients := func(profile string) map[string]*http.Client {
		out := map[string]*http.Client{}
		for _, h := range []string{alfa.host, beta.host} {
			key, err := ops.Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: h, AgentProfileUrl: profile, Label: "e2e-catalog"}))
			if err != nil {
				t.Fatal(err)
			}
			out[h] = &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, APIKey: key.Msg.GetSecret(), Host: h}}
		}
		return out
	}
	sessions := map[string]*mcp.ClientSession{alfa.host: agentSession(t, r, alfa.host, profile), beta.host: agentSession(t, r, beta.host, profile)}
	drivers := []catalogDriver{
		mcpCatalog{sessions: sessions, profile: profile, v: v, cv: cv},
		restCatalog{addr: r.PublicAddr, clients: restClients(profile), v: v, cv: cv},
	}

	// The merchant profile advertises both capabilities (roots).
	preq, _ := http.NewRequest(http.MethodGet, "http://"+r.PublicAddr+"/.well-known/bcp", nil)
	preq.Host = alfa.host
	presp, err := http.DefaultClient.Do(preq)
	if err != nil {
		t.Fatal(err)
	}
	var prof struct {
		UCP struct {
			Capabilities map[string][]map[string]any `json:"capabilities"`
		} `json:"ucp"`
	}
	if err := json.NewDecoder(presp.Body).Decode(&prof); err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	for name, schema := range map[string]string{"br.dev.bcp.shopping.catalog.search": "catalog_search.json", "br.dev.bcp.shopping.catalog.lookup": "catalog_lookup.json"} {
		e := prof.UCP.Capabilities[name]
		if len(e) != 1 || e[0]["version"] != "2026-07-28" || e[0]["schema"] != "https://bcp.dev.br/draft/schemas/shopping/"+schema || e[0]["extends"] != nil {
			t.Errorf("profile capability %s = %v", name, e)
		}
	}

	tools, err := sessions[alfa.host].ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"search_catalog", "lookup_catalog", "get_product", "create_checkout"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list = %v, missing %s", names, want)
		}
	}

	for _, dr := range drivers {
		t.Run(dr.name(), func(t *testing.T) {
			search := func(host string, c map[string]any) []string {
				t.Helper()
				return titles(catalogProducts(t, dr.op(t, host, "search_catalog", c)))
			}
			for _, c := range []struct {
				host, query string
				want        []string
			}{
				{alfa.host, "caneca cerâmica", []string{"Caneca de Cerâmica Azul"}},
				{alfa.host, "caneca ceramica", []string{"Caneca de Cerâmica Azul"}}, // no accent
				{alfa.host, "cafe", []string{"Café Especial Torrado"}},
				{alfa.host, "camizeta", []string{"Camiseta"}}, // typo
				{alfa.host, "chaleira", []string{}},           // beta's product
				{beta.host, "chaleira esmaltada", []string{"Chaleira Esmaltada Beta"}},
				{beta.host, "rede descanso", []string{}},           // alfa's product
				{beta.host, "caneca ceramica", []string{"Caneca"}}, // not alfa's: beta's own, by similarity
			} {
				if got := search(c.host, map[string]any{"query": c.query}); !slices.Equal(got, c.want) {
					t.Errorf("%s: search %q = %v, want %v", c.host, c.query, got, c.want)
				}
			}

			// The result carries what checkout needs: variant id, price in
			// centavos, availability; the merchant's own prices.
			res := dr.op(t, beta.host, "search_catalog", map[string]any{"query": "camiseta"})
			ps := catalogProducts(t, res)
			if len(ps) != 1 {
				t.Fatalf("beta camiseta: %s", res.raw)
			}
			variant := ps[0]["variants"].([]any)[0].(map[string]any)
			price := variant["price"].(map[string]any)
			if variant["id"] != "var_cam" || price["amount"] != float64(6990) || price["currency"] != "BRL" ||
				variant["availability"].(map[string]any)["available"] != true || res.body["ucp"].(map[string]any)["capabilities"].(map[string]any)["br.dev.bcp.shopping.catalog.search"] == nil {
				t.Fatalf("beta camiseta: %s", res.raw)
			}
			sold := catalogProducts(t, dr.op(t, alfa.host, "search_catalog", map[string]any{"query": "chinelo"}))
			if len(sold) != 1 || sold[0]["variants"].([]any)[0].(map[string]any)["availability"].(map[string]any)["status"] != "out_of_stock" {
				t.Fatalf("sold-out chinelo: %v", sold)
			}

			// Filters the schema defines: categories and price.
			if got := search(alfa.host, map[string]any{"filters": map[string]any{"categories": []any{"Cozinha", "Mercearia"}}}); !slices.Equal(got, []string{"Café Especial Torrado", "Caneca de Cerâmica Azul"}) {
				t.Errorf("categories: %v", got)
			}
			if got := search(alfa.host, map[string]any{"query": "caneca", "filters": map[string]any{"price": map[string]any{"max": 4000}}}); !slices.Equal(got, []string{"Caneca"}) {
				t.Errorf("caneca up to 4000: %v", got)
			}

			// A price filter in another currency is not converted: ignored, and said so.
			o := dr.op(t, alfa.host, "search_catalog", map[string]any{"query": "caneca", "context": map[string]any{"currency": "USD"}, "filters": map[string]any{"price": map[string]any{"max": 1}}})
			if got := titles(catalogProducts(t, o)); len(got) != 2 || !strings.Contains(string(o.raw), `"code":"price_filter_ignored"`) {
				t.Errorf("USD price filter: %s", o.raw)
			}

			// Pagination: every product once, in pages of three.
			var seen []string
			cursor := ""
			for page := 0; ; page++ {
				c := map[string]any{"pagination": map[string]any{"limit": 3}}
				if cursor != "" {
					c["pagination"].(map[string]any)["cursor"] = cursor
				}
				o := dr.op(t, alfa.host, "search_catalog", c)
				for _, p := range catalogProducts(t, o) {
					seen = append(seen, p["id"].(string))
				}
				pg := o.body["pagination"].(map[string]any)
				if pg["has_next_page"] != true {
					break
				}
				if cursor = pg["cursor"].(string); page > len(alfaIDs) {
					t.Fatal("more pages than products")
				}
			}
			if !slices.Equal(seen, alfaIDs) {
				t.Errorf("pages returned %v, want each of %v once", seen, alfaIDs)
			}

			// Lookup: unknown ids (and the other merchant's) are left out and
			// named by not_found info messages.
			o = dr.op(t, alfa.host, "lookup_catalog", map[string]any{"ids": []any{"var_ceramica", "prd_nope", "prd_chaleira", "prd_cafe"}})
			ps = catalogProducts(t, o)
			if got := titles(ps); !slices.Equal(got, []string{"Caneca de Cerâmica Azul", "Café Especial Torrado"}) {
				t.Fatalf("lookup: %v", got)
			}
			in := ps[0]["variants"].([]any)[0].(map[string]any)["inputs"].([]any)[0].(map[string]any)
			if in["id"] != "var_ceramica" || in["match"] != "exact" {
				t.Fatalf("lookup inputs: %v", in)
			}
			var notFound []string
			for _, m := range o.body["messages"].([]any) {
				msg := m.(map[string]any)
				if msg["type"] == "info" && msg["code"] == "not_found" {
					notFound = append(notFound, msg["content"].(string))
				}
			}
			if !slices.Equal(notFound, []string{"prd_nope", "prd_chaleira"}) {
				t.Fatalf("not_found messages: %v", o.body["messages"])
			}
			// Over the batch limit: -32602 / 400 naming the ids.
			many := make([]any, 51)
			for i := range many {
				many[i] = fmt.Sprintf("prd_%d", i)
			}
			wantCatalogError(t, dr, dr.op(t, alfa.host, "lookup_catalog", map[string]any{"ids": many}), "request_too_large", "$.catalog.ids")
			// Arguments failing the schema name their path.
			wantCatalogError(t, dr, dr.op(t, alfa.host, "search_catalog", map[string]any{"pagination": map[string]any{"limit": 0}}), "invalid_params", "$.catalog.pagination.limit")
			wantCatalogError(t, dr, dr.op(t, alfa.host, "lookup_catalog", map[string]any{"ids": []any{}}), "invalid_params", "$.catalog.ids")
			wantCatalogError(t, dr, dr.op(t, alfa.host, "get_product", map[string]any{}), "invalid_params", "$.catalog.id")
			// Text PostgreSQL cannot hold is refused at its path, not a 500
			// (the edge's input guard, as for every tool).
			wantCatalogError(t, dr, dr.op(t, alfa.host, "lookup_catalog", map[string]any{"ids": []any{"var_cam", "var\x00cam"}}), "invalid_params", "$.catalog.ids[1]")
			wantCatalogError(t, dr, dr.op(t, alfa.host, "get_product", map[string]any{"id": "prd\x00cam"}), "invalid_params", "$.catalog.id")
			wantCatalogError(t, dr, dr.op(t, alfa.host, "search_catalog", map[string]any{"filters": map[string]any{"price": map[string]any{"max": -1}}}), "invalid_params", "$.catalog.filters.price.max")

			// get_product: a variant id comes first; an unknown id (or the
			// other merchant's) is an error_response not_found.
			o = dr.op(t, alfa.host, "get_product", map[string]any{"id": "var_cam"})
			if p := o.body["product"].(map[string]any); p["id"] != "prd_cam" || p["variants"].([]any)[0].(map[string]any)["id"] != "var_cam" {
				t.Fatalf("get_product: %s", o.raw)
			}
			o = dr.op(t, alfa.host, "get_product", map[string]any{"id": "prd_chaleira"})
			if o.body["ucp"].(map[string]any)["status"] != "error" || !strings.Contains(string(o.raw), `"code":"not_found"`) || strings.Contains(string(o.raw), "Chaleira") {
				t.Fatalf("get_product of beta's product on alfa: %s", o.raw)
			}
		})
	}

	// Negotiation: an agent whose profile lacks the catalog capabilities
	// gets the business outcome checkout gives without a shared capability.
	noCat := []catalogDriver{
		mcpCatalog{sessions: map[string]*mcp.ClientSession{alfa.host: agentSession(t, r, alfa.host, noCatalog)}, profile: noCatalog, v: v, cv: cv},
		restCatalog{addr: r.PublicAddr, clients: restClients(noCatalog), v: v, cv: cv},
	}
	for _, dr := range noCat {
		o := dr.op(t, alfa.host, "search_catalog", map[string]any{"query": "caneca"})
		if o.body["ucp"].(map[string]any)["status"] != "error" || !strings.Contains(string(o.raw), "capabilities_incompatible") || strings.Contains(string(o.raw), "Caneca") {
			t.Fatalf("%s: search without the capability: %s", dr.name(), o.raw)
		}
	}

	// REST-only protocol errors: the operations are POSTs, and the agent
	// must name itself.
	rc := restClients(profile)[alfa.host]
	resp, err := rc.Get("http://" + r.PublicAddr + "/bcp/rest/catalog/search")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /catalog/search: HTTP %d, want 405", resp.StatusCode)
	}
	resp, err = rc.Post("http://"+r.PublicAddr+"/bcp/rest/catalog/search", "application/json", strings.NewReader(`[1,`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"paths":["$.catalog"]`) {
		t.Fatalf("malformed body: HTTP %d %s", resp.StatusCode, body)
	}

	// A found variant is what checkout's item.id takes.
	found := catalogProducts(t, drivers[0].op(t, alfa.host, "search_catalog", map[string]any{"query": "café"}))
	id := found[0]["variants"].([]any)[0].(map[string]any)["id"]
	A := &agent{t: t, s: sessions[alfa.host], profile: profile, v: cv}
	_, c := A.call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": id}, "quantity": 2}}}})
	if len(c.LineItems) != 1 || c.LineItems[0].Item.ID != "var_cafe" || totals(c)["subtotal"] != 6580 {
		t.Fatalf("checkout of the found variant: %+v %v", c.LineItems, totals(c))
	}
}

func wantCatalogError(t *testing.T, d catalogDriver, o outcome, code, path string) {
	t.Helper()
	if o.body != nil {
		t.Fatalf("%s: want protocol error %s at %s, got %s", d.name(), code, path, o.raw)
	}
	if o.errCode != code || !slices.Contains(o.errPaths, path) {
		t.Fatalf("%s: error %s at %v, want %s at %s", d.name(), o.errCode, o.errPaths, code, path)
	}
	if d.name() == "rest" && o.httpStatus != http.StatusBadRequest || d.name() == "mcp" && o.rpcCode != -32602 {
		t.Fatalf("%s: %s with HTTP %d / JSON-RPC %d, want 400 / -32602", d.name(), code, o.httpStatus, o.rpcCode)
	}
}
