package bcpschema

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Direction selects which annotation keyword drives resolution.
type Direction string

const (
	Request  Direction = "request"  // uses ucp_request
	Response Direction = "response" // uses ucp_response
)

func (d Direction) annotationKey() (string, error) {
	switch d {
	case Request:
		return "ucp_request", nil
	case Response:
		return "ucp_response", nil
	}
	return "", fmt.Errorf("bcpschema: unknown direction %q", string(d))
}

// Op is a checkout operation. Create, read, update and complete are the
// operation names used by ucp_request/ucp_response per-op objects. Cancel is
// ours: it carries no checkout payload, and per-op annotations never name it,
// so resolving for it leaves per-op annotations at their defaults.
type Op string

const (
	OpCreate   Op = "create"
	OpRead     Op = "read"
	OpUpdate   Op = "update"
	OpComplete Op = "complete"
	OpCancel   Op = "cancel"
)

// annotation keywords removed from every resolved schema.
var annotationKeys = [...]string{"ucp_request", "ucp_response"}

// transitionKey is what upstream's ucp-schema emits for transition
// annotations; we keep its name so tooling treats both outputs alike.
const transitionKey = "x-ucp-schema-transition"

type visibility uint8

const (
	visInclude  visibility = iota // no annotation for this op: keep as is
	visOmit                       // drop the property and its required entry
	visRequired                   // keep and require
	visOptional                   // keep, not required
)

func parseVisibility(s, at string) (visibility, error) {
	switch s {
	case "omit":
		return visOmit, nil
	case "required":
		return visRequired, nil
	case "optional":
		return visOptional, nil
	}
	return 0, fmt.Errorf("bcpschema: %s: unknown visibility %q", at, s)
}

// visibilityOf interprets one annotation value for op. Shapes accepted, as in
// ucp-schema: "omit" (all ops), {"create":"omit",...} (per op, missing op =
// include), {"transition":{from,to,description}} (all ops) and
// {"update":{"transition":{...}}} (per op). A transition resolves to "from":
// the field keeps its current contract until the planned change lands.
func visibilityOf(ann any, op Op, at string) (visibility, map[string]any, error) {
	switch a := ann.(type) {
	case string:
		v, err := parseVisibility(a, at)
		return v, nil, err
	case map[string]any:
		if v, ok := a[string(op)]; ok {
			switch v := v.(type) {
			case string:
				vis, err := parseVisibility(v, at+"/"+string(op))
				return vis, nil, err
			case map[string]any:
				return parseTransition(v, at+"/"+string(op))
			}
			return 0, nil, fmt.Errorf("bcpschema: %s/%s: annotation must be a string or transition object", at, op)
		}
		if _, ok := a["transition"]; ok {
			return parseTransition(a, at)
		}
		return visInclude, nil, nil
	}
	return 0, nil, fmt.Errorf("bcpschema: %s: annotation must be a string or object, got %T", at, ann)
}

func parseTransition(obj map[string]any, at string) (visibility, map[string]any, error) {
	t, ok := obj["transition"].(map[string]any)
	if !ok {
		return 0, nil, fmt.Errorf("bcpschema: %s: expected {\"transition\":{...}}", at)
	}
	from, _ := t["from"].(string)
	to, _ := t["to"].(string)
	desc, _ := t["description"].(string)
	if desc == "" {
		return 0, nil, fmt.Errorf("bcpschema: %s: transition without description", at)
	}
	vf, err := parseVisibility(from, at+"/transition/from")
	if err != nil {
		return 0, nil, err
	}
	if _, err := parseVisibility(to, at+"/transition/to"); err != nil {
		return 0, nil, err
	}
	if from == to {
		return 0, nil, fmt.Errorf("bcpschema: %s: transition from and to are both %q", at, from)
	}
	return vf, map[string]any{"from": from, "to": to, "description": desc}, nil
}

// refRewriter maps a $ref found at a schema position (base is the URL of the
// enclosing document) to the $ref to emit. inject carries annotations that an
// allOf sibling propagates into the referenced schema's top-level properties;
// the rewriter must then produce a distinct copy (see bundler.ref).
type refRewriter func(base, ref string, inject map[string]any) (string, error)

// resolver copies a schema for one direction and op, applying annotations.
// Inputs are never mutated; non-schema values (enum, const, examples, default,
// unknown keywords) are shared with the input because nothing mutates them.
type resolver struct {
	op    Op
	key   string // annotation keyword for the direction
	other string // the other direction's keyword (stripped too)
	ref   refRewriter
	// peek looks a $ref up in the schema graph (nil: no graph, see
	// ResolveAnnotations) so allOf propagation can see referenced branches.
	peek func(base, ref string) (node any, nodeBase string, ok bool)
}

