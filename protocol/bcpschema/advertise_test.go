package bcpschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// advertisedCapSets are the checkout capability sets the advertised
// schemas are checked for: every extension alone, none, all, and all but
// AP2.
func advertisedCapSets() [][]string {
	sets := [][]string{{CapCheckout}, DefaultCheckoutCapabilities(), noAP2}
	for _, c := range DefaultCheckoutCapabilities()[1:] {
		sets = append(sets, []string{CapCheckout, c})
	}
	return sets
}

func advertised(t *testing.T, tool Tool, caps []string) json.RawMessage {
	t.Helper()
	raw, err := ToolAdvertisedSchema(tool, caps)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Every advertised schema of every tool, for every capability set, is in
// the subset (AdvertisedViolations), keeps the argument envelope (meta
// with what it requires, id, the payload) and stays small.
func TestAdvertisedSchemasInSubset(t *testing.T) {
	for _, caps := range advertisedCapSets() {
		for _, tool := range bindingTools {
			raw := advertised(t, tool, caps)
			what := fmt.Sprintf("%s %v", tool.Name, caps)
			if v := AdvertisedViolations(raw); len(v) > 0 {
				t.Errorf("%s: outside the subset:\n%s", what, strings.Join(v, "\n"))
			}
			// The bound the edge's tools/list test (platform/devenv) puts
			// on a whole tool is 5 KB; the schema is most of it.
			if len(raw) > 4096 {
				t.Errorf("%s: advertised schema is %d bytes", what, len(raw))
			}
			m := schemaMap(t, raw)
			props := m["properties"].(map[string]any)
			names := slices.Sorted(maps.Keys(props))
			want := []string{"meta"}
			if tool.TakesID() {
				want = append(want, "id")
			}
			if p := tool.Payload(); p != "" {
				want = append(want, p)
			}
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("%s: arguments %v, want %v", what, names, want)
			}
			if got := requiredOf(m); !slices.Equal(sorted(got), want) {
				t.Errorf("%s: required %v, want %v", what, got, want)
			}
			meta := props["meta"].(map[string]any)
			wantMeta := []string{"ucp-agent"}
			if tool.IdempotencyKey {
				wantMeta = append(wantMeta, "idempotency-key")
			}
			if got := requiredOf(meta); !slices.Equal(got, wantMeta) {
				t.Errorf("%s: meta requires %v, want %v", what, got, wantMeta)
			}
			agent := meta["properties"].(map[string]any)["ucp-agent"].(map[string]any)
			if !slices.Equal(requiredOf(agent), []string{"profile"}) {
				t.Errorf("%s: ucp-agent = %v", what, agent)
			}
			if p := tool.Payload(); p != "" {
				payload := props[p].(map[string]any)
				if _, ok := payload["properties"].(map[string]any)["id"]; ok && tool.Root == RootCheckout {
					t.Errorf("%s: the payload advertises id", what)
				}
				for _, member := range notAdvertised {
					if _, ok := payload["properties"].(map[string]any)[member]; ok {
						t.Errorf("%s: the payload advertises %s", what, member)
					}
				}
			}
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// What the issue named: the type arrays of selected_option_id and
// selected_destination_id became one type; the create payload of a
// checkout shows cart_id and the members an agent fills in.
func TestAdvertisedCheckoutPayload(t *testing.T) {
	raw := advertised(t, bindingTool(t, "update_checkout"), DefaultCheckoutCapabilities())
	if strings.Contains(string(raw), `"null"`) || strings.Contains(string(raw), `$ref`) {
		t.Errorf("update_checkout advertises null or $ref: %s", raw)
	}
	co := schemaMap(t, raw)["properties"].(map[string]any)["checkout"].(map[string]any)
	method := at(t, co, "fulfillment", "methods", "[]")
	if g := at(t, method, "selected_destination_id"); !reflect.DeepEqual(g["type"], "string") {
		t.Errorf("selected_destination_id = %v", g)
	}
	if g := at(t, method, "groups", "[]", "selected_option_id"); g["type"] != "string" || g["description"] == nil {
		t.Errorf("selected_option_id = %v", g)
	}
	if _, ok := co["properties"].(map[string]any)["payment"]; ok {
		t.Error("update_checkout advertises payment, which only complete reads")
	}

	create := schemaMap(t, advertised(t, bindingTool(t, "create_checkout"), DefaultCheckoutCapabilities()))["properties"].(map[string]any)["checkout"].(map[string]any)
	if got, want := slices.Sorted(maps.Keys(create["properties"].(map[string]any))), []string{"buyer", "cart_id", "context", "discounts", "fulfillment", "line_items"}; !slices.Equal(got, want) {
		t.Errorf("create_checkout payload members %v, want %v", got, want)
	}
	if q := at(t, create, "line_items", "[]", "quantity"); q["type"] != "integer" || q["minimum"] != 1.0 {
		t.Errorf("quantity = %v", q)
	}
	if f := at(t, create, "fulfillment", "methods", "[]", "type"); !reflect.DeepEqual(f["enum"], []any{"shipping", "pickup"}) {
		t.Errorf("method type = %v", f)
	}

	complete := schemaMap(t, advertised(t, bindingTool(t, "complete_checkout"), DefaultCheckoutCapabilities()))["properties"].(map[string]any)["checkout"].(map[string]any)
	// AP2 is shown, not required: only agents that negotiate it need a
	// mandate, and the checkout service asks them for it.
	if got := requiredOf(complete); !slices.Equal(got, []string{"payment"}) {
		t.Errorf("complete_checkout payload requires %v", got)
	}
	if m := at(t, complete, "ap2", "checkout_mandate"); m["type"] != "string" {
		t.Errorf("ap2.checkout_mandate = %v", m)
	}
	if got := requiredOf(at(t, complete, "payment", "instruments", "[]")); !slices.Equal(got, []string{"id", "handler_id", "type"}) {
		t.Errorf("instrument requires %v", got)
	}
}

// at walks properties (and "[]": items) from a schema.
func at(t *testing.T, s map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		var next any
		if p == "[]" {
			next = s["items"]
		} else {
			props, _ := s["properties"].(map[string]any)
			next = props[p]
		}
		m, ok := next.(map[string]any)
		if !ok {
			t.Fatalf("no %s in %v", p, s)
		}
		s = m
	}
	return s
}

// Every hint describes a member some tool advertises: a hint whose member
// went away fails here.
func TestAdvertisedHintsAreUsed(t *testing.T) {
	used := map[string]bool{}
	for _, tool := range bindingTools {
		raw := advertised(t, tool, DefaultCheckoutCapabilities())
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(s map[string]any, path string)
		walk = func(s map[string]any, path string) {
			if h, ok := advertisedHints[path]; ok {
				if s["description"] != h {
					t.Errorf("%s %s: description %v, want the hint", tool.Name, path, s["description"])
				}
				used[path] = true
			}
			if props, ok := s["properties"].(map[string]any); ok {
				for name, p := range props {
					walk(p.(map[string]any), join(path, name))
				}
			}
			if items, ok := s["items"].(map[string]any); ok {
				walk(items, path+"[]")
			}
		}
		walk(doc, "")
	}
	for path := range advertisedHints {
		if !used[path] {
			t.Errorf("hint %q describes no advertised member", path)
		}
	}
}

// The check can fail: each construct the single-type dialects reject is
// reported, and so is the full schema.
func TestAdvertisedViolationsReportConstructs(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":{"type":["string","null"]}}}`, `/properties/a: type [string null] is not one of`},
		{`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, `/properties/a: keyword "anyOf" is outside the subset`},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`, `: keyword "$defs" is outside the subset`},
		{`{"type":"object","properties":{"a":true}}`, `/properties/a: a schema that is not an object`},
		{`{"type":"object","properties":{"a":{"description":"anything"}}}`, `/properties/a: type <nil> is not one of`},
		{`{"type":"object","additionalProperties":false}`, `: keyword "additionalProperties" is outside the subset`},
		{`{"type":"object","properties":{"k":{"type":"string","format":"uuid"}}}`, `/properties/k: keyword "format" is outside the subset`},
		{`{"type":"object","properties":{"k":{"type":"string","pattern":"^a"}}}`, `/properties/k: keyword "pattern" is outside the subset`},
		{`{"type":"object","properties":{"k":{"type":"string","const":"a"}}}`, `/properties/k: keyword "const" is outside the subset`},
		{`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`, `/properties/n: keyword "enum" on type "integer"`},
		{`{"type":"object","properties":{"s":{"type":"string","enum":[1,2]}}}`, `/properties/s: enum is not a non-empty array of strings`},
		{`{"type":"object","required":["a"]}`, `: required a is not a property`},
		{`{"type":"object","properties":{"x":{"type":"object","not":{}}}}`, `/properties/x: keyword "not" is outside the subset`},
		{`{"type":"string"}`, `: the root is not an object schema`},
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"null"}}}}`, `/properties/l/items: type null is not one of`},
	} {
		v := AdvertisedViolations(json.RawMessage(c.schema))
		if !slices.ContainsFunc(v, func(s string) bool { return strings.HasPrefix(s, c.want) }) {
			t.Errorf("%s: violations %q, want one starting %q", c.schema, v, c.want)
		}
	}
	full, err := ToolInputSchema(bindingTool(t, "update_checkout"), DefaultCheckoutCapabilities())
	if err != nil {
		t.Fatal(err)
	}
	v := AdvertisedViolations(full)
	for _, want := range []string{`: keyword "$schema" is outside the subset`, `: keyword "$defs" is outside the subset`, `/properties/checkout: keyword "$ref" is outside the subset`, `/properties/checkout/properties/id: keyword "not" is outside the subset`} {
		if !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("the full schema: no violation with %q in %q", want, v)
		}
	}
}

// The advertised schema accepts the arguments the full schema accepts,
// with AP2 or without (no tool argument is advertised stricter than it is
// validated): the binding's and the digest's examples and one call of
// every other tool.
// The one exception is null where the full schema also takes a string
// (selected_option_id): it is advertised as the string, and an agent
// leaves the member out instead.
func TestAdvertisedAcceptsValidArguments(t *testing.T) {
	v := defaultToolValidator(t)
	vNoAP2, err := newBindingValidator(noAP2...)
	if err != nil {
		t.Fatal(err)
	}
	const agent = `"meta":{"ucp-agent":{"profile":"https://platform.example/agent.json"}`
	const idem = `,"idempotency-key":"550e8400-e29b-41d4-a716-446655440000"`
	calls := map[string][]string{
		"get_checkout":    {`{` + agent + `},"id":"chk_1"}`},
		"cancel_checkout": {`{` + agent + idem + `},"id":"chk_1"}`},
		"get_order":       {`{` + agent + `},"id":"ord_1"}`},
		"create_checkout": {`{` + agent + `},"checkout":{"cart_id":"cart_1"}}`},
		"update_checkout": {`{` + agent + `},"id":"chk_1","checkout":{"line_items":[{"id":"li_1","item":{"id":"var_1"},"quantity":2}],"buyer":{"email":"ana@example.com"},` +
			`"fulfillment":{"methods":[{"id":"ship_1","type":"shipping","line_item_ids":["li_1"],"selected_destination_id":"dest_1","groups":[{"id":"grp_1","selected_option_id":"shr_1"}]}]},"discounts":{"codes":["BEMVINDO10"]}}}`},
		"complete_checkout": {`{` + agent + idem + `},"id":"chk_1","checkout":{"payment":{"instruments":[{"id":"pi_1","handler_id":"pix_demo","type":"pix"}]},"ap2":{"checkout_mandate":"a.b.c"}}}`},
		"create_cart":       {`{` + agent + `},"cart":{"line_items":[{"item":{"id":"var_1"},"quantity":1}],"buyer":{"email":"ana@example.com"}}}`},
		"get_cart":          {`{` + agent + `},"id":"cart_1"}`},
		"update_cart":       {`{` + agent + `},"id":"cart_1","cart":{"line_items":[{"id":"li_1","item":{"id":"var_1"},"quantity":3}]}}`},
		"cancel_cart":       {`{` + agent + idem + `},"id":"cart_1"}`},
		"search_catalog":    {`{` + agent + `},"catalog":{"query":"caneca","filters":{"categories":["Cozinha"],"price":{"min":0,"max":5000}},"pagination":{"limit":50,"cursor":"abc"}}}`},
		"lookup_catalog":    {`{` + agent + `},"catalog":{"ids":["prd_1","var_1","CAN-350"]}}`},
		"get_product":       {`{` + agent + `},"catalog":{"id":"prd_1"}}`},
	}
	for _, f := range []struct{ fixture, tool string }{
		{"binding_create_checkout.request.json", ""},
		{"binding_request_metadata.request.json", ""},
		{"binding_update_checkout.request.json", ""},
		{"digest_minimal_create.args.json", "create_checkout"},
		{"digest_complete_checkout.args.json", "complete_checkout"},
		{"binding_complete_checkout.request.json", ""}, // no ap2: valid without AP2
	} {
		name, args := arguments(t, f.fixture)
		if f.tool != "" {
			name = f.tool
		}
		calls[name] = append(calls[name], string(args))
	}
	for _, tool := range bindingTools {
		if len(calls[tool.Name]) == 0 {
			t.Errorf("%s: no valid call to check", tool.Name)
		}
		schema := compileAdvertised(t, advertised(t, tool, DefaultCheckoutCapabilities()))
		for _, args := range calls[tool.Name] {
			if err, errNoAP2 := v.ValidateToolInput(tool.Name, json.RawMessage(args)), vNoAP2.ValidateToolInput(tool.Name, json.RawMessage(args)); err != nil && errNoAP2 != nil {
				t.Fatalf("%s: the full schemas refuse %s: %v", tool.Name, args, err)
			}
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("%s: the advertised schema refuses %s: %v", tool.Name, args, err)
			}
		}
	}
}

func compileAdvertised(t *testing.T, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("advertised.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("advertised.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
