package bcpschema

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The input guard: what every tool's arguments are held to before any
// schema, whatever the tool (the edge runs it for every operation of both
// bindings, services/edge/executor.go, so a new tool cannot miss it).
// Nothing in BCP means a NUL character, PostgreSQL text cannot store one,
// and text that is not UTF-8 (invalid bytes, or an escaped surrogate
// without its pair) would be changed silently on the way: encoding/json
// turns both into U+FFFD. Sizes are bounded so that no single string,
// object or nesting level costs more than a request of ordinary shape.
const (
	// MaxInputDepth bounds the nesting of objects and arrays (the
	// arguments themselves are depth 1).
	MaxInputDepth = 32
	// MaxInputString bounds one string, member names included, in bytes
	// as sent (an AP2 checkout mandate, the largest, embeds a checkout).
	MaxInputString = 64 << 10
	// MaxInputItems bounds the members of one object and the elements of
	// one array.
	MaxInputItems = 1000
)

// Guard keywords (Violation.Keyword).
const (
	KeywordNUL  = "nul"  // a NUL character (\u0000)
	KeywordUTF8 = "utf8" // invalid UTF-8, or an unpaired surrogate escape
	KeywordSize = "size" // beyond MaxInputDepth, MaxInputString or MaxInputItems
	KeywordJSON = "json" // not JSON
)

// CheckInput is the input guard: nil, or a *ValidationError naming every
// string (member names included) that holds a NUL character, is not UTF-8
// or is longer than MaxInputString, every object or array with more than
// MaxInputItems entries and every value nested deeper than MaxInputDepth,
// at its JSONPath ($.checkout.buyer.email). Input that is not JSON is one
// violation at $ (keyword "json"); empty input is valid ({}).
func CheckInput(raw []byte) *ValidationError {
	if len(raw) == 0 {
		return nil
	}
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		if err == nil {
			err = fmt.Errorf("not a single JSON value")
		}
		return jsonError(err)
	}
	g := guard{raw: raw}
	g.value(0)
	if len(g.found) == 0 {
		return nil
	}
	slices.SortStableFunc(g.found, func(a, b guardViolation) int { return compareTokens(a.tokens, b.tokens) })
	e := &ValidationError{}
	for i, f := range g.found {
		if i == MaxViolations {
			e.Omitted = g.total - MaxViolations
			break
		}
		e.Violations = append(e.Violations, Violation{Path: f.path, Keyword: f.keyword, Message: f.message})
	}
	return e
}

// guard walks valid JSON once, keeping the path of the value it is in.
type guard struct {
	raw   []byte
	i     int
	segs  []guardSeg
	found []guardViolation
	total int // violations found, recorded or not
}

// guardSeg is one step of the path: a member name (still quoted, as
// sent: decoded only for a violation) or an array index.
type guardSeg struct {
	name  []byte
	index int // when name is nil
}

type guardViolation struct {
	tokens                 []string
	path, keyword, message string
}

// guardLimit bounds what is recorded: a hostile document of a million
// NULs costs a scan, not a million violations (the rest are counted).
const guardLimit = 10 * MaxViolations

func (g *guard) report(keyword, message string) {
	g.total++
	if len(g.found) >= guardLimit {
		return
	}
	var b strings.Builder
	b.WriteByte('$')
	tokens := make([]string, len(g.segs))
	for i, s := range g.segs {
		if s.name == nil {
			tokens[i] = strconv.Itoa(s.index)
			b.WriteByte('[')
			b.WriteString(tokens[i])
			b.WriteByte(']')
			continue
		}
		if err := json.Unmarshal(s.name, &tokens[i]); err != nil {
			tokens[i] = string(s.name[1 : len(s.name)-1])
		}
		writeMember(&b, tokens[i])
	}
	g.found = append(g.found, guardViolation{tokens: tokens, path: b.String(), keyword: keyword, message: message})
}

func (g *guard) ws() {
	for g.i < len(g.raw) {
		switch g.raw[g.i] {
		case ' ', '\t', '\n', '\r':
			g.i++
		default:
			return
		}
	}
}

