package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// BenchmarkMCPToolCall is one agent tool call over MCP (streamable HTTP,
// stateless, API key) through the whole process: the public listener, the
// platform's middlewares, the edge, the MCP SDK and the services on real
// PostgreSQL. The agent side is a plain http.Client with a prepared body,
// so what it allocates is small and the same for every build. Read its
// allocs/op and B/op (machine-independent); its time on a shared machine
// is noise:
//
//	go test ./e2e -run '^$' -bench MCPToolCall -benchmem -benchtime 300x
func BenchmarkMCPToolCall(b *testing.B) {
	d := testdb.New(b)
	r := startPlatform(b, platform.AllServices, d.AppURL, nil)
	m := setupMerchant(b, r, "Loja Bench", "bench.localhost", 0)
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment", "br.dev.bcp.shopping.discount", "br.dev.bcp.shopping.buyer_consent")))
	}))
	b.Cleanup(profiles.Close)
	// Limits far above what the benchmark sends: the limiter still runs
	// (local allowance, leases), it never refuses.
	setLimits(b, r, m.host, &tenantsv1.RateLimits{MerchantRatePerSecond: 1e5, MerchantBurst: 1e5, AgentRatePerSecond: 1e5, AgentBurst: 1e5})
	profile := profiles.URL + "/agent.json"
	key, err := r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: m.host, AgentProfileUrl: profile, Label: "bench",
	}))
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{}
	call := func(b testing.TB, tool, args string) []byte {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"meta":{"ucp-agent":{"profile":"` + profile + `"}},` + args + `}}}`
		req, err := http.NewRequest(http.MethodPost, "http://"+r.PublicAddr+"/bcp/mcp", bytes.NewReader([]byte(body)))
		if err != nil {
			b.Fatal(err)
		}
		req.Host = m.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-API-Key", key.Msg.GetSecret())
		req.Header.Set("BCP-Agent", `profile="`+profile+`"`)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"structuredContent"`)) || bytes.Contains(out, []byte(`"isError"`)) {
			b.Fatalf("%s: %d %s %v", tool, resp.StatusCode, out, err)
		}
		return out
	}
	const create = `"checkout":{"line_items":[{"item":{"id":"var_cam"},"quantity":1}],"buyer":{"email":"ana@example.com"}}`
	var res struct {
		Result struct {
			StructuredContent struct {
				ID string `json:"id"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(call(b, "create_checkout", create), &res); err != nil || res.Result.StructuredContent.ID == "" {
		b.Fatalf("create_checkout: %v %+v", err, res)
	}
	id := res.Result.StructuredContent.ID
	for _, c := range []struct{ tool, args string }{
		{"get_checkout", `"id":"` + id + `"`},
		{"create_checkout", create},
		{"update_checkout", `"id":"` + id + `","checkout":{"line_items":[{"item":{"id":"var_cam"},"quantity":1}],"buyer":{"email":"ana@example.com"}}`},
	} {
		b.Run(c.tool, func(b *testing.B) {
			for range 3 { // warm: schemas, negotiation, connections
				call(b, c.tool, c.args)
			}
			b.ReportAllocs()
			for b.Loop() {
				call(b, c.tool, c.args)
			}
		})
	}
}
