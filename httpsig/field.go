package httpsig

import (
	"encoding/base64"
	"strings"

	"github.com/dunglas/httpsfv"
)

// fieldValue computes an HTTP field component value (RFC 9421 §2.1).
func (m *message) fieldValue(c component) (string, error) {
	src := m
	if c.req {
		if !m.response {
			return "", errorf(ErrMalformed, "the req parameter is only valid on responses")
		}
		if m.req == nil {
			return "", errorf(ErrComponentMissing, "%s;req needs the request the response answers", c.name)
		}
		src = m.req
	}
	values, ok := src.headerValues(c.name)
	if !ok {
		return "", errorf(ErrComponentMissing, "field %q not present", c.name)
	}
	lines := make([]string, len(values))
	for i, v := range values {
		lines[i] = canonicalFieldLine(v)
	}
	switch {
	case c.bs:
		// §2.1.3: each line separately as a Byte Sequence, so the value
		// survives fields whose lines must not be combined.
		for i, l := range lines {
			lines[i] = ":" + base64.StdEncoding.EncodeToString([]byte(l)) + ":"
		}
		return strings.Join(lines, ", "), nil
	case c.hasKey:
		d, err := httpsfv.UnmarshalDictionary(lines)
		if err != nil {
			return "", wrapError(ErrMalformed, err, "field %q is not a structured dictionary", c.name)
		}
		member, ok := d.Get(c.key)
		if !ok {
			return "", errorf(ErrComponentMissing, "field %q has no member %q", c.name, c.key)
		}
		return marshalMember(member)
	case c.sf:
		return strictValue(c.name, lines)
	}
	// Multiple field lines are combined with ", " (RFC 9110 §5.3).
	return strings.Join(lines, ", "), nil
}

// canonicalFieldLine trims surrounding whitespace and replaces obsolete line
// folding with a single space (RFC 9421 §2.1, RFC 9112 §5.2).
func canonicalFieldLine(v string) string {
	if strings.ContainsAny(v, "\r\n") {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c == '\r' && i+1 < len(v) && v[i+1] == '\n' {
				i++
				c = '\n'
			}
			if c == '\n' && i+1 < len(v) && (v[i+1] == ' ' || v[i+1] == '\t') {
				for i+1 < len(v) && (v[i+1] == ' ' || v[i+1] == '\t') {
					i++
				}
				s := strings.TrimRight(b.String(), " \t")
				b.Reset()
				b.WriteString(s)
				b.WriteByte(' ')
				continue
			}
			// A bare CR or LF that is not a fold is kept; the signature base
			// check rejects it so it cannot inject a line.
			b.WriteByte(v[i])
		}
		v = b.String()
	}
	return strings.Trim(v, " \t")
}

type sfType int

const (
	sfUnknown sfType = iota
	sfDictionary
	sfList
	sfItem
)

// structuredFields records the type of structured fields this package may
// meet; the sf parameter needs the type to re-serialise a field.
var structuredFields = map[string]sfType{
	"signature":           sfDictionary,
	"signature-input":     sfDictionary,
	"accept-signature":    sfDictionary,
	"content-digest":      sfDictionary,
	"repr-digest":         sfDictionary,
	"want-content-digest": sfDictionary,
	"want-repr-digest":    sfDictionary,
	"priority":            sfDictionary,
	"cdn-cache-control":   sfDictionary,
	"signature-agent":     sfDictionary,
	"ucp-agent":           sfDictionary,
	"bcp-agent":           sfDictionary,
	"cache-status":        sfList,
	"proxy-status":        sfList,
	"accept-ch":           sfList,
	"client-cert-chain":   sfList,
	"client-cert":         sfItem,
}

// strictValue re-serialises a structured field (the sf parameter,
// RFC 9421 §2.1.1). Fields of unknown type are tried as Dictionary, then
// List, then Item, the first that parses winning.
func strictValue(name string, lines []string) (string, error) {
	try := []sfType{sfDictionary, sfList, sfItem}
	if t := structuredFields[name]; t != sfUnknown {
		try = []sfType{t}
	}
	var lastErr error
	for _, t := range try {
		var (
			v   httpsfv.StructuredFieldValue
			err error
		)
		switch t {
		case sfDictionary:
			v, err = httpsfv.UnmarshalDictionary(lines)
		case sfList:
			v, err = httpsfv.UnmarshalList(lines)
		case sfItem:
			v, err = httpsfv.UnmarshalItem(lines)
		}
		if err != nil {
			lastErr = err
			continue
		}
		s, err := httpsfv.Marshal(v)
		if err != nil {
			return "", wrapError(ErrMalformed, err, "field %q", name)
		}
		return s, nil
	}
	return "", wrapError(ErrMalformed, lastErr, "field %q is not a structured field", name)
}

func marshalMember(m httpsfv.Member) (string, error) {
	var (
		s   string
		err error
	)
	switch v := m.(type) {
	case httpsfv.Item:
		s, err = httpsfv.Marshal(v)
	case httpsfv.InnerList:
		s, err = httpsfv.Marshal(v)
	default:
		return "", errorf(ErrMalformed, "unexpected dictionary member type %T", m)
	}
	if err != nil {
		return "", wrapError(ErrMalformed, err, "dictionary member")
	}
	return s, nil
}
