package edge

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// samplePayloads are a payload per schema root with every kind of string
// its tools take (the guard looks at strings, not at the schema).
var samplePayloads = map[bcpschema.Root]map[string]any{
	bcpschema.RootCheckout: {
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":      map[string]any{"email": "ana@example.com", "first_name": "Ana", "phone_number": "+5511999990000"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{map[string]any{
			"street_address": "Av. Paulista, 1000", "address_locality": "São Paulo", "postal_code": "01310-100", "address_country": "BR"}}}}},
		"discounts": map[string]any{"codes": []any{"BEMVINDO10"}},
		"payment":   map[string]any{"instruments": []any{map[string]any{"id": "pi_1", "handler_id": "pix", "type": "pix"}}},
		"signals":   map[string]any{"br.dev.bcp.buyer_ip": "203.0.113.7"},
	},
	bcpschema.RootCart: {
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 2}},
		"buyer":      map[string]any{"email": "ana@example.com"},
		"context":    map[string]any{"address_country": "BR", "postal_code": "01310-100"},
		"discounts":  map[string]any{"codes": []any{"BEMVINDO10"}},
	},
	bcpschema.RootCatalogSearch:  {"query": "caneca", "filters": map[string]any{"categories": []any{"Casa"}}, "pagination": map[string]any{"cursor": "abc"}},
	bcpschema.RootCatalogLookup:  {"ids": []any{"prd_1", "var_cam"}},
	bcpschema.RootCatalogProduct: {"id": "prd_1"},
}

// corruptions are what the guard refuses in any string: the JSON text
// that replaces a marker, and what a member name holding it decodes to.
// url is the byte a URL can carry instead ("": none can).
var corruptions = []struct {
	name, json, decoded, url string
}{
	{"NUL", `\u0000`, "\x00", "\x00"},
	{"invalid UTF-8", "\xff", "\ufffd", "\xff"},
	{"unpaired surrogate", `\udc00`, "\ufffd", ""},
}

const marker = "@@BAD@@"

// pathSeg is one step to a string of a document.
type pathSeg struct {
	key   string
	index int
	isIdx bool
}

// stringLeaf is a string of a document: a value, or the member name that
// the last step names (key).
type stringLeaf struct {
	segs []pathSeg
	key  bool
}

func stringLeaves(v any, prefix []pathSeg, out *[]stringLeaf) {
	switch c := v.(type) {
	case string:
		*out = append(*out, stringLeaf{segs: slices.Clone(prefix)})
	case []any:
		for i, e := range c {
			stringLeaves(e, append(prefix, pathSeg{index: i, isIdx: true}), out)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			p := append(prefix, pathSeg{key: k})
			*out = append(*out, stringLeaf{segs: slices.Clone(p), key: true})
			stringLeaves(c[k], p, out)
		}
	}
}

func marked(s string) string { return s[:len(s)/2] + marker + s[len(s)/2:] }

// withMarker is a copy of v with the marker in the leaf's string.
func withMarker(v any, segs []pathSeg, key bool) any {
	if len(segs) == 0 {
		return marked(v.(string))
	}
	s := segs[0]
	switch c := v.(type) {
	case []any:
		n := slices.Clone(c)
		n[s.index] = withMarker(c[s.index], segs[1:], key)
		return n
	case map[string]any:
		n := maps.Clone(c)
		if key && len(segs) == 1 {
			delete(n, s.key)
			n[marked(s.key)] = c[s.key]
			return n
		}
		n[s.key] = withMarker(c[s.key], segs[1:], key)
		return n
	}
	panic("no such leaf")
}

// jsonPathOf renders segs as the guard does; a marked member name holds
// decoded in place of the marker.
func jsonPathOf(segs []pathSeg, key bool, decoded string) string {
	var b strings.Builder
	b.WriteString("$")
	for i, s := range segs {
		switch {
		case s.isIdx:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case key && i == len(segs)-1:
			name := strings.ReplaceAll(marked(s.key), marker, decoded)
			b.WriteString("['" + strings.ReplaceAll(name, "\x00", `\u0000`) + "']")
		case isIdent(s.key):
			b.WriteString("." + s.key)
		default:
			b.WriteString("['" + s.key + "']")
		}
	}
	return b.String()
}

func isIdent(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// corrupt is doc as JSON with the marker replaced by the corruption.
func corrupt(t *testing.T, doc any, with string) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b, []byte(marker)) != 1 {
		t.Fatalf("marker not once in %s", b)
	}
	return bytes.Replace(b, []byte(marker), []byte(with), 1)
}

