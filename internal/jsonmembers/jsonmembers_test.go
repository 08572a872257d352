package jsonmembers

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"testing"
)

// tokenMembers is the walk Of replaced (agentauth's) (json.Decoder's Token API),
// kept as the reference: authentication and the MCP SDK must read the
// same message, so Of must refuse exactly what it refused, in the
// same order.
func tokenMembers(raw json.RawMessage) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("bad member name")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, seen := out[key]; seen {
			return nil, ErrDuplicate
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrDuplicate):
		return "duplicate"
	default:
		return "error"
	}
}

func checkMembers(t *testing.T, in []byte) {
	t.Helper()
	want, werr := tokenMembers(in)
	got, gerr := Of(in)
	if outcome(gerr) != outcome(werr) {
		t.Fatalf("Of(%q): %v, token decoder: %v", in, gerr, werr)
	}
	if werr == nil && !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("Of(%q) = %q, token decoder %q", in, got, want)
	}
	// Pick agrees with Of on the members it is asked for, present or not.
	names := []string{"a", "id", "method", "params", "", "b", "\ufffd", "missing"}
	for _, checked := range []bool{false, json.Valid(in)} {
		vals := make([]json.RawMessage, len(names))
		perr := Pick(in, checked, names, vals)
		if outcome(perr) != outcome(werr) {
			t.Fatalf("Pick(%q, %v): %v, token decoder: %v", in, checked, perr, werr)
		}
		for k, n := range names {
			if w, ok := want[n]; werr == nil && ok != (vals[k] != nil) || !bytes.Equal(vals[k], w) {
				t.Fatalf("Pick(%q, %v)[%q] = %q, token decoder %q", in, checked, n, vals[k], w)
			}
		}
	}
	// OfChecked is only for valid JSON, where it must agree too.
	if json.Valid(in) {
		got, gerr := OfChecked(in)
		if outcome(gerr) != outcome(werr) || werr == nil && !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("OfChecked(%q) = %q, %v; token decoder %q, %v", in, got, gerr, want, werr)
		}
	}
}

var memberSeeds = []string{
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_checkout","arguments":{"meta":{"ucp-agent":{"profile":"https://agent.example/profile.json"},"idempotency-key":"k1"},"checkout":{"line_items":[{"item":{"id":"var_cam"},"quantity":2}],"buyer":{"email":"ana@example.com"}}}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"meta":{"ucp-agent":{"profile":"p"}},"a":[1,{"b":"}"}]}}}`,
	`{}`, ` { } `, `{"a":1,"a":2}`, `{"a":1,"a":}`, `{"a":,"a":1}`, `{"a":1 "b":2}`, `{"a":1,}`, `{,}`,
	`{"a":{"x":1,"x":2},"a":3}`, `{"\u0069d":1,"id":2}`, `{"a\\":1,"a\\":2}`, `{"\ud800":1,"\ufffd":2}`,
	"{\"\xff\":1,\"\xef\xbf\xbd\":2}", `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`,
	`{"a":1e5,"b":-0.5E-3,"c":true,"d":false,"e":null}`, `{"a":tru}`, `{"a":nulll}`, `{"a":[1,2}`,
	`{"a":[1,2]]}`, `{"a":{"b":[}]}`, `{"a":"x"} trailing`, `{"a":"x"}}`, `[1]`, `"s"`, ``, `   `, `{`,
	`{"a"`, `{"a":`, `{"a":1`, `{"a" 1}`, `{1:2}`, "{\"a\":\"\x01\"}", `{"a":"]}{[\""}`,
	"{\"a\":1,\n\t\"b\" :\r [ ] }", `{"":1,"":2}`, `{"a":1,"b":{"a":1,"a":2}}`,
	// More members than nameSet compares one by one; a repeat beyond them.
	`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":10,"m11":11,"m12":12,"m13":13,"m14":14,"m15":15,"m16":16,"m17":17,"a":1}`,
	`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":10,"m11":11,"m12":12,"m13":13,"m14":14,"m15":15,"m16":16,"m3":17}`,
	`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":10,"m11":11,"m12":12,"m13":13,"m14":14,"m15":15,"m17":16,"m17":17}`,
}

func TestMembersAgreesWithTokenDecoder(t *testing.T) {
	for _, s := range memberSeeds {
		checkMembers(t, []byte(s))
	}
}

// FuzzMembers checks Of against the token decoder on any input.
func FuzzMembers(f *testing.F) {
	for _, s := range memberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkMembers)
}

// BenchmarkPeek reads what agentauth reads from a create_checkout call:
// the message, its params, arguments, meta and meta["ucp-agent"]; with
// Of/OfChecked ("onepass") and with the token decoder it replaced.
func BenchmarkPeek(b *testing.B) {
	body := []byte(memberSeeds[0])
	for _, c := range []struct {
		name          string
		first, nested func(json.RawMessage) (map[string]json.RawMessage, error)
	}{{"onepass", Of, OfChecked}, {"token", tokenMembers, tokenMembers}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, err := c.first(body)
				if err != nil {
					b.Fatal(err)
				}
				p, _ := c.nested(m["params"])
				a, _ := c.nested(p["arguments"])
				meta, _ := c.nested(a["meta"])
				if ua, err := c.nested(meta["ucp-agent"]); err != nil || len(ua["profile"]) == 0 {
					b.Fatal("no profile")
				}
			}
		})
	}
}
