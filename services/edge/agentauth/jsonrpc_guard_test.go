package agentauth

import (
	"errors"
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