// A NUL, invalid UTF-8 or an unpaired surrogate in any string of any
// operation's arguments, member names included, is refused by the one
// input guard before anything else: over MCP (through the SDK) JSON-RPC
// -32602 invalid_params, over REST 400 invalid_params, each naming exactly
// that string's JSONPath. The operation table is iterated, so a new
// operation is covered without a line here.
func TestInputGuardOnEveryOperationAndBinding(t *testing.T) {
	te := newTestEdge(t)
	const profile = "https://agent.example/profile.json"
	cases := 0
	for i := range operations {
		op := &operations[i]
		tool := op.tool()
		t.Run(op.name, func(t *testing.T) {
			args := map[string]any{"meta": map[string]any{"ucp-agent": map[string]any{"profile": profile}, "idempotency-key": uuid.NewString()}}
			if tool.TakesID() {
				args["id"] = "res_01"
			}
			member := tool.Payload()
			if member != "" {
				payload, ok := samplePayloads[op.schema]
				if !ok {
					t.Fatalf("no sample payload for root %s", op.schema)
				}
				args[member] = payload
			}
			var leaves []stringLeaf
			stringLeaves(args, nil, &leaves)
			for _, l := range leaves {
				doc := withMarker(args, l.segs, l.key)
				for _, c := range corruptions {
					want := jsonPathOf(l.segs, l.key, c.decoded)
					cases++
					// MCP: the arguments as sent.
					raw := corrupt(t, doc, c.json)
					a := te.mcpPost(t, "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+op.name+`","arguments":`+string(raw)+`}}`, nil)
					if a.status != http.StatusOK || a.Error == nil || a.Error.Code != -32602 || a.Error.Data.Code != "invalid_params" || !slices.Equal(a.Error.Data.Paths, []string{want}) {
						t.Errorf("MCP %s at %s: HTTP %d %.300s\nwant -32602 invalid_params at [%s]", c.name, want, a.status, a.raw, want)
					}
					// REST: the id is in the URL and the payload is the
					// body; meta comes from headers, which cannot carry these.
					top := l.segs[0].key
					switch {
					case top == "id" && !l.key && c.url != "":
						var body []byte
						if member != "" {
							body, _ = json.Marshal(args[member])
						}
						te.restWant(t, op, strings.Replace(marked("res_01"), marker, c.url, 1), body, profile, want, c.name)
					case top == member && len(l.segs) > 1:
						body := corrupt(t, withMarker(args[member], l.segs[1:], l.key), c.json)
						te.restWant(t, op, "res_01", body, profile, want, c.name)
					}
				}
			}
		})
	}
	if cases < 500 {
		t.Fatalf("only %d cases", cases)
	}
}

// restWant sends op over REST with id in the URL and body, and wants 400
// invalid_params at path.
func (te *testEdge) restWant(t *testing.T, op *operation, id string, body []byte, profile, path, what string) {
	t.Helper()
	target := restBase + strings.Replace(op.path, "{id}", url.PathEscape(id), 1)
	r := httptest.NewRequest(op.method, target, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("BCP-Agent", `profile="`+profile+`"`)
	r.Header.Set("Idempotency-Key", uuid.NewString())
	w := httptest.NewRecorder()
	te.rest.ServeHTTP(w, te.withTenant(r))
	var flat struct {
		Code  string   `json:"code"`
		Paths []string `json:"paths"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &flat)
	if w.Code != http.StatusBadRequest || flat.Code != "invalid_params" || !slices.Equal(flat.Paths, []string{path}) {
		t.Errorf("REST %s %s %s at %s: HTTP %d %.300s\nwant 400 invalid_params at [%s]", op.method, target, what, path, w.Code, w.Body.String(), path)
	}
}

// Sizes are the guard's too, on every binding: a string, a container or
// a nesting level beyond its limits is invalid params at its path.
func TestInputGuardSizes(t *testing.T) {
	te := newTestEdge(t)
	op := operationNamed(t, "create_cart")
	long := strings.Repeat("a", bcpschema.MaxInputString+1)
	deep := strings.Repeat(`{"x":`, bcpschema.MaxInputDepth) + `1` + strings.Repeat(`}`, bcpschema.MaxInputDepth)
	many := `[` + strings.TrimSuffix(strings.Repeat(`{"item":{"id":"v"},"quantity":1},`, bcpschema.MaxInputItems+1), ",") + `]`
	for _, tc := range []struct {
		name, cart, path string
	}{
		{"long string", `{"buyer":{"first_name":"` + long + `"}}`, "$.cart.buyer.first_name"},
		{"too deep", `{"context":` + deep + `}`, "$.cart.context" + strings.Repeat(".x", bcpschema.MaxInputDepth-2)},
		{"too many line items", `{"line_items":` + many + `}`, "$.cart.line_items"},
	} {
		a := te.mcpPost(t, "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_cart","arguments":{"meta":{"ucp-agent":{"profile":"https://agent.example/p.json"}},"cart":`+tc.cart+`}}}`, nil)
		if a.Error == nil || a.Error.Code != -32602 || !slices.Equal(a.Error.Data.Paths, []string{tc.path}) {
			t.Errorf("MCP %s: HTTP %d %.300s, want -32602 at %s", tc.name, a.status, a.raw, tc.path)
		}
		te.restWant(t, op, "", []byte(tc.cart), "https://agent.example/p.json", tc.path, tc.name)
	}
}
