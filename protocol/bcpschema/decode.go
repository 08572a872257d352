package bcpschema

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeFast decodes one JSON document into the values decodeJSON makes
// (map[string]any, []any, string, bool, nil, json.Number) in one pass, with
// no reflection: every tool call's arguments are decoded for validation,
// and encoding/json's Decoder scans them twice (readValue, then the
// decode) and builds each value through reflection. ok is false for
// anything it does not take on itself — text that is not JSON, a string
// that is not UTF-8 — and the caller then asks encoding/json, which
// answers (or fails) as before. Strings with escapes are unquoted by
// encoding/json too, one token at a time, so the values are always
// encoding/json's.
func decodeFast(data []byte) (v any, ok bool) {
	d := fastDecoder{data: data}
	d.space()
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.data)
}

type fastDecoder struct {
	data []byte
	i    int
}

// fastMaxDepth leaves deeper documents to encoding/json (which refuses
// nesting beyond 10 000); the input guard stops tool arguments at
// MaxInputDepth long before.
const fastMaxDepth = 1000

func (d *fastDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.data) || depth > fastMaxDepth {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.string()
		if !ok {
			return nil, false
		}
		return s, true
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return d.number()
	}
	return nil, false
}

func (d *fastDecoder) literal(lit string) bool {
	if len(d.data)-d.i < len(lit) || string(d.data[d.i:d.i+len(lit)]) != lit {
		return false
	}
	d.i += len(lit)
	return true
}

func (d *fastDecoder) object(depth int) (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated member: the last wins, as in encoding/json
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) array(depth int) (any, bool) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// string reads the string at d.i (its opening quote). Plain strings are
// copied; strings with an escape are unquoted by encoding/json; strings
// that are not UTF-8 are refused (encoding/json would replace their bad
// bytes with U+FFFD: the caller's fallback does exactly that).
func (d *fastDecoder) string() (string, bool) {
	start := d.i
	d.i++
	escaped, ascii := false, true
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			d.i++
			tok := d.data[start:d.i]
			if escaped {
				var s string
				if json.Unmarshal(tok, &s) != nil {
					return "", false
				}
				return s, true
			}
			body := tok[1 : len(tok)-1]
			if !ascii && !utf8.Valid(body) {
				return "", false
			}
			return string(body), true
		case c == '\\':
			escaped = true
			d.i += 2 // the escape's second byte is never the closing quote
			continue
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// number reads a number as JSON's grammar has it and keeps its text.
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	if d.data[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.data) && d.data[d.i] == '0':
		d.i++
	case d.digits() == 0:
		return nil, false
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, false
		}
	}
	return json.Number(d.data[start:d.i]), true
}

func (d *fastDecoder) digits() int {
	n := 0
	for d.i < len(d.data) && '0' <= d.data[d.i] && d.data[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}
