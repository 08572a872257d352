package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/wirecount"
)

// toolCallBody is a create_checkout call as agents send it.
const toolCallBody = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{` +
	`"meta":{"ucp-agent":{"profile":"https://agent.example/profile.json"}},` +
	`"checkout":{"line_items":[{"item":{"id":"var_cam"},"quantity":2}],"buyer":{"email":"ana@example.com"}}}}}`

// serveToolCall sends one tools/call through the SDK's stateless
// streamable-HTTP handler, configured as the edge configures it, and
// returns the answer's body.
func serveToolCall(t testing.TB, h http.Handler) []byte {
	req := httptest.NewRequest(http.MethodPost, "/bcp/mcp", strings.NewReader(toolCallBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"ok":true`) {
		t.Fatalf("tools/call: %d %s", rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes()
}

func sdkHandler() http.Handler { return sdkHandlerWith([]byte(`{"ok":true}`)) }

// sdkHandlerWith serves a tool that answers with result.
func sdkHandlerWith(result []byte) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "alloc-test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolResult(result), nil
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
// encode), with a trivial tool ("ok") and with one answering a checkout of
// realistic size ("checkout", about 4 KB, twice in the answer: as
// structured content and as its text).
func BenchmarkToolCall(b *testing.B) {
	for _, c := range []struct {
		name   string
		result []byte
	}{{"ok", []byte(`{"ok":true}`)}, {"checkout", checkoutMarshalled()}} {
		b.Run(c.name, func(b *testing.B) {
			h := sdkHandlerWith(c.result)
			b.ReportAllocs()
			for b.Loop() {
				serveToolCall(b, h)
			}
		})
	}
}

// checkoutSized is a checkout-shaped JSON object of about 4 KB whose last
// member is "ok":true (what serveToolCall looks for).
func checkoutSized() []byte {
	var sb strings.Builder
	sb.WriteString(`{"id":"chk_01m8njgc3sfv3a8vk9a3tqa12a","status":"ready_for_complete","currency":"BRL","line_items":[`)
	for i := range 8 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"li_%d","item":{"id":"var_camiseta_%d","title":"Camiseta Básica Algodão <P> & Cia","price":5990,"image_url":"https://loja.example.com.br/img/camiseta-%d.jpg"},`+
			`"quantity":2,"totals":[{"type":"subtotal","amount":11980},{"type":"discount","amount":-1198},{"type":"total","amount":10782}]}`, i, i, i)
	}
	sb.WriteString(`],"totals":[{"type":"subtotal","amount":95840},{"type":"fulfillment","amount":2590},{"type":"total","amount":98430}],`)
	sb.WriteString(`"messages":[{"type":"info","code":"frete","content":"Entrega em até 3 dias úteis \"Sedex\"\u0001 ` + "\u2028\u2029" + ` <b>&amp;</b> \\ \/ 🛒"}],"ok":true}`)
	return []byte(sb.String())
}

// checkoutMarshalled is checkoutSized as the platform's answers come:
// written by json.Marshal (keys sorted, HTML characters escaped).
func checkoutMarshalled() []byte {
	var v any
	if err := json.Unmarshal(checkoutSized(), &v); err != nil {
		panic(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// The SDK's response encoding is patched (third_party/go-sdk/PATCHES.md,
// patches 2 and 4): a tool's result is no longer checked and compacted
// again at each level, and the usual result (one text content, raw
// structured content) is written directly. The bytes on the wire must stay
// exactly what encoding/json makes of the same response, for results the
// direct path writes and for those it leaves to the general one.
func TestToolCallResponseBytes(t *testing.T) {
	for _, c := range []struct {
		name   string
		result []byte
	}{
		{"as json.Marshal writes it", checkoutMarshalled()},
		{"raw HTML characters and U+2028", checkoutSized()},
		{"spaces between tokens", []byte(`{"id": "chk_1", "totals": [ {"type":"total","amount":100} ], "ok":true}`)},
		{"strings with spaces and escapes", []byte(`{"note":"a \"quoted\" b\\","x":"tab\tnew\nline","ok":true}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := serveToolCall(t, sdkHandlerWith(c.result))
			// The reference: encoding/json on a plain struct of the same shape,
			// without the SDK's types.
			type text struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			inner, err := json.Marshal(struct {
				Content           []text          `json:"content"`
				StructuredContent json.RawMessage `json:"structuredContent"`
			}{[]text{{"text", string(c.result)}}, c.result})
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(struct {
				V  string          `json:"jsonrpc"`
				ID int             `json:"id"`
				R  json.RawMessage `json:"result"`
			}{"2.0", 7, inner})
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.TrimSpace(body); !bytes.Equal(got, want) {
				t.Fatalf("tools/call answer differs from encoding/json's:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// Patch 4 writes the usual result without encoding/json's reflection and
// compaction, patch 6 its text in place (one allocation: the answer);
// this fails if the general path is taken for it.
func TestToolResultDirectEncoding(t *testing.T) {
	res := toolResult(checkoutMarshalled())
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := res.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("CallToolResult.MarshalJSON: %.0f allocations, want 1 (are third_party/go-sdk's patches 4 and 6 in use?)", allocs)
	}
	isErr := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no"}}, StructuredContent: json.RawMessage(`{"a":1}`), IsError: true}
	got, err := isErr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":[{"type":"text","text":"no"}],"structuredContent":{"a":1},"isError":true}`; string(got) != want {
		t.Fatalf("error result: %s, want %s", got, want)
	}
}

