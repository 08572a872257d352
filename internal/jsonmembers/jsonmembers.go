// Package jsonmembers reads a JSON object's members in one pass, refusing
// repeated names, with the outcome encoding/json's token decoder gives.
// agentauth uses it to peek at JSON-RPC requests before the MCP SDK reads
// them: both must see the same message.
package jsonmembers

import (
	"encoding/json"
	"errors"
)

// ErrDuplicate is a member name that appears twice in one object.
var ErrDuplicate = errors.New("duplicate member")

// Of decodes a JSON object into its members, refusing repeats. It reads
// the object once, member by member, and fails where encoding/json's
// token decoder would: a member whose value is not valid JSON is an
// error, and a repeated name is ErrDuplicate once its value has been read
// (so of two faults, the earlier one is reported). What follows the
// object's closing brace is not looked at. The values are slices of raw.
//
// It replaced agentauth's walk with json.Decoder's Token API, which
// decoded every nested level again (2.3 % of the platform's CPU per
// purchase); FuzzMembers checks it against that walk.
func Of(raw json.RawMessage) (map[string]json.RawMessage, error) {
	return scanMembers(raw, false)
}

// OfChecked is Of for a value Of has already returned: valid JSON, so its
// values need no second check.
func OfChecked(raw json.RawMessage) (map[string]json.RawMessage, error) {
	return scanMembers(raw, true)
}

var errSyntax = errors.New("invalid JSON")

func scanMembers(b []byte, checked bool) (map[string]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i == len(b) {
		return nil, errSyntax
	}
	if b[i] != '{' {
		return nil, errors.New("not an object")
	}
	out := map[string]json.RawMessage{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, nil
	}
	for {
		// name
		if i == len(b) || b[i] != '"' {
			return nil, errSyntax
		}
		end, plain, ok := scanString(b, i)
		if !ok {
			return nil, errSyntax
		}
		var name string
		if plain {
			name = string(b[i+1 : end-1])
		} else if json.Unmarshal(b[i:end], &name) != nil {
			return nil, errSyntax
		}
		i = skipSpace(b, end)
		if i == len(b) || b[i] != ':' {
			return nil, errSyntax
		}
		// value
		i = skipSpace(b, i+1)
		end, ok = scanValue(b, i, checked)
		if !ok {
			return nil, errSyntax
		}
		if _, seen := out[name]; seen {
			return nil, ErrDuplicate
		}
		out[name] = json.RawMessage(b[i:end:end])
		// next member or the end
		i = skipSpace(b, end)
		if i == len(b) {
			return nil, errSyntax
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return out, nil
		default:
			return nil, errSyntax
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString reads the JSON string starting at b[i] == '"' and returns the
// index after its closing quote, whether it is plain (no escapes, ASCII
// only: its bytes are its value) and whether it is a valid JSON string.
func scanString(b []byte, i int) (end int, plain, ok bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			return j + 1, plain, true
		case c < 0x20:
			return 0, false, false
		case c >= 0x80:
			plain = false // decoded with encoding/json (invalid UTF-8 becomes U+FFFD)
		case c == '\\':
			plain = false
			j++
			if j == len(b) {
				return 0, false, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return 0, false, false
				}
				for _, h := range b[j+1 : j+5] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				j += 4
			default:
				return 0, false, false
			}
		}
	}
	return 0, false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanValue finds the end of the JSON value starting at b[i] and, unless
// checked, whether it is valid. Scalars end where their grammar ends, as in
// the token decoder (so "00" is the number 0 followed by a stray 0, which
// the caller then refuses); objects and arrays end at their matching
// bracket and are checked with json.Valid, the scanner that decoder uses.
func scanValue(b []byte, i int, checked bool) (end int, ok bool) {
	if i == len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, ok = scanString(b, i)
		return end, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, _, ok := scanString(b, j)
				if !ok {
					return 0, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, checked || json.Valid(b[i:j+1])
				}
			}
		}
		return 0, false
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	default:
		return scanNumber(b, i)
	}
}

func literal(b []byte, i int, lit string) (end int, ok bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// scanNumber reads the longest JSON number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (end int, ok bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		j = digits(b, j)
	default:
		return 0, false
	}
	if j < len(b) && b[j] == '.' {
		k := digits(b, j+1)
		if k == j+1 {
			return 0, false
		}
		j = k
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(b, j)
		if k == j {
			return 0, false
		}
		j = k
	}
	return j, true
}

func digits(b []byte, j int) int {
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	return j
}
