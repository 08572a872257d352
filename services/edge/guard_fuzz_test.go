package edge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// FuzzToolArguments feeds arbitrary arguments to every operation's tool
// (the operation table, so a new tool is fuzzed without a line here), as
// the edge checks them: the input guard, then the tool's schema. Nothing
// may panic; every refusal is a *bcpschema.ValidationError at JSONPaths;
// and nothing accepted holds a NUL or bytes that are not UTF-8.
func FuzzToolArguments(f *testing.F) {
	tools := Tools()
	for i, op := range operations {
		args := map[string]any{"meta": map[string]any{"ucp-agent": map[string]any{"profile": "https://agent.example/p.json"}, "idempotency-key": "6f1c4f5e-0a51-4a6f-9a55-0a7f3b0e9c11"}}
		if op.tool().TakesID() {
			args["id"] = "res_01"
		}
		if m := op.tool().Payload(); m != "" {
			args[m] = samplePayloads[op.schema]
		}
		b, err := json.Marshal(args)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
		f.Add(uint8(i), []byte(strings.Replace(string(b), "res_01", `res_\u0000`, 1)))
		f.Add(uint8(i), []byte(strings.Replace(string(b), "profile.json", "p\xff.json", 1)))
	}
	f.Add(uint8(0), []byte(`{"meta":{"\ud800":"\udc00\ud800"}}`))
	f.Add(uint8(1), []byte(strings.Repeat("[", 40)+strings.Repeat("]", 40)))
	v, err := NewToolValidator()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tool := tools[int(which)%len(tools)].Name
		guard := bcpschema.CheckInput(args)
		err := v.ValidateToolInput(tool, args)
		if guard != nil && err == nil {
			t.Fatalf("%s: the guard refused %q (%v) and the validator accepted it", tool, args, guard)
		}
		if err == nil {
			var inst any
			if json.Unmarshal(args, &inst) != nil && len(args) > 0 {
				t.Fatalf("%s accepted invalid JSON %q", tool, args)
			}
			if !utf8.Valid(args) {
				t.Fatalf("%s accepted bytes that are not UTF-8: %q", tool, args)
			}
			if holdsNUL(inst) {
				t.Fatalf("%s accepted a NUL: %q", tool, args)
			}
			return
		}
		var ve *bcpschema.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: refusal is %T, not *bcpschema.ValidationError: %v", tool, err, err)
		}
		for _, viol := range ve.Violations {
			if !strings.HasPrefix(viol.Path, "$") {
				t.Fatalf("%s: violation path %q is not a JSONPath", tool, viol.Path)
			}
		}
	})
}

// holdsNUL reports whether a decoded document has a NUL in a string or a
// member name.
func holdsNUL(v any) bool {
	switch c := v.(type) {
	case string:
		return strings.ContainsRune(c, 0)
	case []any:
		for _, e := range c {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range c {
			if strings.ContainsRune(k, 0) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// FuzzMCPMessage feeds arbitrary bodies to the MCP transport check: it
// never panics, refuses what is not JSON with -32700, and lets through
// only single JSON-RPC objects.
func FuzzMCPMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_cart","arguments":{}}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":{"x":1},"result":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"x/y"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		id, te := checkMessage(body)
		if te != nil {
			if (te.rpcCode == codeParseError) == json.Valid(body) {
				t.Fatalf("%q: code %d, valid JSON %v", body, te.rpcCode, json.Valid(body))
			}
			if te.status < 400 || te.content == "" {
				t.Fatalf("%q: refusal %+v", body, te)
			}
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			t.Fatalf("%q let through, not a JSON object: %v", body, err)
		}
		if id != nil && !json.Valid(id) {
			t.Fatalf("%q: id %q", body, id)
		}
	})
}
