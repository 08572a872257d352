package bcpschema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxViolations caps ValidationError.Violations; the rest are only counted.
const MaxViolations = 20

// Violation is one schema failure.
type Violation struct {
	// Path is an RFC 9535 normalized-style JSONPath of the failing member:
	// dot notation for identifier-like names, bracket notation otherwise
	// ($.checkout.line_items[0].quantity, $.meta['ucp-agent']). A missing
	// required member is reported at its own path, not at its parent.
	Path string
	// Keyword is the JSON Schema keyword that failed ("required", "type",
	// "minimum", "format", ...); "false" or "not" for a forbidden member
	// (the tool schemas use {"not": {}}), "nul" for a NUL character, "utf8"
	// for text that is not UTF-8, "size" beyond the input guard's limits
	// (CheckInput), "json" when the input is not JSON.
	Keyword string
	Message string
}

// ValidationError lists the violations of one document, sorted by path
// (array indexes numerically) and de-duplicated.
type ValidationError struct {
	Violations []Violation
	// Omitted counts violations dropped beyond MaxViolations.
	Omitted int
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("bcpschema: invalid document: ")
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.Path)
		b.WriteString(": ")
		b.WriteString(v.Message)
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "; and %d more", e.Omitted)
	}
	return b.String()
}

var printer = message.NewPrinter(language.English)

// violation is a Violation before formatting: tokens plus, per token,
// whether it indexes an array (decided against the instance).
type violation struct {
	tokens  []string
	keyword string
	message string
}

// convert flattens a jsonschema error tree into the deepest failures.
func convert(err *jsonschema.ValidationError, inst any) *ValidationError {
	var vs []violation
	collect(err, &vs, inst)
	slices.SortFunc(vs, func(a, b violation) int {
		if c := compareTokens(a.tokens, b.tokens); c != 0 {
			return c
		}
		if c := strings.Compare(a.keyword, b.keyword); c != 0 {
			return c
		}
		return strings.Compare(a.message, b.message)
	})
	vs = slices.CompactFunc(vs, func(a, b violation) bool {
		return a.keyword == b.keyword && a.message == b.message && slices.Equal(a.tokens, b.tokens)
	})
	out := &ValidationError{}
	if len(vs) > MaxViolations {
		out.Omitted = len(vs) - MaxViolations
		vs = vs[:MaxViolations]
	}
	out.Violations = make([]Violation, len(vs))
	for i, v := range vs {
		out.Violations[i] = Violation{Path: jsonPath(v.tokens, inst), Keyword: v.keyword, Message: v.message}
	}
	return out
}

func collect(e *jsonschema.ValidationError, out *[]violation, inst any) {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			collect(c, out, inst)
		}
	case *kind.AnyOf:
		collectBranches(e.Causes, out, inst)
	case *kind.OneOf:
		if len(k.Subschemas) > 0 { // more than one branch matched
			add(out, loc, "", "oneOf", k.LocalizedString(printer))
			return
		}
		collectBranches(e.Causes, out, inst)
	case *kind.Required:
		for _, m := range k.Missing {
			add(out, loc, m, "required", "required property is missing")
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			add(out, loc, m, "dependentRequired", fmt.Sprintf("required when %q is present", k.Prop))
		}
	case *kind.Dependency:
		for _, m := range k.Missing {
			add(out, loc, m, "dependencies", fmt.Sprintf("required when %q is present", k.Prop))
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			add(out, loc, p, "additionalProperties", "property is not allowed")
		}
	case *kind.PropertyNames:
		msg := "invalid property name"
		var why []violation
		for _, c := range e.Causes {
			collect(c, &why, k.Property)
		}
		if len(why) > 0 {
			msg += ": " + why[0].message
		}
		add(out, ownerOf(inst, loc, k.Property), k.Property, "propertyNames", msg)
	case *kind.FalseSchema:
		add(out, loc, "", "false", "not allowed here")
	case *kind.Not:
		// The tool schemas forbid members with {"not": {}} (see forbidden).
		add(out, loc, "", "not", "not allowed here")
	default:
		// A leaf. contains/minContains carry per-item causes that would only
		// list every non-matching item; the array-level message says it all.
		kw := ""
		if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[len(p)-1]
		}
		add(out, loc, "", kw, e.ErrorKind.LocalizedString(printer))
	}
}

