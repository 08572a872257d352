// Package jsonmembers reads a JSON object's members in one pass, refusing
// repeated names, with the outcome encoding/json's token decoder gives.
// agentauth uses it to peek at JSON-RPC requests before the MCP SDK reads
// them: both must see the same message.
package jsonmembers

import (
	"bytes"
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

// Pick reads raw as Of does, with the same outcome (the same errors, the
// same order of faults, repeats refused), and sets vals[k] to the value of
// the member names[k], nil when there is none, instead of building a map:
// for callers that look at a few members of each object (agentauth reads
// five levels of every JSON-RPC request). checked is OfChecked's: raw was
// a value Of returned. On error every vals[k] is nil.
func Pick(raw json.RawMessage, checked bool, names []string, vals []json.RawMessage) error {
	clear(vals)
	err := scanObject(raw, checked, func(name []byte, v json.RawMessage) {
		for k, n := range names {
			if string(name) == n {
				vals[k] = v
			}
		}
	})
	if err != nil {
		clear(vals)
	}
	return err
}

func scanMembers(b []byte, checked bool) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if err := scanObject(b, checked, func(name []byte, v json.RawMessage) { out[string(name)] = v }); err != nil {
		return nil, err
	}
	return out, nil
}

// nameSet holds the member names of one object seen so far, to refuse a
// repeat: compared one by one while there are few, in a map beyond.
type nameSet struct {
	small [16][]byte
	n     int
	big   map[string]struct{}
}

// add adds name and reports whether it was there already.
func (s *nameSet) add(name []byte) (repeat bool) {
	if s.big != nil {
		if _, ok := s.big[string(name)]; ok {
			return true
		}
		s.big[string(name)] = struct{}{}
		return false
	}
	for _, p := range s.small[:s.n] {
		if bytes.Equal(p, name) {
			return true
		}
	}
	if s.n < len(s.small) {
		s.small[s.n] = name
		s.n++
		return false
	}
	s.big = make(map[string]struct{}, 2*len(s.small))
	for _, p := range s.small {
		s.big[string(p)] = struct{}{}
	}
	s.big[string(name)] = struct{}{}
	return false
}

// scanObject reads the object b holds and calls visit with each member's
// name (decoded) and value (a slice of b), in order, once it is known not
// to repeat an earlier name.
func scanObject(b []byte, checked bool, visit func(name []byte, v json.RawMessage)) error {
	i := skipSpace(b, 0)
	if i == len(b) {
		return errSyntax
	}
	if b[i] != '{' {
		return errors.New("not an object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	var seen nameSet
	for {
		// name
		if i == len(b) || b[i] != '"' {
			return errSyntax
		}
		end, plain, ok := scanString(b, i)
		if !ok {
			return errSyntax
		}
		var name []byte
		if plain {
			name = b[i+1 : end-1 : end-1]
		} else {
			var s string
			if json.Unmarshal(b[i:end], &s) != nil {
				return errSyntax
			}
			name = []byte(s)
		}
		i = skipSpace(b, end)
		if i == len(b) || b[i] != ':' {
			return errSyntax
		}
		// value
		i = skipSpace(b, i+1)
		end, ok = scanValue(b, i, checked)
		if !ok {
			return errSyntax
		}
		if seen.add(name) {
			return ErrDuplicate
		}
		visit(name, json.RawMessage(b[i:end:end]))
		// next member or the end
		i = skipSpace(b, end)
		if i == len(b) {
			return errSyntax
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return nil
		default:
			return errSyntax
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
