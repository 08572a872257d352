package bcpschema

import (
	"slices"
	"strconv"
	"strings"
)

// nulViolations reports every string in inst (member names included) that
// holds a NUL character, at its JSONPath: the input guard (CheckInput) for
// arguments already decoded. JSON allows "\u0000" in strings
// and the schemas do not forbid it, but nothing in BCP means it, PostgreSQL
// text cannot store it (ids and e-mails failed deep in a query as internal
// errors) and where it could be stored it hides the rest of a name from C
// libraries and logs. Tool arguments are refused with the path instead.
func nulViolations(inst any) []Violation {
	var out []Violation
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch c := v.(type) {
		case string:
			if strings.IndexByte(c, 0) >= 0 {
				out = append(out, Violation{Path: path, Keyword: "nul", Message: "must not contain a NUL character (\\u0000)"})
			}
		case []any:
			for i, e := range c {
				walk(e, path+"["+strconv.Itoa(i)+"]")
			}
		case map[string]any:
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				var b strings.Builder
				b.WriteString(path)
				writeMember(&b, k)
				p := b.String()
				if strings.IndexByte(k, 0) >= 0 {
					out = append(out, Violation{Path: p, Keyword: "nul", Message: "member name must not contain a NUL character (\\u0000)"})
				}
				walk(c[k], p)
			}
		}
	}
	walk(inst, "$")
	return out
}

// nulError is the ValidationError for inst's NULs, nil when it has none.
func nulError(inst any) *ValidationError {
	vs := nulViolations(inst)
	if len(vs) == 0 {
		return nil
	}
	e := &ValidationError{Violations: vs}
	if len(vs) > MaxViolations {
		e.Omitted = len(vs) - MaxViolations
		e.Violations = vs[:MaxViolations]
	}
	return e
}
