package bcpschema

import (
	"encoding/json"
	"strings"
	"testing"
)

// The input guard names each offending string, member name, container or
// nesting level at its path, with its keyword; everything else passes.
func TestCheckInput(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxInputDepth-1) + `{"b":1}` + strings.Repeat(`}`, MaxInputDepth-1)
	tooDeep := strings.Repeat(`{"a":`, MaxInputDepth) + `{"b":1}` + strings.Repeat(`}`, MaxInputDepth)
	many := func(n int) string {
		return `{"ids":[` + strings.TrimSuffix(strings.Repeat(`"x",`, n), ",") + `]}`
	}
	type want struct{ path, keyword string }
	for _, tc := range []struct {
		name, in string
		want     []want
	}{
		{"clean", `{"meta":{"ucp-agent":{"profile":"https://a.example/p.json"}},"checkout":{"buyer":{"email":"ana@example.com","first_name":"Ana \u00e9 \ud83d\uded2 ção"}}}`, nil},
		{"empty", ``, nil},
		{"escaped backslash then u0000", `{"id":"chk_\\u0000"}`, nil},
		{"deep enough", deep, nil},
		{"items at the limit", many(MaxInputItems), nil},
		{"string at the limit", `{"s":"` + strings.Repeat("a", MaxInputString) + `"}`, nil},

		{"nul", `{"checkout":{"buyer":{"email":"a\u0000@example.com"}}}`, []want{{"$.checkout.buyer.email", "nul"}}},
		{"nul in a member name", `{"checkout":{"buyer":{"e\u0000mail":"x"}}}`, []want{{`$.checkout.buyer['e\u0000mail']`, "nul"}}},
		{"nul in an array", `{"cart":{"line_items":[{"item":{"id":"a"}},{"item":{"id":"b\u0000"}}]}}`, []want{{"$.cart.line_items[1].item.id", "nul"}}},
		{"invalid utf-8", "{\"cart\":{\"buyer\":{\"first_name\":\"Jo\xe3o\"}}}", []want{{"$.cart.buyer.first_name", "utf8"}}},
		{"truncated utf-8", "{\"id\":\"chk_\xf0\x9f\x9b\"}", []want{{"$.id", "utf8"}}},
		{"invalid utf-8 in a member name", "{\"meta\":{\"\xff\":1}}", []want{{"$.meta['\ufffd']", "utf8"}}},
		{"lone high surrogate", `{"catalog":{"query":"caneca \ud83d"}}`, []want{{"$.catalog.query", "utf8"}}},
		{"high surrogate then a non-surrogate", `{"catalog":{"query":"\ud83d\u0041"}}`, []want{{"$.catalog.query", "utf8"}}},
		{"lone low surrogate", `{"catalog":{"ids":["\ude00"]}}`, []want{{"$.catalog.ids[0]", "utf8"}}},
		{"string too long", `{"s":"` + strings.Repeat("a", MaxInputString+1) + `"}`, []want{{"$.s", "size"}}},
		{"too deep", tooDeep, []want{{"$" + strings.Repeat(".a", MaxInputDepth), "size"}}},
		{"too many elements", many(MaxInputItems + 1), []want{{"$.ids", "size"}}},
		{"several, sorted by path", `{"z":"\u0000","a":[1,"\u0000"],"m":{"k":"\udc00"}}`, []want{{"$.a[1]", "nul"}, {"$.m.k", "utf8"}, {"$.z", "nul"}}},

		{"not json", `{"a":`, []want{{"$", "json"}}},
		{"trailing data", `{} {}`, []want{{"$", "json"}}},
		{"very deep nesting is not json", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), []want{{"$", "json"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := CheckInput([]byte(tc.in))
			if tc.want == nil {
				if e != nil {
					t.Fatalf("refused: %v", e)
				}
				return
			}
			if e == nil {
				t.Fatalf("accepted, want %v", tc.want)
			}
			var got []want
			for _, v := range e.Violations {
				got = append(got, want{v.Path, v.Keyword})
				if v.Message == "" {
					t.Errorf("%s: no message", v.Path)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("violations %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("violations %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// A document with more violations than MaxViolations keeps the first
// ones by path and counts the rest.
func TestCheckInputCountsWhatItOmits(t *testing.T) {
	in := `{"a":[` + strings.TrimSuffix(strings.Repeat(`"\u0000",`, 500), ",") + `]}`
	e := CheckInput([]byte(in))
	if e == nil || len(e.Violations) != MaxViolations || e.Omitted != 500-MaxViolations || e.Violations[0].Path != "$.a[0]" || e.Violations[MaxViolations-1].Path != "$.a[19]" {
		t.Fatalf("%d violations, %d omitted: %v", len(e.Violations), e.Omitted, e)
	}
}

// Every tool's validator runs the guard first: a cart or catalog argument
// with a NUL or invalid UTF-8 is refused at its path like a checkout's
// (carts were never checked, issue 32).
func TestEveryToolIsGuarded(t *testing.T) {
	tools := append(append([]Tool{}, checkoutTools...),
		Tool{Name: "create_cart", Root: RootCart, Op: OpCreate},
		Tool{Name: "update_cart", Root: RootCart, Op: OpUpdate},
		Tool{Name: "search_catalog", Root: RootCatalogSearch, Op: OpRead},
	)
	v, err := NewToolValidator(tools)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		for _, tc := range []struct{ args, path, keyword string }{
			{`{"meta":{"ucp-agent":{"profile":"https://a.example/p\u0000.json"}}}`, "$.meta['ucp-agent'].profile", "nul"},
			{"{\"meta\":{\"ucp-agent\":{\"profile\":\"https://a.example/p.json\"}},\"id\":\"x\xc3\"}", "$.id", "utf8"},
		} {
			err := v.ValidateToolInput(tool.Name, json.RawMessage(tc.args))
			ve, ok := err.(*ValidationError)
			if !ok || len(ve.Violations) != 1 || ve.Violations[0].Path != tc.path || ve.Violations[0].Keyword != tc.keyword {
				t.Errorf("%s %q: %v, want %s at %s", tool.Name, tc.args, err, tc.keyword, tc.path)
			}
		}
	}
}
