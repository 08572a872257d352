package agentauth

import (
	"errors"
	"strconv"
	"testing"
)

// The agent profile in meta is checked by the same input guard as every
// other argument, before it is compared with an API key's binding: a NUL,
// invalid UTF-8 or an unpaired surrogate is invalid params at
// ProfilePath (decoded, the last two would be U+FFFD and answered as a
// profile mismatch).
func TestProfileTextIsGuarded(t *testing.T) {
	for _, profile := range []string{`"https://a.example/p\u0000.json"`, "\"https://a.example/p\xff.json\"", `"https://a.example/p\ud800.json"`} {
		_, err := parseRPC([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_cart","arguments":{"meta":{"ucp-agent":{"profile":` + profile + `}}}}}`))
		if !errors.Is(err, errNULProfile) {
			t.Errorf("profile %q: %v, want errNULProfile", profile, err)
		}
	}
	rpc, err := parseRPC([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_cart","arguments":{"meta":{"ucp-agent":{"profile":" https://a.example/p\u00e9.json "}}}}}`))
	if err != nil || len(rpc.messages) != 1 || rpc.messages[0].profile != "https://a.example/pé.json" {
		t.Fatalf("a valid profile: %+v %v", rpc, err)
	}
}

// parseAgentHeader keeps the profiles of the fields it accepted: a kept
// answer is the parser's, refusals are never kept, and the number kept is
// bounded.
func TestAgentHeaderKept(t *testing.T) {
	for _, v := range []string{`profile="https://a.example/p.json"`, `profile=" https://a.example/p.json "`, `x=1, profile="https://b.example/p"`,
		`profile=https`, `profile=""`, `profile="a", profile="b"`, `nope`, `profile="\"q\""`} {
		want, werr := parseAgentDictionary([]string{v})
		for range 2 {
			got, err := parseAgentHeader([]string{v})
			if got != want || (err == nil) != (werr == nil) {
				t.Fatalf("%q: %q, %v; parser %q, %v", v, got, err, want, werr)
			}
		}
		agentHeaders.RLock()
		_, kept := agentHeaders.m[v]
		agentHeaders.RUnlock()
		if kept != (werr == nil) {
			t.Fatalf("%q kept: %v, parser error %v", v, kept, werr)
		}
	}
	for i := range maxAgentHeaders + 10 {
		if _, err := parseAgentHeader([]string{`profile="https://a.example/` + strconv.Itoa(i) + `"`}); err != nil {
			t.Fatal(err)
		}
	}
	agentHeaders.RLock()
	n := len(agentHeaders.m)
	agentHeaders.RUnlock()
	if n > maxAgentHeaders {
		t.Fatalf("%d fields kept, want at most %d", n, maxAgentHeaders)
	}
}
