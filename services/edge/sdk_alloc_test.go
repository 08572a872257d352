package edge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolCallBody is a create_checkout call as agents send it.
const toolCallBody = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{` +
	`"meta":{"ucp-agent":{"profile":"https://agent.example/profile.json"}},` +
	`"checkout":{"line_items":[{"item":{"id":"var_cam"},"quantity":2}],"buyer":{"email":"ana@example.com"}}}}}`

// serveToolCall sends one tools/call through the SDK's stateless
// streamable-HTTP handler, configured as the edge configures it.
func serveToolCall(t testing.TB, h http.Handler) {
	req := httptest.NewRequest(http.MethodPost, "/bcp/mcp", strings.NewReader(toolCallBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"structuredContent":{"ok":true}`) {
		t.Fatalf("tools/call: %d %s", rec.Code, rec.Body.String())
	}
}

func sdkHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "alloc-test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolResult([]byte(`{"ok":true}`)), nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true, MaxRequestBodyBytes: maxMCPBody})
}

// The SDK's JSON decoding is patched (third_party/go-sdk/PATCHES.md):
// unpatched, every decode allocated a 32 KB buffer, ≈ 290 KB per tool
// call. This fails if the replace directive or the patch is lost.
func TestToolCallAllocations(t *testing.T) {
	h := sdkHandler()
	serveToolCall(t, h) // first call: schema resolution, caches
	r := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serveToolCall(b, h)
		}
	})
	const limit = 96 << 10
	if got := r.AllocedBytesPerOp(); got > limit {
		t.Fatalf("one tools/call through the SDK allocates %d bytes, want ≤ %d (is third_party/go-sdk's patch in use?)", got, limit)
	}
	t.Logf("one tools/call through the SDK: %d bytes in %d allocations", r.AllocedBytesPerOp(), r.AllocsPerOp())
}

// BenchmarkToolCall is the SDK's share of every tool call (decode, dispatch,
// encode), with a trivial tool.
func BenchmarkToolCall(b *testing.B) {
	h := sdkHandler()
	b.ReportAllocs()
	for b.Loop() {
		serveToolCall(b, h)
	}
}