// Patch 6 escapes the text content itself, as json.Marshal escapes a
// string: every ASCII byte, HTML characters, U+2028/U+2029, invalid UTF-8
// and multi-byte text must come out as encoding/json writes them.
func TestToolResultTextEscaping(t *testing.T) {
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	for _, text := range []string{
		"", "plain", all.String(), "\u2028 \u2029 \u2027 \u202a", "ação <b>&amp;</b> \"q\" \\ /", "🛒 bad \xff\xfe utf8 \xe2\x80 end\xe2",
		string(checkoutMarshalled()), string(checkoutSized()),
	} {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(`{"a":1}`)}
		got, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}{Content: []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{{"text", text}}, StructuredContent: json.RawMessage(`{"a":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("text %.40q:\n got %s\nwant %s", text, got, want)
		}
	}
}

// The SDK runs every tool call on a new goroutine, and a tool call here
// reaches a stack of about 128 KB (JSON Schema validation, connect calls
// served in process, pgx); stepwise growth from the small starting stack
// cost ≈ 6 % of the platform's CPU. third_party/go-sdk's patch 3 grows the
// goroutine's stack to 128 KB in one step when it starts. This holds
// calls inside the tool and checks the stack memory their goroutines
// hold; it fails without the patch.
func TestToolCallGoroutineStartsWithLargeStack(t *testing.T) {
	const calls = 16
	entered := make(chan struct{}, calls)
	release := make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "stack-test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			<-release
			return toolResult([]byte(`{"ok":true}`)), nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true, MaxRequestBodyBytes: maxMCPBody})

	runtime.GC()
	before := stackBytes()
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() { serveToolCall(t, h) })
	}
	for range calls {
		<-entered
	}
	held := stackBytes() - before
	close(release)
	wg.Wait()

	// Each call also holds the test's goroutine that sent it (a few KB).
	const want = calls * 120 << 10
	if held < want {
		t.Fatalf("%d tool calls in progress hold %d bytes of goroutine stack, want ≥ %d (is third_party/go-sdk's patch 3 in use?)", calls, held, want)
	}
	t.Logf("%d tool calls in progress hold %d KB of goroutine stack", calls, held>>10)
}

func stackBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Patch 5 skips the SDK's batch decode for bodies that cannot be a batch;
// what each kind of body gets must not change: single messages (with
// leading whitespace too) are served, and arrays, null and empty bodies
// are refused as before.
func TestSDKBodyKinds(t *testing.T) {
	h := sdkHandler()
	for _, c := range []struct {
		body   string
		status int
		answer string
	}{
		{" \n\t" + toolCallBody, http.StatusOK, `"structuredContent":{"ok":true}`},
		{"[" + toolCallBody + "]", http.StatusBadRequest, "JSON-RPC batching is not supported"},
		{"null", http.StatusBadRequest, "malformed payload: empty batch"},
		{" []", http.StatusBadRequest, "malformed payload: empty batch"},
		{`"text"`, http.StatusBadRequest, "malformed payload"},
		{"", http.StatusBadRequest, "POST requires a non-empty body"},
	} {
		req := httptest.NewRequest(http.MethodPost, "/bcp/mcp", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.answer) {
			t.Errorf("body %.30q: %d %q, want %d containing %q", c.body, rec.Code, rec.Body.String(), c.status, c.answer)
		}
	}
}

// TestToolCallGoroutines pins the goroutines the SDK starts for a stateless
// tools/call: the connection's reader and the one that takes the request off
// the queue and runs the handler. third_party/go-sdk's patch 8 runs the
// handler on the latter (it used to start a third goroutine and wait for it).
func TestToolCallGoroutines(t *testing.T) {
	h := sdkHandler()
	serveToolCall(t, h)
	const calls = 50
	created := wirecount.GoroutinesCreated
	before := created()
	for range calls {
		serveToolCall(t, h)
	}
	// Rounded: the runtime may start one of its own now and then.
	got := float64(created()-before) / calls
	if math.Round(got) != 2 {
		t.Fatalf("a stateless tools/call starts %.2f goroutines, want 2 (is third_party/go-sdk's patch 8 in use?)", got)
	}
}
