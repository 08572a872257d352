package bcpschema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func resolveInline(t *testing.T, schema string, dir Direction, op Op) map[string]any {
	t.Helper()
	out, err := ResolveAnnotations(json.RawMessage(schema), dir, op)
	if err != nil {
		t.Fatalf("ResolveAnnotations(%s, %s): %v", dir, op, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func propNames(m map[string]any) []string {
	props, _ := m["properties"].(map[string]any)
	var names []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		if _, ok := props[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

func requiredOf(m map[string]any) []string {
	var out []string
	rs, _ := m["required"].([]any)
	for _, r := range rs {
		out = append(out, r.(string))
	}
	return out
}

// The checkout.json pattern in miniature: shorthand strings, per-op
// objects, and a property without annotation.
const opSchema = `{
  "type": "object",
  "required": ["a", "b", "c", "e"],
  "properties": {
    "a": {"type": "string", "ucp_request": "omit"},
    "b": {"type": "array", "ucp_request": {"create": "required", "update": "required", "complete": "omit"}},
    "c": {"type": "string", "ucp_request": {"create": "optional", "update": "optional"}},
    "d": {"$ref": "other.json", "ucp_request": {"create": "optional", "update": "optional", "complete": "required"}},
    "e": {"type": "integer"},
    "f": {"type": "string", "ucp_response": "omit"}
  }
}`

func TestResolveOps(t *testing.T) {
	cases := []struct {
		dir      Direction
		op       Op
		props    []string
		required []string
	}{
		{Request, OpCreate, []string{"b", "c", "d", "e", "f"}, []string{"b", "e"}},
		{Request, OpUpdate, []string{"b", "c", "d", "e", "f"}, []string{"b", "e"}},
		// complete: b omitted, c keeps its original required status (no
		// "complete" entry = unchanged), d becomes required.
		{Request, OpComplete, []string{"c", "d", "e", "f"}, []string{"c", "e", "d"}},
		{Request, OpRead, []string{"b", "c", "d", "e", "f"}, []string{"b", "c", "e"}},
		{Request, OpCancel, []string{"b", "c", "d", "e", "f"}, []string{"b", "c", "e"}},
		// response: ucp_request is ignored, ucp_response omit drops f.
		{Response, OpCreate, []string{"a", "b", "c", "d", "e"}, []string{"a", "b", "c", "e"}},
	}
	for _, c := range cases {
		m := resolveInline(t, opSchema, c.dir, c.op)
		if got := propNames(m); !reflect.DeepEqual(got, c.props) {
			t.Errorf("%s/%s properties = %v, want %v", c.dir, c.op, got, c.props)
		}
		if got := requiredOf(m); !reflect.DeepEqual(got, c.required) {
			t.Errorf("%s/%s required = %v, want %v", c.dir, c.op, got, c.required)
		}
		if s, _ := json.Marshal(m); strings.Contains(string(s), "ucp_re") {
			t.Errorf("%s/%s: annotation left in output: %s", c.dir, c.op, s)
		}
		// $ref is kept as written when resolving a single document.
		if d, ok := m["properties"].(map[string]any)["d"].(map[string]any); ok && d["$ref"] != "other.json" {
			t.Errorf("%s/%s: $ref rewritten: %v", c.dir, c.op, d)
		}
	}
}

func TestResolveRequiredAddsArray(t *testing.T) {
	// "required" on a schema without a required array creates one; omitting
	// the only required member leaves an empty array (as ucp-schema does).
	m := resolveInline(t, `{"properties":{"a":{"ucp_request":"required"}}}`, Request, OpCreate)
	if got := requiredOf(m); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("required = %v", got)
	}
	m = resolveInline(t, `{"required":["a"],"properties":{"a":{"ucp_request":"omit"}}}`, Request, OpCreate)
	if rs, ok := m["required"].([]any); !ok || len(rs) != 0 {
		t.Fatalf("required = %#v, want []", m["required"])
	}
}

func TestResolveNested(t *testing.T) {
	// Annotations are honoured at every schema position: items, $defs,
	// allOf/anyOf branches, if/then, additionalProperties.
	schema := `{
	  "$defs": {"x": {"properties": {"a": {"ucp_request": "omit"}, "b": {}}}},
	  "items": {"properties": {"a": {"ucp_request": "omit"}, "b": {}}},
	  "anyOf": [{"properties": {"a": {"ucp_request": "omit"}, "b": {}}}],
	  "then": {"properties": {"a": {"ucp_request": "omit"}, "b": {}}},
	  "additionalProperties": {"properties": {"a": {"ucp_request": "omit"}, "b": {}}},
	  "enum": [{"properties": {"a": {"ucp_request": "omit"}}}]
	}`
	m := resolveInline(t, schema, Request, OpCreate)
	for _, sub := range []any{
		m["$defs"].(map[string]any)["x"], m["items"], m["anyOf"].([]any)[0], m["then"], m["additionalProperties"],
	} {
		if got := propNames(sub.(map[string]any)); !reflect.DeepEqual(got, []string{"b"}) {
			t.Errorf("nested properties = %v, want [b]", got)
		}
	}
	// enum is data, not a schema: left alone.
	e := m["enum"].([]any)[0].(map[string]any)["properties"].(map[string]any)["a"].(map[string]any)
	if e["ucp_request"] != "omit" {
		t.Errorf("enum value was rewritten: %v", e)
	}
}

func TestResolveTransition(t *testing.T) {
	schema := `{
	  "required": ["a"],
	  "properties": {
	    "a": {"ucp_request": {"transition": {"from": "required", "to": "omit", "description": "moving to b"}}},
	    "b": {"ucp_request": {"update": {"transition": {"from": "omit", "to": "optional", "description": "planned"}}}}
	  }
	}`
	m := resolveInline(t, schema, Request, OpCreate)
	if got := propNames(m); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("create properties = %v", got)
	}
	if got := requiredOf(m); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("create required = %v", got)
	}
	a := m["properties"].(map[string]any)["a"].(map[string]any)
	if a["deprecated"] != true || a[transitionKey].(map[string]any)["to"] != "omit" {
		t.Errorf("a = %v, want transition metadata and deprecated", a)
	}
	// update: b uses "from" = omit, so it disappears.
	m = resolveInline(t, schema, Request, OpUpdate)
	if got := propNames(m); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("update properties = %v", got)
	}
}

func TestResolveAllOfPropagation(t *testing.T) {
	// The extension branch marks "a" omit on complete; the base branch does
	// not annotate it, so the annotation propagates (last writer wins).
	schema := `{"allOf": [
	  {"properties": {"a": {"type": "string"}, "b": {}}},
	  {"properties": {"a": {"ucp_request": {"complete": "omit"}}}}
	]}`
	m := resolveInline(t, schema, Request, OpComplete)
	base := m["allOf"].([]any)[0].(map[string]any)
	if got := propNames(base); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("base properties = %v, want [b]", got)
	}
	m = resolveInline(t, schema, Request, OpCreate)
	base = m["allOf"].([]any)[0].(map[string]any)
	if got := propNames(base); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("create base properties = %v", got)
	}

	// Monotonicity: a sibling may not weaken what a base branch requires.
	bad := `{"allOf": [
	  {"required": ["a"], "properties": {"a": {"type": "string"}}},
	  {"properties": {"a": {"ucp_request": "omit"}}}
	]}`
	if _, err := ResolveAnnotations(json.RawMessage(bad), Request, OpCreate); err == nil ||
		!strings.Contains(err.Error(), "weakens") {
		t.Fatalf("err = %v, want monotonicity error", err)
	}
}