// collectBranches reports the failures of the anyOf/oneOf branches that most
// plausibly were meant. A branch that fails a "const" was selected against by
// its discriminator (message type "error"/"warning"/"info", ...), so it is
// dropped when another branch is not; of the rest the branches with the fewest
// failures win. Without this every alternative's complaints would be listed.
func collectBranches(causes []*jsonschema.ValidationError, out *[]violation, inst any) {
	type branch struct {
		vs    []violation
		discr bool
	}
	bs := make([]branch, len(causes))
	anyUndiscriminated := false
	for i, c := range causes {
		collect(c, &bs[i].vs, inst)
		for _, v := range bs[i].vs {
			if v.keyword == "const" {
				bs[i].discr = true
				break
			}
		}
		if !bs[i].discr {
			anyUndiscriminated = true
		}
	}
	best := -1
	for _, b := range bs {
		if anyUndiscriminated && b.discr {
			continue
		}
		if best < 0 || len(b.vs) < best {
			best = len(b.vs)
		}
	}
	for _, b := range bs {
		if (anyUndiscriminated && b.discr) || len(b.vs) != best {
			continue
		}
		*out = append(*out, b.vs...)
	}
}

// ownerOf returns the location of the object holding the offending property
// name. jsonschema v6.0.3 stores the validator's live location slice in
// propertyNames errors without copying it, so later siblings can overwrite
// its tokens (its length stays right). We therefore look for objects at that
// depth that have the member, preferring the one closest to the reported path.
func ownerOf(inst any, hint []string, name string) []string {
	var best []string
	bestScore := -1
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		if len(path) == len(hint) {
			if m, ok := v.(map[string]any); ok {
				if _, ok := m[name]; ok {
					score := 0
					for i := range path {
						if path[i] == hint[i] {
							score++
						}
					}
					if score > bestScore {
						best, bestScore = slices.Clone(path), score
					}
				}
			}
			return
		}
		switch c := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			slices.Sort(keys) // deterministic choice between equal candidates
			for _, k := range keys {
				walk(c[k], append(path, k))
			}
		case []any:
			for i, it := range c {
				walk(it, append(path, strconv.Itoa(i)))
			}
		}
	}
	walk(inst, make([]string, 0, len(hint)))
	if best == nil {
		return hint
	}
	return best
}

func add(out *[]violation, loc []string, member, keyword, msg string) {
	tokens := loc
	if member != "" {
		tokens = append(slices.Clip(loc), member)
	}
	*out = append(*out, violation{tokens: tokens, keyword: keyword, message: msg})
}

// compareTokens orders paths member by member, numbers numerically, so
// [2] sorts before [10] and a parent before its children.
func compareTokens(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			if ai < bi {
				return -1
			}
			return 1
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

// jsonPath renders tokens as a JSONPath. Whether a token is an array index is
// decided by walking the instance: "0" may just as well be an object key.
func jsonPath(tokens []string, inst any) string {
	var b strings.Builder
	b.WriteByte('$')
	cur := inst
	for _, tok := range tokens {
		switch c := cur.(type) {
		case []any:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
				b.WriteByte('[')
				b.WriteString(tok)
				b.WriteByte(']')
				cur = c[i]
				continue
			}
			cur = nil
		case map[string]any:
			cur = c[tok]
		default:
			cur = nil
		}
		writeMember(&b, tok)
	}
	return b.String()
}

func writeMember(b *strings.Builder, name string) {
	if isIdentifier(name) {
		b.WriteByte('.')
		b.WriteString(name)
		return
	}
	// RFC 9535 §2.7 normalized path escaping inside single quotes.
	b.WriteString("['")
	for _, r := range name {
		switch r {
		case '\'':
			b.WriteString(`\'`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteString("']")
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
