package devenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/testdb"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

// The tool surface an agent's model reads (issue 33): tools/list for the
// demo merchant with every capability on.
const (
	maxToolsBytes  = 40 << 10 // every tool definition together
	maxToolsTokens = 10_000   // the same, in o200k_base tokens
	maxToolBytes   = 5 << 10  // one tool definition
)

// TestDemoToolSurface lists the demo merchant's tools over the MCP SDK's
// client and checks what a host puts in its model's context: all 13 tool
// definitions fit in 40 KB and 10 000 tokens (o200k_base, the GPT-4o and
// later vocabulary; tiktoken-go/tokenizer embeds it), none is above 5 KB,
// every input schema is in the advertised subset and none declares an
// outputSchema, titles and descriptions are English and name the next
// step, and initialize carries the purchase flow as instructions. Then
// each invalid-argument case of protocol/bcpschema's table goes to the
// edge over MCP and to the full schemas directly: same error, same paths.
func TestDemoToolSurface(t *testing.T) {
	d := testdb.New(t)
	dir := t.TempDir()
	var out bytes.Buffer
	e, err := Start(context.Background(), Options{DataDir: dir, DatabaseURL: d.AppURL, OwnerURL: d.OwnerURL,
		PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", Out: &out, NoDemoHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	ctx := context.Background()
	token, _ := os.ReadFile(dir + "/operator-token")
	ops := e.Platform.ClientsWithToken(strings.TrimSpace(string(token)))
	// Every capability on: AP2 mandates are the one the demo starts without.
	if _, err := ops.Tenants.SetAP2Mandates(ctx, connect.NewRequest(&tenantsv1.SetAP2MandatesRequest{Tenant: DemoSlug, Enabled: true})); err != nil {
		t.Fatal(err)
	}
	tenant, err := ops.Tenants.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: DemoSlug}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(slices.Clone(bcpnames.DefaultCapabilities), bcpnames.AP2Mandate) {
		if !slices.Contains(tenant.Msg.GetTenant().GetCapabilities(), c) {
			t.Fatalf("the demo merchant lacks %s: %v", c, tenant.Msg.GetTenant().GetCapabilities())
		}
	}

	key, _ := os.ReadFile(dir + "/demo-api-key")
	profile := DemoAgentProfileURL(e.Platform.InternalAddr)
	transport := &agentclient.Transport{ProfileURL: profile, APIKey: strings.TrimSpace(string(key)), Host: DemoDomain}
	endpoint := "http://" + e.Platform.PublicAddr + "/bcp/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "tool-surface", Version: "1.0"}, nil)
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: transport}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	instructions := s.InitializeResult().Instructions
	for _, want := range []string{"search_catalog", "create_cart", "create_checkout", "update_checkout", "ready_for_complete",
		"complete_checkout", `meta["idempotency-key"]`, "Pix", "complete_in_progress", "get_checkout", "get_order", "centavos", "Portuguese"} {
		if !strings.Contains(instructions, want) {
			t.Errorf("initialize instructions lack %q:\n%s", want, instructions)
		}
	}

	list, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range edge.Tools() {
		names = append(names, tool.Name)
	}
	var listed []string
	total := 0
	for _, tool := range list.Tools {
		listed = append(listed, tool.Name)
		def, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		total += len(def)
		if len(def) > maxToolBytes {
			t.Errorf("%s: %d bytes, more than %d", tool.Name, len(def), maxToolBytes)
		}
		in, _ := json.Marshal(tool.InputSchema)
		if v := bcpschema.AdvertisedViolations(in); len(v) > 0 {
			t.Errorf("%s: input schema outside the advertised subset:\n%s", tool.Name, strings.Join(v, "\n"))
		}
		if tool.OutputSchema != nil {
			t.Errorf("%s declares an outputSchema", tool.Name)
		}
		// English tool text: ASCII, titles in sentence case; the
		// description says when to call the tool and names what comes
		// next, in at most two sentences.
		if !isASCII(tool.Title+tool.Description) || tool.Title == "" || strings.ToUpper(tool.Title[:1]) != tool.Title[:1] || strings.ToLower(tool.Title[1:]) != tool.Title[1:] {
			t.Errorf("%s: title %q, description %q", tool.Name, tool.Title, tool.Description)
		}
		if n := strings.Count(tool.Description, ". ") + 1; n > 2 || !strings.HasSuffix(tool.Description, ".") {
			t.Errorf("%s: description of %d sentences: %q", tool.Name, n, tool.Description)
		}
		if !slices.ContainsFunc(names, func(n string) bool { return n != tool.Name && strings.Contains(tool.Description, n) }) {
			t.Errorf("%s: the description names no next tool: %q", tool.Name, tool.Description)
		}
	}
	slices.Sort(names)
	slices.Sort(listed)
	if len(names) != 13 || !slices.Equal(listed, names) {
		t.Fatalf("tools/list = %v, want the 13 of the operation table %v", listed, names)
	}
	all, err := json.Marshal(list.Tools)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, err := enc.Encode(string(all))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools/list: %d tools, %d bytes (%d as one array), %d o200k_base tokens", len(list.Tools), total, len(all), len(ids))
	if total > maxToolsBytes || len(all) > maxToolsBytes {
		t.Errorf("tool definitions take %d bytes, more than %d", max(total, len(all)), maxToolsBytes)
	}
	if len(ids) > maxToolsTokens {
		t.Errorf("tool definitions take %d tokens, more than %d", len(ids), maxToolsTokens)
	}

	t.Run("invalid arguments: compact over MCP, full schemas directly", func(t *testing.T) {
		sameInvalidParams(t, &agentclient.Client{Endpoint: endpoint, Transport: transport}, profile, tenant.Msg.GetTenant().GetCapabilities())
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// violationCase is one entry of protocol/bcpschema's table of invalid
// tool arguments (testdata/tool_input_violations.json): args, or raw
// when the arguments are not a JSON value ("" for none).
type violationCase struct {
	Name string          `json:"name"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	Raw  *string         `json:"raw"`
	Want []string        `json:"want"` // "path keyword"
}

// tableProfile is the agent profile the table's arguments name; here the
// demo agent's, which its API key is bound to.
const tableProfile = "https://platform.example/agent.json"

// sameInvalidParams sends each case of the table to the edge (which
// advertises the compact schemas) over MCP and validates it against the
// full schemas the edge compiles for the merchant: the JSON-RPC error is
// -32602 invalid_params, and its content, paths and violations are the
// full schemas' ValidationError (protocol/bcpschema's test holds the
// table's paths to the full schemas).
func sameInvalidParams(t *testing.T, c *agentclient.Client, profile string, tenantCaps []string) {
	data, err := os.ReadFile(filepath.Join("..", "..", "protocol", "bcpschema", "testdata", "tool_input_violations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []violationCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("%d cases", len(cases))
	}
	var caps []string
	for _, cp := range tenantCaps {
		if info, ok := bcpnames.LookupCapability(cp); ok && (cp == bcpnames.Checkout || info.ExtendsCapability(bcpnames.Checkout)) {
			caps = append(caps, cp)
		}
	}
	// The edge validates cart and catalog arguments for the merchant's
	// capabilities, checkout and order arguments without AP2 (the checkout
	// service asks for mandates after negotiation): so does this.
	full, err := edge.NewToolValidator(caps...)
	if err != nil {
		t.Fatal(err)
	}
	fullCheckout, err := edge.NewToolValidator(slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return c == bcpnames.AP2Mandate })...)
	if err != nil {
		t.Fatal(err)
	}
	checkoutTools := map[string]bool{}
	for _, tool := range edge.Tools() {
		checkoutTools[tool.Name] = tool.Root == bcpschema.RootCheckout || tool.Root == bcpschema.RootOrder
	}
	sent, accepted := 0, 0
	for _, tc := range cases {
		args := strings.ReplaceAll(string(tc.Args), tableProfile, profile)
		if tc.Raw != nil {
			args = *tc.Raw
		}
		v := full
		if checkoutTools[tc.Tool] {
			v = fullCheckout
		}
		ferr := v.ValidateToolInput(tc.Tool, json.RawMessage(args))
		var ve *bcpschema.ValidationError
		if ferr != nil && !errors.As(ferr, &ve) {
			t.Errorf("%s: the full schemas answer %v", tc.Name, ferr)
			continue
		}
		var wantPaths []string
		if ve != nil {
			for _, v := range ve.Violations {
				wantPaths = append(wantPaths, v.Path)
			}
		}
		switch {
		case tc.Raw != nil && *tc.Raw != "":
			continue // not JSON: no JSON-RPC request can carry it
		case namedProfile(args) != "" && namedProfile(args) != profile:
			// Authentication reads the profile first: the API key's
			// profile is the only one this agent may name.
			resp, err := c.Call(context.Background(), "tools/call", map[string]any{"name": tc.Tool, "arguments": json.RawMessage(args)})
			if err != nil || resp.Status != http.StatusForbidden || resp.Error == nil || resp.Error.DataCode() != "profile_mismatch" {
				t.Errorf("%s over MCP: %v %+v, want 403 profile_mismatch", tc.Name, err, resp)
			}
			continue
		}
		params := map[string]any{"name": tc.Tool}
		if args != "" {
			params["arguments"] = json.RawMessage(args)
		}
		resp, err := c.Call(context.Background(), "tools/call", params)
		if err != nil {
			t.Fatalf("%s: %v", tc.Name, err)
		}
		sent++
		if ve == nil {
			// Valid without AP2 (a malformed mandate): past validation,
			// the call reaches the service and is no -32602.
			if resp.Error != nil && resp.Error.Code == -32602 {
				t.Errorf("%s over MCP: %s, but the full schemas accept it", tc.Name, resp.Body)
			}
			accepted++
			continue
		}
		var got struct {
			Code       string   `json:"code"`
			Content    string   `json:"content"`
			Paths      []string `json:"paths"`
			Violations []struct {
				Path, Message string
			} `json:"violations"`
		}
		if resp.Error == nil || resp.Error.Code != -32602 || json.Unmarshal(resp.Error.Data, &got) != nil {
			t.Errorf("%s over MCP: HTTP %d %s, want -32602", tc.Name, resp.Status, resp.Body)
			continue
		}
		if got.Code != "invalid_params" || got.Content != ve.Error() || !slices.Equal(got.Paths, wantPaths) || len(got.Violations) != len(ve.Violations) {
			t.Errorf("%s over MCP: %s\nthe full schemas: %s at %v", tc.Name, resp.Error.Data, ve.Error(), wantPaths)
			continue
		}
		for i, v := range got.Violations {
			if v.Path != ve.Violations[i].Path || v.Message != ve.Violations[i].Message {
				t.Errorf("%s over MCP: violation %d is %+v, the full schemas' %+v", tc.Name, i, v, ve.Violations[i])
			}
		}
	}
	t.Logf("%d cases: %d sent over MCP, %d of them valid for the edge's schemas (checkout tools without AP2)", len(cases), sent, accepted)
	if sent < len(cases)-2 || accepted > 3 {
		t.Errorf("%d of %d cases sent over MCP, %d valid", sent, len(cases), accepted)
	}
}

// namedProfile is meta["ucp-agent"].profile of JSON arguments ("" if none).
func namedProfile(args string) string {
	var a struct {
		Meta struct {
			Agent struct {
				Profile string `json:"profile"`
			} `json:"ucp-agent"`
		} `json:"meta"`
	}
	_ = json.Unmarshal([]byte(args), &a)
	return a.Meta.Agent.Profile
}
