package bcpschema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// # Advertised schemas
//
// A tool's full input schema (ToolInputSchema) is what the edge validates
// arguments against: every upstream annotation, pattern and format, $defs
// per op, the composed extensions as allOf. It is large (16 KB for
// create_checkout), and an MCP host puts every tool definition in its
// model's context, where function-calling dialects with a single "type"
// (the OpenAPI 3.0 subset some model APIs take) reject type arrays, $ref,
// allOf, not, additionalProperties and unknown formats.
//
// ToolAdvertisedSchema derives from the full schema the one tools/list
// shows, written in AdvertisedKeywords only. It inlines every $ref, merges
// allOf branches into one object (properties and required united) and
// anyOf/oneOf branches into one (properties united, required intersected),
// reduces a type array to its one non-null type, writes const as a
// one-value enum, and drops the rest: patterns, formats,
// additionalProperties, titles, defaults, uniqueItems, propertyNames.
// Members the agent does not fill in are left out: those forbidden by
// {"not":{}} (a payload's id), the platform's own observations and what
// the operation ignores (advertises). With AP2 among the capabilities, a
// checkout tool shows ap2 without requiring it: the mandate binds only the
// agents that negotiate AP2, and the edge validates checkout arguments
// without it (the checkout service asks those agents for their mandate).
// Descriptions are the top-level arguments' when short, and
// advertisedHints elsewhere: upstream's field descriptions mostly restate
// the field's name.
//
// The advertised schema is looser than the full one, never stricter: an
// argument the full schema accepts, it accepts too (the left-out members
// stay accepted: payloads are open), but for null, which a nullable member
// (type ["string","null"]) no longer shows: an agent leaves the member out
// instead. The edge validates against the full schema, so errors and their
// paths do not change.

// AdvertisedKeywords are the JSON Schema keywords an advertised schema may
// use: the subset that single-type function-calling dialects accept.
// "type" is always one of AdvertisedTypes; "enum" lists strings.
var AdvertisedKeywords = []string{"type", "description", "properties", "required", "items", "enum", "minimum", "maximum", "minItems", "maxItems"}

// AdvertisedTypes are the values "type" takes in an advertised schema.
var AdvertisedTypes = []string{"object", "array", "string", "integer", "number", "boolean"}

// maxAdvertisedDescription bounds the description of a top-level argument
// kept from the full schema (its first sentence); longer ones are dropped.
const maxAdvertisedDescription = 100

// notAdvertised are payload members the platform fills from what it
// observes or tracks (upstream: "MUST NOT be buyer-asserted"), not the
// model: they stay valid, unadvertised.
var notAdvertised = []string{"attribution", "signals"}

// advertises reports whether tool's advertised schema shows the member at
// path. Besides notAdvertised, a checkout's payment is shown on complete
// only: the checkout service reads it there and ignores it on create and
// update.
func advertises(t Tool, path string) bool {
	payload, member, ok := strings.Cut(path, ".")
	if !ok || payload != t.Payload() || strings.ContainsAny(member, ".[") {
		return true
	}
	if slices.Contains(notAdvertised, member) {
		return false
	}
	return !(t.Root == RootCheckout && member == "payment" && t.Op != OpComplete)
}