func newResolver(dir Direction, op Op, ref refRewriter) (*resolver, error) {
	key, err := dir.annotationKey()
	if err != nil {
		return nil, err
	}
	switch op {
	case OpCreate, OpRead, OpUpdate, OpComplete, OpCancel:
	default:
		return nil, fmt.Errorf("bcpschema: unknown op %q", string(op))
	}
	other := annotationKeys[0]
	if other == key {
		other = annotationKeys[1]
	}
	return &resolver{op: op, key: key, other: other, ref: ref}, nil
}

// Keywords whose value is a single subschema, a map of subschemas, or an
// array of subschemas (JSON Schema 2020-12 plus the draft-07 spellings).
var (
	schemaKeywords = map[string]bool{
		"items": true, "additionalItems": true, "additionalProperties": true, "unevaluatedProperties": true,
		"unevaluatedItems": true, "not": true, "if": true, "then": true, "else": true, "contains": true,
		"propertyNames": true, "contentSchema": true,
	}
	schemaMapKeywords   = map[string]bool{"$defs": true, "definitions": true, "patternProperties": true, "dependentSchemas": true}
	schemaArrayKeywords = map[string]bool{"anyOf": true, "oneOf": true, "prefixItems": true}
)

// schema resolves node (a schema: object or boolean) located at JSON pointer
// at within the document whose URL is base. inject holds annotations to add to
// this schema's own properties when they lack one (allOf propagation).
func (r *resolver) schema(node any, base, at string, inject map[string]any) (any, error) {
	obj, ok := node.(map[string]any)
	if !ok {
		return node, nil // boolean schema (or garbage the compiler will report)
	}
	out := make(map[string]any, len(obj))
	var required []string
	_, hadRequired := obj["required"]
	if rs, ok := obj["required"].([]any); ok {
		for _, v := range rs {
			if s, ok := v.(string); ok {
				required = append(required, s)
			}
		}
	}
	// Sorted keys: $refs are registered in a stable order, so $defs keys and
	// error messages do not depend on map iteration.
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := obj[k]
		at := at + "/" + escapePointer(k)
		switch {
		case k == r.key || k == r.other:
			// annotation keywords never reach the output
		case k == "required":
			// rebuilt below from the property annotations
		case k == "$ref":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("bcpschema: %s: $ref is not a string", at)
			}
			// Annotations injected into this schema also reach the properties
			// it gets through $ref, unless it declares the property itself.
			var refInject map[string]any
			own, _ := obj["properties"].(map[string]any)
			for name, ann := range inject {
				if _, ok := own[name]; !ok {
					if refInject == nil {
						refInject = map[string]any{}
					}
					refInject[name] = ann
				}
			}
			nr, err := r.ref(base, s, refInject)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			out[k] = nr
		case k == "$id" && at != "/$id":
			return nil, fmt.Errorf("bcpschema: %s: embedded $id is not supported", at)
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				out[k] = v
				continue
			}
			rp, err := r.properties(props, base, at, inject, &required)
			if err != nil {
				return nil, err
			}
			out[k] = rp
		case k == "allOf":
			branches, ok := v.([]any)
			if !ok {
				out[k] = v
				continue
			}
			rb, err := r.allOf(branches, base, at)
			if err != nil {
				return nil, err
			}
			out[k] = rb
		case schemaKeywords[k]:
			if arr, ok := v.([]any); ok && k == "items" { // draft-07 tuple form
				ra, err := r.schemaArray(arr, base, at)
				if err != nil {
					return nil, err
				}
				out[k] = ra
				continue
			}
			rv, err := r.schema(v, base, at, nil)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		case schemaMapKeywords[k]:
			m, ok := v.(map[string]any)
			if !ok {
				out[k] = v
				continue
			}
			rm := make(map[string]any, len(m))
			for name, sub := range m {
				rs, err := r.schema(sub, base, at+"/"+escapePointer(name), nil)
				if err != nil {
					return nil, err
				}
				rm[name] = rs
			}
			out[k] = rm
		case schemaArrayKeywords[k]:
			arr, ok := v.([]any)
			if !ok {
				out[k] = v
				continue
			}
			ra, err := r.schemaArray(arr, base, at)
			if err != nil {
				return nil, err
			}
			out[k] = ra
		default:
			out[k] = v
		}
	}
	if hadRequired || len(required) > 0 {
		rs := make([]any, len(required))
		for i, s := range required {
			rs[i] = s
		}
		out["required"] = rs
	}
	return out, nil
}

func (r *resolver) schemaArray(arr []any, base, at string) ([]any, error) {
	out := make([]any, len(arr))
	for i, sub := range arr {
		rs, err := r.schema(sub, base, fmt.Sprintf("%s/%d", at, i), nil)
		if err != nil {
			return nil, err
		}
		out[i] = rs
	}
	return out, nil
}

