package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// An agent that signs its requests (RFC 9421, ES256, key published in its
// profile) drives a checkout through the go-sdk client at a merchant that
// requires signatures; the same agent without its signature is refused
// before anything runs.
func TestSignedAgentOverMCP(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	m := setupMerchant(t, r, "Loja Assinada", "assinada.localhost", 0)
	ctx := context.Background()
	if _, err := r.ClientsWithToken(operatorToken).Tenants.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{
		Tenant: m.host, Policy: tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE,
	})); err != nil {
		t.Fatal(err)
	}
	key, err := agentclient.GenerateES256()
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := agentclient.PublicJWK(key, "")
	if err != nil {
		t.Fatal(err)
	}
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		doc := agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment")
		// Publish the agent's key under signing_keys.
		doc = strings.TrimSpace(doc)
		doc = doc[:len(doc)-1] + `,"signing_keys":[` + string(jwk) + `]}`
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(profiles.Close)
	profile := profiles.URL + "/agent.json"
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	connectAs := func(tr *agentclient.Transport) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "signed-agent", Version: "1.0"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + r.PublicAddr + "/bcp/mcp", HTTPClient: &http.Client{Transport: tr}}, nil)
	}
	s, err := connectAs(&agentclient.Transport{ProfileURL: profile, Key: key, Host: m.host})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := &agent{t: t, s: s, profile: profile, v: v}
	_, c := a.call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}})
	if c.Status != bcp.StatusIncomplete || totals(c)["total"] != 5990 {
		t.Fatalf("signed create: %s %v", c.Status, totals(c))
	}

	// Unsigned, at a merchant that requires signatures: refused.
	unsigned, err := connectAs(&agentclient.Transport{ProfileURL: profile, Host: m.host})
	if err != nil {
		t.Fatal(err)
	}
	defer unsigned.Close()
	_, err = unsigned.CallTool(ctx, &mcp.CallToolParams{Name: "get_checkout", Arguments: map[string]any{
		"meta": map[string]any{"ucp-agent": map[string]any{"profile": profile}}, "id": c.ID,
	}})
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("unsigned call at a signature-only merchant: %v", err)
	}
	// The raw client sees the exact error body.
	raw := &agentclient.Client{Endpoint: "http://" + r.PublicAddr + "/bcp/mcp", Transport: &agentclient.Transport{ProfileURL: profile, Host: m.host}}
	resp, err := raw.CallTool(ctx, "get_checkout", map[string]any{"meta": map[string]any{"ucp-agent": map[string]any{"profile": profile}}, "id": c.ID})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct {
			Code int64
			Data struct{ Code string }
		}
	}
	_ = json.Unmarshal(resp.Body, &body)
	if resp.Status != http.StatusUnauthorized || body.Error.Code != -32000 || body.Error.Data.Code != "signature_missing" {
		t.Fatalf("unsigned: HTTP %d, %s", resp.Status, resp.Body)
	}
}