func TestResolveErrors(t *testing.T) {
	for _, s := range []string{
		`{"properties": {"a": {"ucp_request": "hidden"}}}`,
		`{"properties": {"a": {"ucp_request": 3}}}`,
		`{"properties": {"a": {"ucp_request": {"create": 3}}}}`,
		`{"properties": {"a": {"ucp_request": {"transition": {"from": "omit", "to": "omit", "description": "x"}}}}}`,
		`{"properties": {"a": {"ucp_request": {"transition": {"from": "omit", "to": "required"}}}}}`,
	} {
		if _, err := ResolveAnnotations(json.RawMessage(s), Request, OpCreate); err == nil {
			t.Errorf("%s: no error", s)
		}
	}
	if _, err := ResolveAnnotations(json.RawMessage(`{}`), "sideways", OpCreate); err == nil {
		t.Error("unknown direction accepted")
	}
	if _, err := ResolveAnnotations(json.RawMessage(`{}`), Request, "delete"); err == nil {
		t.Error("unknown op accepted")
	}
}

// TestResolveGraph checks resolution through $refs into the embedded type
// files: line_item.json is resolved differently for each op, within one bundle.
func TestResolveGraph(t *testing.T) {
	defsOf := func(op Op) map[string]any {
		raw, err := Resolve("schemas/shopping/checkout.json", Request, op)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "ucp_request") {
			t.Fatalf("%s: bundle has annotations", op)
		}
		checkSelfContained(t, raw)
		return doc["$defs"].(map[string]any)
	}
	li := func(defs map[string]any) map[string]any { return defs["shopping.types.line_item"].(map[string]any) }
	create, update := defsOf(OpCreate), defsOf(OpUpdate)
	lc, lu := li(create), li(update)
	if _, ok := lc["properties"].(map[string]any)["id"]; ok {
		t.Error("create line_item has id (ucp_request create: omit)")
	}
	if _, ok := lu["properties"].(map[string]any)["id"]; !ok {
		t.Error("update line_item lacks id (ucp_request update: optional)")
	}
	if got := requiredOf(lc); !reflect.DeepEqual(got, []string{"item", "quantity"}) {
		t.Errorf("create line_item required = %v", got)
	}
	if _, ok := create["shopping.types.total"]; ok {
		t.Error("request bundle reaches total.json although totals are omitted")
	}
	item := create["shopping.types.item"].(map[string]any)
	if got := requiredOf(item); !reflect.DeepEqual(got, []string{"id"}) {
		t.Errorf("create item required = %v, want [id]", got)
	}

	// Responses keep everything but strip annotations; token is omitted.
	raw, err := Resolve(BaseURL+"schemas/shopping/types/token_credential.json", Response, OpComplete)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"token"`) {
		t.Errorf("response token_credential still has token: %s", raw)
	}
}

// checkSelfContained asserts that every $ref in a bundle is a local
// "#/$defs/<key>" whose target exists.
func checkSelfContained(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	defs, _ := doc["$defs"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if k == "$ref" {
					ref, _ := c.(string)
					key, ok := strings.CutPrefix(ref, "#/$defs/")
					if !ok {
						t.Errorf("non-local $ref %q", ref)
					} else if _, ok := defs[strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")]; !ok {
						t.Errorf("dangling $ref %q", ref)
					}
				}
				if k == "$id" {
					t.Errorf("$id %v in bundle", c)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
}

// TestResolveGraphPropagationVariant covers allOf propagation into a
// referenced branch: the referenced schema gets a distinct per-context copy,
// and the plain copy stays available to other referrers.
func TestResolveGraphPropagationVariant(t *testing.T) {
	st := &store{docs: map[string]any{}, caps: map[string]string{}}
	add := func(rel, doc string) {
		v, err := decodeJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		st.docs[BaseURL+rel] = v
	}
	add("t/a.json", `{"$id":"`+BaseURL+`t/a.json","type":"object","properties":{"x":{"type":"string"},"y":{}}}`)
	add("t/b.json", `{"$id":"`+BaseURL+`t/b.json","properties":{
	  "ext":   {"allOf":[{"$ref":"a.json"},{"properties":{"x":{"ucp_request":"omit"}}}]},
	  "plain": {"$ref":"a.json"}}}`)
	b, err := newBundler(st, Request, OpCreate)
	if err != nil {
		t.Fatal(err)
	}
	root, err := b.resolveRootRef("t/b.json")
	if err != nil {
		t.Fatal(err)
	}
	props := root.(map[string]any)["properties"].(map[string]any)
	extRef := props["ext"].(map[string]any)["allOf"].([]any)[0].(map[string]any)["$ref"]
	if extRef != "#/$defs/t.a+" || props["plain"].(map[string]any)["$ref"] != "#/$defs/t.a" {
		t.Fatalf("refs: ext %v, plain %v", extRef, props["plain"])
	}
	if got := propNames(b.defs["t.a+"].(map[string]any)); len(got) != 0 {
		t.Errorf("variant still has %v", got)
	}
	if _, ok := b.defs["t.a"].(map[string]any)["properties"].(map[string]any)["x"]; !ok {
		t.Error("plain copy lost x")
	}

	// Monotonicity through the reference.
	add("t/c.json", `{"$id":"`+BaseURL+`t/c.json","type":"object","required":["x"],"properties":{"x":{}}}`)
	add("t/d.json", `{"$id":"`+BaseURL+`t/d.json","allOf":[{"$ref":"c.json"},{"properties":{"x":{"ucp_request":"optional"}}}]}`)
	b, _ = newBundler(st, Request, OpCreate)
	if _, err := b.resolveRootRef("t/d.json"); err == nil || !strings.Contains(err.Error(), "weakens") {
		t.Errorf("err = %v, want monotonicity error", err)
	}
}