// value checks the value at g.i (depth: its container's nesting).
func (g *guard) value(depth int) {
	g.ws()
	switch g.raw[g.i] {
	case '{', '[':
		if depth+1 > MaxInputDepth {
			g.report(KeywordSize, fmt.Sprintf("must not be nested deeper than %d levels", MaxInputDepth))
			g.skipContainer()
			return
		}
		if g.raw[g.i] == '{' {
			g.object(depth + 1)
		} else {
			g.array(depth + 1)
		}
	case '"':
		if k, m := g.str(); k != "" {
			g.report(k, "must not "+m)
		}
	default: // number, true, false, null
		for g.i < len(g.raw) {
			switch g.raw[g.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			g.i++
		}
	}
}

func (g *guard) object(depth int) {
	g.i++ // {
	n := 0
	for {
		g.ws()
		if g.raw[g.i] == '}' {
			g.i++
			return
		}
		if g.raw[g.i] == ',' {
			g.i++
			g.ws()
		}
		n++
		if n == MaxInputItems+1 {
			g.report(KeywordSize, fmt.Sprintf("must not have more than %d members", MaxInputItems))
		}
		start := g.i
		k, m := g.str()
		// A bad member name is reported at the member's own path.
		g.segs = append(g.segs, guardSeg{name: g.raw[start:g.i]})
		if k != "" {
			g.report(k, "member name must not "+m)
		}
		g.ws()
		g.i++ // :
		g.value(depth)
		g.segs = g.segs[:len(g.segs)-1]
	}
}

func (g *guard) array(depth int) {
	g.i++ // [
	n := 0
	for {
		g.ws()
		if g.raw[g.i] == ']' {
			g.i++
			return
		}
		if g.raw[g.i] == ',' {
			g.i++
		}
		n++
		if n == MaxInputItems+1 {
			g.report(KeywordSize, fmt.Sprintf("must not have more than %d elements", MaxInputItems))
		}
		g.segs = append(g.segs, guardSeg{index: n - 1})
		g.value(depth)
		g.segs = g.segs[:len(g.segs)-1]
	}
}

// skipContainer moves past the object or array at g.i.
func (g *guard) skipContainer() {
	level := 0
	for g.i < len(g.raw) {
		switch g.raw[g.i] {
		case '{', '[':
			level++
		case '}', ']':
			level--
			if level == 0 {
				g.i++
				return
			}
		case '"':
			g.skipString()
			continue
		}
		g.i++
	}
}

// skipString moves past the string at g.i.
func (g *guard) skipString() {
	g.i++
	for g.i < len(g.raw) {
		switch g.raw[g.i] {
		case '\\':
			g.i += 2
			continue
		case '"':
			g.i++
			return
		}
		g.i++
	}
}

// str checks the string at g.i and moves past it: its first problem's
// keyword and message ("" when none).
func (g *guard) str() (keyword, message string) {
	start := g.i
	g.i++ // "
	set := func(k, m string) {
		if keyword == "" {
			keyword, message = k, m
		}
	}
	unpaired := func(at int) {
		set(KeywordUTF8, `contain an unpaired surrogate (\u`+strings.ToLower(string(g.raw[at+2:at+6]))+"), which is not UTF-8")
	}
	for {
		c := g.raw[g.i]
		switch {
		case c == '"':
			g.i++
			if g.i-start-2 > MaxInputString {
				set(KeywordSize, fmt.Sprintf("be longer than %d bytes", MaxInputString))
			}
			return keyword, message
		case c == '\\':
			if g.raw[g.i+1] != 'u' {
				g.i += 2
				continue
			}
			at := g.i
			r := hex4(g.raw[g.i+2 : g.i+6])
			g.i += 6
			switch {
			case r == 0:
				set(KeywordNUL, `contain a NUL character (\u0000)`)
			case r >= 0xD800 && r < 0xDC00:
				// A high surrogate must be followed by a low one.
				if g.i+6 <= len(g.raw) && g.raw[g.i] == '\\' && g.raw[g.i+1] == 'u' {
					if lo := hex4(g.raw[g.i+2 : g.i+6]); lo >= 0xDC00 && lo < 0xE000 {
						g.i += 6
						continue
					}
				}
				unpaired(at)
			case r >= 0xDC00 && r < 0xE000:
				unpaired(at)
			}
		case c < utf8.RuneSelf:
			g.i++
		default:
			r, size := utf8.DecodeRune(g.raw[g.i:])
			if r == utf8.RuneError && size == 1 {
				set(KeywordUTF8, fmt.Sprintf("contain invalid UTF-8 (byte 0x%02x)", c))
			}
			g.i += size
		}
	}
}

// hex4 is the value of four hex digits (json.Valid checked them).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}
