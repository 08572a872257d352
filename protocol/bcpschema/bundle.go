package bcpschema

import (
	"encoding/json"
	"fmt"
	"strings"
)

// bundler produces one self-contained, resolved schema for a single
// (direction, op) from the embedded document graph.
//
// Why bundling rather than resolving documents in place: annotations live in
// the referenced type files (line_item.json, fulfillment_method.json, ...), so
// line_item.json resolved for create differs from line_item.json resolved for
// update. Each bundle therefore gets its own per-op copy of every reachable
// subschema, stored under $defs with every $ref rewritten to "#/$defs/<key>".
// No copy is shared across ops, the result has no $id and no external
// reference, and the same document is what MCP clients are shown and what the
// validator compiles.
type bundler struct {
	st    *store
	r     *resolver
	defs  map[string]any
	keys  map[string]string // target identity -> $defs key
	used  map[string]bool
	queue []pendingDef
}

type pendingDef struct {
	key, docURL, ptr string
	node             any
	inject           map[string]any
}

func newBundler(st *store, dir Direction, op Op) (*bundler, error) {
	b := &bundler{st: st, defs: map[string]any{}, keys: map[string]string{}, used: map[string]bool{}}
	r, err := newResolver(dir, op, b.ref)
	if err != nil {
		return nil, err
	}
	r.peek = b.peek
	b.r = r
	return b, nil
}

func (b *bundler) peek(base, ref string) (any, string, bool) {
	docURL, ptr, err := resolveRef(base, ref)
	if err != nil {
		return nil, "", false
	}
	n, err := b.st.lookup(docURL, ptr)
	if err != nil {
		return nil, "", false
	}
	return n, docURL, true
}

// ref registers the target of a $ref and returns its local replacement.
func (b *bundler) ref(base, ref string, inject map[string]any) (string, error) {
	docURL, ptr, err := resolveRef(base, ref)
	if err != nil {
		return "", err
	}
	n, err := b.st.lookup(docURL, ptr)
	if err != nil {
		return "", err
	}
	id := docURL + "#" + ptr
	if len(inject) > 0 {
		// An allOf sibling changed the visibility of this target's
		// properties: that copy differs from the plain one.
		j, err := json.Marshal(inject) // map keys are sorted: stable identity
		if err != nil {
			return "", err
		}
		id += "|" + string(j)
	}
	key, ok := b.keys[id]
	if !ok {
		key = b.newKey(docURL, ptr, len(inject) > 0)
		b.keys[id] = key
		b.queue = append(b.queue, pendingDef{key: key, docURL: docURL, ptr: ptr, node: n, inject: inject})
	}
	return "#/$defs/" + escapePointer(key), nil
}

// newKey derives a readable $defs key: schemas/shopping/types/line_item.json
// becomes "shopping.types.line_item", a fragment #/$defs/x adds ":x".
func (b *bundler) newKey(docURL, ptr string, variant bool) string {
	name := strings.TrimPrefix(docURL, BaseURL)
	name = strings.TrimPrefix(name, "schemas/")
	name = strings.TrimSuffix(name, ".json")
	name = strings.ReplaceAll(name, "/", ".")
	if ptr != "" {
		f := strings.TrimPrefix(ptr, "/$defs/")
		if f == ptr {
			f = strings.TrimPrefix(ptr, "/")
		}
		name += ":" + strings.ReplaceAll(f, "/", ".")
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._:-", r):
			return r
		}
		return '_'
	}, name)
	if variant {
		name += "+"
	}
	key := name
	for i := 2; b.used[key]; i++ {
		key = fmt.Sprintf("%s-%d", name, i)
	}
	b.used[key] = true
	return key
}

// reserve claims a $defs key for a caller-built root (tool wrappers).
func (b *bundler) reserve(key string) {
	b.used[key] = true
}

// resolveRoot resolves node (located in the document base) and every
// subschema it reaches; the result refers to b.defs.
func (b *bundler) resolveRoot(node any, base string) (any, error) {
	out, err := b.r.schema(docBody(node), base, "", nil)
	if err != nil {
		return nil, err
	}
	return out, b.drain()
}

// resolveRootRef resolves the schema at ref (absolute, or relative to BaseURL).
func (b *bundler) resolveRootRef(ref string) (any, error) {
	docURL, ptr, err := resolveRef(BaseURL, ref)
	if err != nil {
		return nil, err
	}
	n, err := b.st.lookup(docURL, ptr)
	if err != nil {
		return nil, err
	}
	out, err := b.r.schema(docBody(n), docURL, ptr, nil)
	if err != nil {
		return nil, err
	}
	return out, b.drain()
}

func (b *bundler) drain() error {
	for len(b.queue) > 0 {
		p := b.queue[0]
		b.queue = b.queue[1:]
		out, err := b.r.schema(docBody(p.node), p.docURL, p.ptr, p.inject)
		if err != nil {
			return fmt.Errorf("%s#%s: %w", p.docURL, p.ptr, err)
		}
		b.defs[p.key] = out
	}
	return nil
}

// docBody drops the document-level members that have no meaning once the
// schema is copied into $defs: its identity ($id, $schema) and its own $defs,
// which are only reachable through $refs that the bundler rewrites anyway.
func docBody(n any) any {
	m, ok := n.(map[string]any)
	if !ok {
		return n
	}
	_, hasID := m["$id"]
	_, hasSchema := m["$schema"]
	_, hasDefs := m["$defs"]
	if !hasID && !hasSchema && !hasDefs {
		return n
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch k {
		case "$id", "$schema", "$defs":
		default:
			out[k] = v
		}
	}
	return out
}

// document assembles root (a resolved schema object) and the collected
// $defs into one self-contained JSON Schema 2020-12 document.
func (b *bundler) document(root any) map[string]any {
	var out map[string]any
	if m, ok := root.(map[string]any); ok {
		out = m
	} else {
		out = map[string]any{"allOf": []any{root}}
	}
	out["$schema"] = draft2020
	if len(b.defs) > 0 {
		out["$defs"] = b.defs
	}
	return out
}

// Resolve returns the embedded schema at ref (e.g. "schemas/shopping/checkout.json",
// "schemas/ucp.json#/$defs/business_schema", or an absolute BaseURL URL)
// resolved for dir and op, with every referenced schema bundled into $defs.
func Resolve(ref string, dir Direction, op Op) (json.RawMessage, error) {
	st, err := defaultStore()
	if err != nil {
		return nil, err
	}
	b, err := newBundler(st, dir, op)
	if err != nil {
		return nil, err
	}
	root, err := b.resolveRootRef(ref)
	if err != nil {
		return nil, err
	}
	return json.Marshal(b.document(root))
}