// properties applies each property's annotation for r.op and edits required.
// Names are visited in sorted order so appended required entries are stable.
func (r *resolver) properties(props map[string]any, base, at string, inject map[string]any, required *[]string) (map[string]any, error) {
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]any, len(props))
	for _, name := range names {
		prop := props[name]
		pat := at + "/" + escapePointer(name)
		ann, has := annotationOf(prop, r.key)
		if !has {
			if ia, ok := inject[name]; ok {
				ann, has = ia, true
			}
		}
		vis, transition := visInclude, map[string]any(nil)
		if has {
			var err error
			vis, transition, err = visibilityOf(ann, r.op, pat+"/"+r.key)
			if err != nil {
				return nil, err
			}
		}
		switch vis {
		case visOmit:
			*required = slices.DeleteFunc(*required, func(s string) bool { return s == name })
			continue
		case visRequired:
			if !slices.Contains(*required, name) {
				*required = append(*required, name)
			}
		case visOptional:
			*required = slices.DeleteFunc(*required, func(s string) bool { return s == name })
		}
		rp, err := r.schema(prop, base, pat, nil)
		if err != nil {
			return nil, err
		}
		if transition != nil {
			if m, ok := rp.(map[string]any); ok {
				m[transitionKey] = transition
				if transition["to"] == "omit" {
					m["deprecated"] = true
				}
			}
		}
		out[name] = rp
	}
	return out, nil
}

func annotationOf(prop any, key string) (any, bool) {
	m, ok := prop.(map[string]any)
	if !ok {
		return nil, false
	}
	a, ok := m[key]
	return a, ok
}

// allOf resolves the branches of an allOf with ucp-schema's propagation rule:
// an annotation on a property in any branch (last branch wins) also applies to
// the same property in the other branches that do not annotate it, so an
// extension can set the visibility of a field it inherits. A base branch that
// requires the field cannot be weakened to omit/optional (monotonicity).
func (r *resolver) allOf(branches []any, base, at string) ([]any, error) {
	merged := map[string]any{}
	for _, b := range branches {
		props, _ := r.branchShape(b, base)
		for name, prop := range props {
			if ann, ok := annotationOf(prop, r.key); ok {
				merged[name] = ann
			}
		}
	}
	out := make([]any, len(branches))
	for i, b := range branches {
		bat := fmt.Sprintf("%s/%d", at, i)
		var inject map[string]any
		if len(merged) > 0 {
			props, required := r.branchShape(b, base)
			for name, ann := range merged {
				prop, ok := props[name]
				if !ok {
					continue
				}
				if _, own := annotationOf(prop, r.key); own {
					continue
				}
				if slices.Contains(required, name) {
					vis, _, err := visibilityOf(ann, r.op, bat+"/properties/"+escapePointer(name))
					if err != nil {
						return nil, err
					}
					if vis == visOmit || vis == visOptional {
						return nil, fmt.Errorf("bcpschema: %s/properties/%s: allOf sibling weakens a required property", bat, escapePointer(name))
					}
				}
				if inject == nil {
					inject = map[string]any{}
				}
				inject[name] = ann
			}
		}
		rb, err := r.schema(b, base, bat, inject)
		if err != nil {
			return nil, err
		}
		out[i] = rb
	}
	return out, nil
}

// branchShape returns the top-level properties and required list a branch
// contributes, looking through a $ref the way ucp-schema's inlining does
// (the branch's own members win over the referenced schema's).
func (r *resolver) branchShape(b any, base string) (map[string]any, []string) {
	return r.branchShapeDepth(b, base, 0)
}

func (r *resolver) branchShapeDepth(b any, base string, depth int) (map[string]any, []string) {
	m, ok := b.(map[string]any)
	if !ok || depth > 16 { // a $ref-only cycle contributes nothing
		return nil, nil
	}
	props := map[string]any{}
	var required []string
	if ref, ok := m["$ref"].(string); ok && r.peek != nil {
		if t, tbase, ok := r.peek(base, ref); ok {
			tp, tr := r.branchShapeDepth(t, tbase, depth+1)
			for k, v := range tp {
				props[k] = v
			}
			required = tr
		}
	}
	if own, ok := m["properties"].(map[string]any); ok {
		for k, v := range own {
			props[k] = v
		}
	}
	if rs, ok := m["required"].([]any); ok {
		required = required[:0:0]
		for _, v := range rs {
			if s, ok := v.(string); ok {
				required = append(required, s)
			}
		}
	}
	return props, required
}

// ResolveAnnotations resolves a single schema document for dir and op without
// following $refs (they are copied unchanged): properties annotated omit are
// dropped and removed from required, required/optional edit required, and the
// ucp_request/ucp_response keywords are stripped everywhere. Use it for
// self-contained schemas; Resolve and CheckoutSchema handle the embedded graph.
func ResolveAnnotations(schema json.RawMessage, dir Direction, op Op) (json.RawMessage, error) {
	doc, err := decodeJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("bcpschema: %w", err)
	}
	// No graph: $refs stay as written and allOf sees only literal branches.
	r, err := newResolver(dir, op, func(_, ref string, _ map[string]any) (string, error) { return ref, nil })
	if err != nil {
		return nil, err
	}
	out, err := r.schema(doc, "", "", nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// escapePointer escapes a JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