// advertisedHints describe the members where the name does not say
// enough, by path from the arguments ("checkout.line_items[].item.id";
// [] is an array's items). A hint applies wherever its path exists; a test
// fails on a hint no tool uses.
var advertisedHints = map[string]string{
	"meta":                   "Request metadata.",
	"meta.ucp-agent.profile": "Your agent profile URL.",
	"meta.idempotency-key":   "A new UUID for each attempt; resend the same one only to retry a lost response.",

	"checkout":                                                   "The checkout, without its id.",
	"checkout.cart_id":                                           "A cart id from create_cart, in place of line_items: the checkout takes the cart's items, buyer and codes.",
	"checkout.line_items[].id":                                   "The line item id the last answer assigned.",
	"checkout.line_items[].item.id":                              "A variant id from search_catalog, lookup_catalog or get_product.",
	"checkout.buyer.phone_number":                                "E.164, e.g. +5511999998888.",
	"checkout.fulfillment.methods[].id":                          "The method id the last answer assigned.",
	"checkout.fulfillment.methods[].line_item_ids":               "The line item ids (from the last answer) this method delivers.",
	"checkout.fulfillment.methods[].destinations":                "Shipping: the buyer's address (address_country BR).",
	"checkout.fulfillment.methods[].selected_destination_id":     "The chosen destination's id, from the last answer.",
	"checkout.fulfillment.methods[].groups[].id":                 "The group id the last answer assigned.",
	"checkout.fulfillment.methods[].groups[].selected_option_id": "The chosen option's id, from this group's options in the last answer.",
	"checkout.discounts.codes":                                   "Discount codes to apply; an empty array removes them.",
	"checkout.payment.instruments":                               "Exactly one instrument, of a handler in ucp.payment_handlers.",
	"checkout.payment.instruments[].handler_id":                  "The id of a handler in ucp.payment_handlers.",
	"checkout.payment.instruments[].type":                        "The handler's instrument type: pix, or card.",
	"checkout.payment.instruments[].credential":                  "Cards only: {type: token, token} from the card processor.",
	"checkout.ap2.checkout_mandate":                              "With AP2 negotiated (answers carry ap2.merchant_authorization): an SD-JWT+kb over the checkout as last answered, signed with a key of your profile.",

	"cart":                      "The cart, without its id.",
	"cart.line_items[].id":      "The line item id the last answer assigned.",
	"cart.line_items[].item.id": "A variant id from search_catalog, lookup_catalog or get_product.",
	"cart.buyer.phone_number":   "E.164, e.g. +5511999998888.",

	"catalog.query":              "Free text, in Portuguese; accents and small typos are tolerated.",
	"catalog.filters.categories": "Exact values from products' categories.",
	"catalog.filters.price.min":  "Centavos (BRL).",
	"catalog.filters.price.max":  "Centavos (BRL).",
	"catalog.pagination.cursor":  "The cursor of the previous response.",
	"catalog.pagination.limit":   "Products a page: 10 by default, at most 50.",
	"catalog.ids":                "Product ids, variant ids or SKUs; at most 50.",
	"catalog.id":                 "A product id, or a variant id (which then comes first).",
}

// ToolAdvertisedSchema returns the input schema tools/list advertises for
// tool and the checkout capability set: the full input schema
// (ToolInputSchema) rewritten in AdvertisedKeywords. Validate arguments
// with the full schema (ToolValidator), never with this one. The result is
// a fresh copy.
func ToolAdvertisedSchema(t Tool, capabilities []string) (json.RawMessage, error) {
	return cachedToolSchema("adv", t, capabilities)
}

// advertisedDoc builds the advertised schema: the full input document,
// compacted.
func advertisedDoc(st *store, t Tool, capabilities []string) (map[string]any, error) {
	r, err := rootOf(t)
	if err != nil {
		return nil, err
	}
	compact := func(capabilities []string) (*shape, error) {
		full, err := r.in(st, t, capabilities)
		if err != nil {
			return nil, err
		}
		defs, _ := full["$defs"].(map[string]any)
		c := &compactor{defs: defs, open: map[string]bool{}, tool: t}
		out, err := c.schema(full, "")
		if err != nil {
			return nil, fmt.Errorf("bcpschema: advertised schema of %s: %w", t.Name, err)
		}
		return out, nil
	}
	out, err := compact(capabilities)
	if err != nil {
		return nil, err
	}
	if r.composed && slices.Contains(capabilities, CapAP2Mandate) {
		// AP2 binds only the agents that negotiate it, and the edge checks
		// their mandates after negotiation: the tool, listed for every
		// agent, shows ap2 without requiring it.
		without, err := compact(slices.DeleteFunc(slices.Clone(capabilities), func(c string) bool { return c == CapAP2Mandate }))
		if err != nil {
			return nil, err
		}
		out.disjoin(without)
	}
	doc, err := out.render("")
	if err != nil {
		return nil, fmt.Errorf("bcpschema: advertised schema of %s: %w", t.Name, err)
	}
	if doc["type"] != "object" {
		return nil, fmt.Errorf("bcpschema: advertised schema of %s: root type %v", t.Name, doc["type"])
	}
	return doc, nil
}

// shape is a schema being compacted: the advertised keywords only.
type shape struct {
	typ         string
	description string
	props       map[string]*shape
	forbidden   []string // members nothing may be sent in
	required    []string
	items       *shape
	enum        []any
	min, max    *float64
	minItems    *float64
	maxItems    *float64
}

type compactor struct {
	tool Tool
	defs map[string]any
	open map[string]bool // $defs keys being inlined (cycle guard)
}

