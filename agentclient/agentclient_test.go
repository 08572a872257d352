package agentclient_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/httpsig"
)

const profile = "https://agent.example/.well-known/bcp"

// The Transport's signature verifies with the published JWK under the BCP
// closed set, and the caller's request is left as it was.
func TestTransportSignsWhatIsSent(t *testing.T) {
	key, err := agentclient.GenerateES256()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := agentclient.PublicJWK(key, "")
	j, _ := httpsig.ParseJWK(pub)
	ks, _ := httpsig.NewKeySet([]httpsig.JWK{j})
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen = r.Header.Clone()
		v := &httpsig.Verifier{Keys: ks.Resolve, Requirements: httpsig.RequestRequirements("bcp-agent"), RejectAlgParameter: true}
		if _, err := v.VerifyRequest(r.Context(), r, body); err != nil || r.Host != "loja.example" {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x","data":{"code":"idempotency_conflict","content":"x"}}}`)
	}))
	defer srv.Close()

	idem := agentclient.NewIdempotencyKey()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(idem) {
		t.Fatalf("idempotency key %q is not a v4 UUID", idem)
	}
	tr := &agentclient.Transport{ProfileURL: profile, Key: key, Host: "loja.example"}
	c := &agentclient.Client{Endpoint: srv.URL + "/bcp/mcp", Transport: tr}
	resp, err := c.CallTool(context.Background(), "complete_checkout", map[string]any{"id": "chk_1", "meta": map[string]any{"idempotency-key": idem}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || resp.Error == nil || resp.Error.DataCode() != "idempotency_conflict" || string(resp.ID) != "1" {
		t.Fatalf("HTTP %d %s (%v)", resp.Status, resp.Body, resp.Error)
	}
	if seen.Get("Idempotency-Key") != idem || seen.Get("BCP-Agent") != `profile="`+profile+`"` ||
		seen.Get("Accept") != "application/json, text/event-stream" || seen.Get("Content-Type") != "application/json" {
		t.Fatalf("headers sent: %v", seen)
	}
	if si := seen.Get("Signature-Input"); !strings.Contains(si, `"idempotency-key"`) || !strings.Contains(si, `keyid="`+j.Kid+`"`) {
		t.Fatalf("Signature-Input %s", si)
	}

	// The original request is not modified, and a retry re-signs cleanly.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/bcp/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	host := req.Host
	for range 2 {
		if r, err := tr.RoundTrip(req); err != nil || r.StatusCode != 200 {
			t.Fatalf("round trip: %v %v", err, r)
		}
		req.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	}
	if len(req.Header) != 0 || req.Host != host {
		t.Fatalf("caller's request modified: %v %q", req.Header, req.Host)
	}
}

func TestKeysPEMRoundTrip(t *testing.T) {
	ec, _ := agentclient.GenerateES256()
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for name, key := range map[string]crypto.Signer{"ec": ec, "ed25519": ed} {
		pemBytes, err := agentclient.MarshalPrivateKeyPEM(key)
		if err != nil {
			t.Fatal(name, err)
		}
		back, err := agentclient.ParsePrivateKeyPEM(pemBytes)
		if err != nil || !key.(interface{ Equal(crypto.PrivateKey) bool }).Equal(back) {
			t.Fatalf("%s: round trip %v", name, err)
		}
		jwk, _ := agentclient.PublicJWK(back, "")
		var m map[string]any
		_ = json.Unmarshal(jwk, &m)
		if m["d"] != nil || m["kid"] == "" {
			t.Fatalf("%s JWK %s", name, jwk)
		}
	}
	if _, err := agentclient.ParsePrivateKeyPEM([]byte("nope")); err == nil {
		t.Fatal("garbage parsed as a key")
	}
}

// A response is read whole with or without Content-Length, and its id,
// result and error are decoded only from a body that is one JSON value.
func TestResponseDecoding(t *testing.T) {
	bodies := map[string]string{
		"/result":   `{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"id":"chk_1"}}}`,
		"/error":    `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"bad","data":{"code":"invalid_params"}}}`,
		"/trailing": `{"jsonrpc":"2.0","id":7,"result":{}} {"x":1}`,
		"/big":      `{"jsonrpc":"2.0","id":8,"result":{"text":"` + strings.Repeat("x", 100_000) + `"}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := bodies[strings.TrimSuffix(r.URL.Path, "/chunked")]
		if strings.HasSuffix(r.URL.Path, "/chunked") {
			w.(http.Flusher).Flush() // no Content-Length
		}
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	for _, chunked := range []bool{false, true} {
		call := func(path string) *agentclient.Response {
			t.Helper()
			if chunked {
				path += "/chunked"
			}
			c := &agentclient.Client{Endpoint: srv.URL + path}
			resp, err := c.Call(context.Background(), "tools/call", nil)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		if r := call("/result"); string(r.ID) != "7" || string(r.Result) != `{"structuredContent":{"id":"chk_1"}}` || r.Error != nil {
			t.Errorf("chunked=%v result: id %s result %s error %v", chunked, r.ID, r.Result, r.Error)
		}
		if r := call("/error"); string(r.ID) != `"a"` || r.Result != nil || r.Error == nil || r.Error.Code != -32602 || r.Error.DataCode() != "invalid_params" {
			t.Errorf("chunked=%v error: id %s result %s error %+v", chunked, r.ID, r.Result, r.Error)
		}
		if r := call("/trailing"); r.ID != nil || r.Result != nil || len(r.Body) != len(bodies["/trailing"]) {
			t.Errorf("chunked=%v trailing value: id %s result %s, body %d bytes", chunked, r.ID, r.Result, len(r.Body))
		}
		if r := call("/big"); len(r.Body) != len(bodies["/big"]) || len(r.Result) != len(bodies["/big"])-len(`{"jsonrpc":"2.0","id":8,"result":}`) {
			t.Errorf("chunked=%v big: body %d, result %d bytes", chunked, len(r.Body), len(r.Result))
		}
	}
}

// The key is read from a tools/call body without building more than the
// members on the way: decoding meta into a map must not cost a 64-slot map
// per call (patch 2 of third_party/segmentio-encoding).
func TestIdempotencyKeyOfAllocations(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"complete_checkout","arguments":{"id":"chk_1",` +
		`"meta":{"ucp-agent":{"profile":"https://agent.example/profile.json"},"idempotency-key":" k-123 "},` +
		`"checkout":{"payment":{"instruments":[{"id":"pi_1","handler_id":"card","type":"card"}]}}}}}`)
	if got := agentclient.IdempotencyKeyOf(body); got != "k-123" {
		t.Fatalf("key %q, want k-123", got)
	}
	for _, b := range [][]byte{[]byte(`{"method":"tools/list"}`), []byte(`[]`), []byte(`{"method":"tools/call","params":{"arguments":{"meta":{"idempotency-key":5}}}}`)} {
		if got := agentclient.IdempotencyKeyOf(b); got != "" {
			t.Errorf("IdempotencyKeyOf(%s) = %q, want none", b, got)
		}
	}
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			agentclient.IdempotencyKeyOf(body)
		}
	})
	t.Logf("%d bytes, %d allocations per call", res.AllocedBytesPerOp(), res.AllocsPerOp())
	if bytes := res.AllocedBytesPerOp(); bytes > 1024 {
		t.Errorf("IdempotencyKeyOf allocates %d bytes per call, want at most 1024", bytes)
	}
}
