package edge

import (
	"encoding/json"
	"os"
	"testing"
)

// completeCheckoutBody is the binding's complete_checkout example: a
// JSON-RPC tools/call as an agent sends it.
func completeCheckoutBody(b *testing.B) []byte {
	body, err := os.ReadFile("../../protocol/bcpschema/testdata/binding_complete_checkout.request.json")
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkCheckMessage is the transport's check of every MCP request body
// (transport.go).
func BenchmarkCheckMessage(b *testing.B) {
	body := completeCheckoutBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, te := checkMessage(body); te != nil {
			b.Fatal(te.content)
		}
	}
}

// BenchmarkToolArgsDecode is one decode of a tool call's arguments into
// toolArgs: what the executor no longer repeats when the MCP binding has
// decoded them for the Idempotency-Key header check.
func BenchmarkToolArgsDecode(b *testing.B) {
	var req struct {
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(completeCheckoutBody(b), &req); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(req.Params.Arguments)))
	b.ReportAllocs()
	for b.Loop() {
		var args toolArgs
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.ID == "" {
			b.Fatal(err)
		}
	}
}