// schema compacts one schema node found at path (advertisedHints' form).
func (c *compactor) schema(node any, path string) (*shape, error) {
	m, ok := node.(map[string]any)
	if !ok {
		// A boolean schema: true accepts anything, and false is only
		// used as {"not":{}} here.
		return &shape{}, nil
	}
	s := &shape{}
	// What the node says itself comes first, so that its description and
	// type win over those it gets through $ref and allOf.
	if err := c.own(s, m, path); err != nil {
		return nil, err
	}
	if ref, ok := m["$ref"].(string); ok {
		key, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return nil, fmt.Errorf("%s: $ref %q is not local", path, ref)
		}
		key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
		target, ok := c.defs[key]
		if !ok {
			return nil, fmt.Errorf("%s: $ref %q: no such definition", path, ref)
		}
		if c.open[key] {
			// A recursive schema: the inner occurrence keeps its type only.
			tm, _ := target.(map[string]any)
			typ, _ := tm["type"].(string)
			s.conjoin(&shape{typ: cmp.Or(typ, "object")})
		} else {
			c.open[key] = true
			sub, err := c.schema(target, path)
			delete(c.open, key)
			if err != nil {
				return nil, err
			}
			s.conjoin(sub)
		}
	}
	if branches, ok := m["allOf"].([]any); ok {
		for _, b := range branches {
			sub, err := c.schema(b, path)
			if err != nil {
				return nil, err
			}
			s.conjoin(sub)
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, ok := m[k].([]any)
		if !ok || len(branches) == 0 {
			continue
		}
		var u *shape
		for _, b := range branches {
			sub, err := c.schema(b, path)
			if err != nil {
				return nil, err
			}
			if sub.typ == "null" {
				continue
			}
			if u == nil {
				u = sub
			} else {
				u.disjoin(sub)
			}
		}
		if u != nil {
			s.conjoin(u)
		}
	}
	return s, nil
}

