package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

// The edge's operation table is what both bindings serve: every row is an
// MCP tool listed with the schemas of its row, every REST route reaches its
// operation (another method is 405, another path 404), and the responses
// signed without the merchant asking are exactly the rows marked signed,
// over MCP and over REST.
func TestOperationTable(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	m := setupMerchant(t, r, "Loja Tabela", "tabela.localhost", 0)
	ctx := context.Background()
	ops, tools := edge.AuthOperations(), edge.Tools()
	if len(ops) != len(tools) || len(ops) < 13 {
		t.Fatalf("%d operations, %d tools", len(ops), len(tools))
	}

	// An agent with every capability the table's operations belong to.
	profile := agentProfile(bcpnames.Checkout, bcpnames.Order, bcpnames.Fulfillment, bcpnames.Discount, bcpnames.BuyerConsent)
	roots := ""
	for _, c := range []struct{ name, file string }{{bcpnames.Cart, "cart"}, {bcpnames.CatalogSearch, "catalog_search"}, {bcpnames.CatalogLookup, "catalog_lookup"}} {
		roots += fmt.Sprintf(`%q:[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/%s","schema":"https://bcp.dev.br/draft/schemas/shopping/%s.json"}],`, c.name, c.file, c.file)
	}
	profile = strings.Replace(profile, `"capabilities":{`, `"capabilities":{`+roots, 1)
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(profile))
	}))
	t.Cleanup(profiles.Close)
	profileURL := profiles.URL + "/agent.json"
	key, err := r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: m.host, AgentProfileUrl: profileURL, Label: "table"}))
	if err != nil {
		t.Fatal(err)
	}
	transport := &agentclient.Transport{ProfileURL: profileURL, APIKey: key.Msg.GetSecret(), Host: m.host}

	// tools/list: one tool per row, with the row's advertised schema for
	// the merchant's checkout capabilities.
	tenant, err := operatorClient(r).GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: m.host}))
	if err != nil {
		t.Fatal(err)
	}
	var caps []string
	for _, c := range tenant.Msg.GetTenant().GetCapabilities() {
		if info, ok := bcpnames.LookupCapability(c); ok && (c == bcpnames.Checkout || info.ExtendsCapability(bcpnames.Checkout)) {
			caps = append(caps, c)
		}
	}
	list, err := agentSession(t, r, m.host, profileURL).ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(tools) {
		t.Errorf("tools/list has %d tools, the table %d", len(list.Tools), len(tools))
	}
	asJSON := func(v any) any {
		b, _ := json.Marshal(v)
		var out any
		_ = json.Unmarshal(b, &out)
		return out
	}
	listed := map[string]*mcp.Tool{}
	for _, l := range list.Tools {
		listed[l.Name] = l
	}
	for _, tool := range tools {
		listed := listed[tool.Name]
		if listed == nil {
			t.Errorf("%s is not in tools/list", tool.Name)
			continue
		}
		// The row's advertised (compact) input schema, and no output
		// schema (issue 33: the full ones are validated, not listed).
		in, err := bcpschema.ToolAdvertisedSchema(tool, caps)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(asJSON(listed.InputSchema), asJSON(json.RawMessage(in))) || listed.OutputSchema != nil {
			t.Errorf("%s: listed schemas are not its row's", tool.Name)
		}
		if listed.Title == "" || listed.Description == "" {
			t.Errorf("%s: no title or description", tool.Name)
		}
		if required := asJSON(listed.InputSchema).(map[string]any)["properties"].(map[string]any)["meta"].(map[string]any)["required"]; reflect.DeepEqual(required, []any{"ucp-agent", "idempotency-key"}) != tool.IdempotencyKey {
			t.Errorf("%s: meta requires %v, the row says key required %v", tool.Name, required, tool.IdempotencyKey)
		}
	}

	// Over MCP: a call of each tool (arguments that may well be refused:
	// the rule is the same for errors) is signed exactly when its row is.
	mcpClient := &agentclient.Client{Endpoint: "http://" + r.PublicAddr + "/bcp/mcp", Transport: transport}
	rest := &http.Client{Transport: transport}
	for i, op := range ops {
		args := map[string]any{"id": "nao_existe"}
		if p := tools[i].Payload(); p != "" {
			args[p] = map[string]any{}
		}
		resp, err := mcpClient.CallTool(ctx, op.Tool, args)
		if err != nil {
			t.Fatalf("%s over MCP: %v", op.Tool, err)
		}
		if resp.Status != http.StatusOK && resp.Status != http.StatusBadRequest {
			t.Fatalf("%s over MCP: HTTP %d %s", op.Tool, resp.Status, resp.Body)
		}
		if signed := resp.Header.Get("Signature") != ""; signed != op.Signed {
			t.Errorf("%s over MCP: signed %v, the row says %v", op.Tool, signed, op.Signed)
		}

		// Over REST: the route reaches the operation, signed as over MCP.
		path := strings.Replace(op.Path, "{id}", "nao_existe", 1)
		var body io.Reader
		if tools[i].Payload() != "" {
			body = strings.NewReader(`{}`)
		}
		req, _ := http.NewRequest(op.Method, "http://"+r.PublicAddr+path, body)
		req.Header.Set("Content-Type", "application/json")
		if op.Method != http.MethodGet {
			req.Header.Set("Idempotency-Key", agentclient.NewIdempotencyKey())
		}
		res, raw := restDo(t, rest, req)
		if res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed || res.StatusCode >= 500 {
			t.Errorf("%s %s (%s): HTTP %d %s", op.Method, path, op.Tool, res.StatusCode, raw)
		}
		if signed := res.Header.Get("Signature") != ""; signed != op.Signed {
			t.Errorf("%s over REST: signed %v, the row says %v", op.Tool, signed, op.Signed)
		}
		req, _ = http.NewRequest(http.MethodDelete, "http://"+r.PublicAddr+path, nil)
		if res, raw := restDo(t, rest, req); res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("DELETE %s: HTTP %d %s, want 405", path, res.StatusCode, raw)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.PublicAddr+"/bcp/rest/wishlists", strings.NewReader(`{}`))
	if res, raw := restDo(t, rest, req); res.StatusCode != http.StatusNotFound {
		t.Errorf("POST /bcp/rest/wishlists: HTTP %d %s, want 404", res.StatusCode, raw)
	}
}

func restDo(t *testing.T, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, raw
}