// own reads the node's own advertised keywords.
func (c *compactor) own(s *shape, m map[string]any, path string) error {
	switch t := m["type"].(type) {
	case string:
		s.typ = t
	case []any:
		var kept []string
		for _, v := range t {
			if v != "null" {
				kept = append(kept, fmt.Sprint(v))
			}
		}
		if len(kept) == 1 {
			s.typ = kept[0]
		} else if len(kept) == 2 && slices.Contains(kept, "integer") && slices.Contains(kept, "number") {
			s.typ = "number"
		}
		// Other unions stay untyped, and render refuses them.
	}
	if d, ok := m["description"].(string); ok && path != "" && !strings.ContainsAny(path, ".[") {
		s.description = shortDescription(d)
	}
	if e, ok := m["enum"].([]any); ok {
		s.enum = slices.Clone(e)
	}
	if v, ok := m["const"]; ok {
		s.enum = []any{v}
	}
	s.min = number(m["minimum"])
	s.max = number(m["maximum"])
	s.minItems = number(m["minItems"])
	s.maxItems = number(m["maxItems"])
	if props, ok := m["properties"].(map[string]any); ok {
		s.props = map[string]*shape{}
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if forbids(props[name]) {
				s.forbidden = append(s.forbidden, name)
				continue
			}
			if !advertises(c.tool, join(path, name)) {
				continue
			}
			sub, err := c.schema(props[name], join(path, name))
			if err != nil {
				return err
			}
			s.props[name] = sub
		}
	}
	if rs, ok := m["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok && !slices.Contains(s.required, name) {
				s.required = append(s.required, name)
			}
		}
	}
	if items, ok := m["items"]; ok {
		if _, tuple := items.([]any); !tuple {
			sub, err := c.schema(items, path+"[]")
			if err != nil {
				return err
			}
			s.items = sub
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// forbids reports whether schema is {"not":{}}: nothing is valid there.
func forbids(schema any) bool {
	m, ok := schema.(map[string]any)
	if !ok {
		return schema == false
	}
	not, ok := m["not"].(map[string]any)
	return ok && len(not) == 0 && len(m) == 1
}

func number(v any) *float64 {
	switch n := v.(type) {
	case float64:
		return &n
	case json.Number:
		f, err := n.Float64()
		if err == nil {
			return &f
		}
	}
	return nil
}

// shortDescription is the first sentence of d when it is short, else "".
func shortDescription(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	if len(d) > maxAdvertisedDescription {
		return ""
	}
	return d
}

// conjoin merges o into s as allOf does: a value must satisfy both.
func (s *shape) conjoin(o *shape) {
	if s.typ == "" {
		s.typ = o.typ
	}
	if s.description == "" {
		s.description = o.description
	}
	if o.props != nil {
		if s.props == nil {
			s.props = map[string]*shape{}
		}
		for name, p := range o.props {
			if mine, ok := s.props[name]; ok {
				mine.conjoin(p)
			} else {
				s.props[name] = p
			}
		}
	}
	for _, f := range o.forbidden {
		if !slices.Contains(s.forbidden, f) {
			s.forbidden = append(s.forbidden, f)
		}
	}
	for _, f := range s.forbidden {
		delete(s.props, f)
	}
	for _, r := range o.required {
		if !slices.Contains(s.required, r) {
			s.required = append(s.required, r)
		}
	}
	if o.items != nil {
		if s.items == nil {
			s.items = o.items
		} else {
			s.items.conjoin(o.items)
		}
	}
	if o.enum != nil {
		if s.enum == nil {
			s.enum = o.enum
		} else {
			s.enum = slices.DeleteFunc(slices.Clone(s.enum), func(v any) bool { return !slices.Contains(o.enum, v) })
		}
	}
	s.min = pick(s.min, o.min, fmax)
	s.max = pick(s.max, o.max, fmin)
	s.minItems = pick(s.minItems, o.minItems, fmax)
	s.maxItems = pick(s.maxItems, o.maxItems, fmin)
}

// disjoin merges o into s as anyOf does: a value may satisfy either, so
// the result accepts what either accepts.
func (s *shape) disjoin(o *shape) {
	if s.typ != o.typ {
		if (s.typ == "integer" && o.typ == "number") || (s.typ == "number" && o.typ == "integer") {
			s.typ = "number"
		} else {
			s.typ = ""
		}
	}
	if s.description != o.description {
		s.description = ""
	}
	if s.props != nil || o.props != nil {
		props := map[string]*shape{}
		maps.Copy(props, s.props)
		for name, p := range o.props {
			if mine, ok := props[name]; ok {
				cp := *mine
				cp.disjoin(p)
				props[name] = &cp
			} else {
				props[name] = p
			}
		}
		s.props = props
	}
	s.required = slices.DeleteFunc(slices.Clone(s.required), func(r string) bool { return !slices.Contains(o.required, r) })
	s.forbidden = slices.DeleteFunc(slices.Clone(s.forbidden), func(f string) bool { return !slices.Contains(o.forbidden, f) })
	switch {
	case s.items == nil || o.items == nil:
		s.items = nil
	default:
		cp := *s.items
		cp.disjoin(o.items)
		s.items = &cp
	}
	if s.enum == nil || o.enum == nil {
		s.enum = nil
	} else {
		for _, v := range o.enum {
			if !slices.Contains(s.enum, v) {
				s.enum = append(s.enum, v)
			}
		}
	}
	s.min = unpick(s.min, o.min, fmin)
	s.max = unpick(s.max, o.max, fmax)
	s.minItems = unpick(s.minItems, o.minItems, fmin)
	s.maxItems = unpick(s.maxItems, o.maxItems, fmax)
}

func fmin(x, y float64) float64 { return min(x, y) }
func fmax(x, y float64) float64 { return max(x, y) }

// pick combines two bounds that must both hold.
func pick(a, b *float64, f func(x, y float64) float64) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	v := f(*a, *b)
	return &v
}

// unpick combines two bounds of which either may hold: absent on one side
// is no bound.
func unpick(a, b *float64, f func(x, y float64) float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	v := f(*a, *b)
	return &v
}

// render writes the shape as a JSON Schema in AdvertisedKeywords. Every
// advertised schema names its one type: an untyped one is the object
// spelling of "anything", which strict clients flag, and no single type
// is looser than the full schema's "anything", so an untyped shape is an
// error.
func (s *shape) render(path string) (map[string]any, error) {
	out := map[string]any{}
	at := path
	if at == "" {
		at = "(arguments)"
	}
	typ := s.typ
	if typ == "" && len(s.props) > 0 {
		typ = "object"
	}
	if typ == "" && len(s.enum) > 0 && allStrings(s.enum) {
		typ = "string"
	}
	if !slices.Contains(AdvertisedTypes, typ) {
		return nil, fmt.Errorf("%s: no single type (%q) describes what the full schema accepts", at, s.typ)
	}
	out["type"] = typ
	if h, ok := advertisedHints[path]; ok {
		out["description"] = h
	} else if s.description != "" {
		out["description"] = s.description
	}
	if len(s.enum) > 0 && typ == "string" && allStrings(s.enum) {
		out["enum"] = s.enum
	}
	switch typ {
	case "object":
		if len(s.props) == 0 {
			break
		}
		props := make(map[string]any, len(s.props))
		for _, name := range slices.Sorted(maps.Keys(s.props)) {
			p, err := s.props[name].render(join(path, name))
			if err != nil {
				return nil, err
			}
			props[name] = p
		}
		out["properties"] = props
		var req []any
		for _, r := range s.required {
			if _, ok := s.props[r]; ok {
				req = append(req, r)
			}
		}
		if len(req) > 0 {
			out["required"] = req
		}
	case "array":
		if s.items != nil {
			items, err := s.items.render(path + "[]")
			if err != nil {
				return nil, err
			}
			out["items"] = items
		}
		setBound(out, "minItems", s.minItems)
		setBound(out, "maxItems", s.maxItems)
	case "integer", "number":
		setBound(out, "minimum", s.min)
		setBound(out, "maximum", s.max)
	}
	return out, nil
}

func setBound(out map[string]any, k string, v *float64) {
	if v != nil {
		out[k] = *v
	}
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// AdvertisedViolations lists what in schema (an advertised input schema,
// JSON) is outside the advertised subset: a keyword not in
// AdvertisedKeywords, a schema that is not an object or names no single
// type of AdvertisedTypes, a keyword on a type it does not apply to, an
// enum of non-strings, a required member that is not a property. Each
// entry is "<JSON Pointer>: <what>"; none means the schema is in the
// subset. The root must be an object schema, as MCP requires.
func AdvertisedViolations(schema json.RawMessage) []string {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return []string{": not JSON: " + err.Error()}
	}
	var out []string
	bad := func(at, format string, args ...any) {
		out = append(out, at+": "+fmt.Sprintf(format, args...))
	}
	if m, ok := doc.(map[string]any); !ok || m["type"] != "object" {
		bad("", "the root is not an object schema")
	}
	var walk func(node any, at string)
	walk = func(node any, at string) {
		m, ok := node.(map[string]any)
		if !ok {
			bad(at, "a schema that is not an object (%T)", node)
			return
		}
		typ, _ := m["type"].(string)
		if !slices.Contains(AdvertisedTypes, typ) {
			bad(at, "type %v is not one of %v", m["type"], AdvertisedTypes)
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v := m[k]
			if !slices.Contains(AdvertisedKeywords, k) {
				bad(at, "keyword %q is outside the subset", k)
				continue
			}
			applies := map[string][]string{
				"properties": {"object"}, "required": {"object"},
				"items": {"array"}, "minItems": {"array"}, "maxItems": {"array"},
				"enum": {"string"}, "minimum": {"integer", "number"}, "maximum": {"integer", "number"},
			}[k]
			if applies != nil && !slices.Contains(applies, typ) {
				bad(at, "keyword %q on type %q", k, typ)
			}
			switch k {
			case "description":
				if _, ok := v.(string); !ok {
					bad(at, "description is not a string")
				}
			case "properties":
				props, ok := v.(map[string]any)
				if !ok {
					bad(at, "properties is not an object")
					continue
				}
				for _, name := range slices.Sorted(maps.Keys(props)) {
					walk(props[name], at+"/properties/"+escapePointer(name))
				}
			case "required":
				props, _ := m["properties"].(map[string]any)
				rs, ok := v.([]any)
				if !ok || len(rs) == 0 {
					bad(at, "required is not a non-empty array")
					continue
				}
				for _, r := range rs {
					name, ok := r.(string)
					if _, declared := props[name]; !ok || !declared {
						bad(at, "required %v is not a property", r)
					}
				}
			case "items":
				walk(v, at+"/items")
			case "enum":
				vs, ok := v.([]any)
				if !ok || len(vs) == 0 || !allStrings(vs) {
					bad(at, "enum is not a non-empty array of strings")
				}
			case "minimum", "maximum", "minItems", "maxItems":
				if _, ok := v.(float64); !ok {
					bad(at, "%s is not a number", k)
				}
			}
		}
	}
	walk(doc, "")
	return out
}
