package httpsig

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// derivedValue computes a derived component value (RFC 9421 §2.2).
func (m *message) derivedValue(c component) (string, error) {
	if c.name == "@status" {
		if c.req || !m.response {
			return "", errorf(ErrMalformed, "@status exists only on responses")
		}
		if m.status < 100 || m.status > 999 {
			return "", errorf(ErrComponentMissing, "status code %d is not a three-digit code", m.status)
		}
		return strconv.Itoa(m.status), nil
	}
	// Every other derived component describes a request: on a response it
	// must carry req and is read from the request the response answers.
	src := m
	if m.response {
		if !c.req {
			return "", errorf(ErrMalformed, "%s on a response needs the req parameter", c.name)
		}
		if m.req == nil {
			return "", errorf(ErrComponentMissing, "%s;req needs the request the response answers", c.name)
		}
		src = m.req
	} else if c.req {
		return "", errorf(ErrMalformed, "the req parameter is only valid on responses")
	}
	return src.requestValue(c)
}

func (m *message) requestValue(c component) (string, error) {
	switch c.name {
	case "@method":
		if m.method == "" {
			return "", errorf(ErrComponentMissing, "@method")
		}
		return m.method, nil
	case "@authority":
		a := normalizeAuthority(m.authority, m.scheme)
		if a == "" {
			return "", errorf(ErrComponentMissing, "@authority")
		}
		return a, nil
	case "@scheme":
		if m.scheme == "" {
			return "", errorf(ErrComponentMissing, "@scheme")
		}
		return m.scheme, nil
	case "@target-uri":
		a := normalizeAuthority(m.authority, m.scheme)
		if a == "" || m.scheme == "" {
			return "", errorf(ErrComponentMissing, "@target-uri needs a scheme and an authority")
		}
		v := m.scheme + "://" + a + m.pathValue()
		if m.hasQuery {
			v += "?" + m.rawQuery
		}
		return v, nil
	case "@request-target":
		if m.requestTarget == "" {
			return "", errorf(ErrComponentMissing, "@request-target")
		}
		return m.requestTarget, nil
	case "@path":
		return m.pathValue(), nil
	case "@query":
		// An absent query is the lone "?" (RFC 9421 §2.2.7).
		return "?" + m.rawQuery, nil
	case "@query-param":
		return queryParam(m.rawQuery, c.qname)
	}
	return "", errorf(ErrMalformed, "unknown derived component %q", c.name)
}

// pathValue is the absolute path, still percent-encoded; empty means "/"
// (RFC 9421 §2.2.6, RFC 9110 §4.2.3).
func (m *message) pathValue() string {
	if m.path == "" {
		return "/"
	}
	return m.path
}

// normalizeAuthority lower-cases the host and drops an empty or default
// port (RFC 9421 §2.2.3 via RFC 9110 §4.2.3), keeping IPv6 brackets.
func normalizeAuthority(authority, scheme string) string {
	a := strings.ToLower(strings.TrimSpace(authority))
	i := strings.LastIndexByte(a, ':')
	if i < 0 || strings.Contains(a[i:], "]") {
		return a
	}
	host, port := a[:i], a[i+1:]
	if port == "" || (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		return host
	}
	return a
}

// queryParam implements @query-param (RFC 9421 §2.2.8): the query is parsed
// as application/x-www-form-urlencoded and both name and value are
// re-encoded, so the configured name is the encoded form. A parameter that
// is absent or occurs more than once is an error, as the RFC requires.
func queryParam(rawQuery, encodedName string) (string, error) {
	found, value := 0, ""
	for _, pair := range strings.Split(rawQuery, "&") {
		if pair == "" {
			continue
		}
		n, v, _ := strings.Cut(pair, "=")
		if formEncode(formDecode(n)) != encodedName {
			continue
		}
		found++
		value = formEncode(formDecode(v))
	}
	switch found {
	case 0:
		return "", errorf(ErrComponentMissing, "query parameter %q not present", encodedName)
	case 1:
		return value, nil
	}
	return "", errorf(ErrMalformed, "query parameter %q occurs %d times", encodedName, found)
}

// formDecode follows WHATWG URL §5.1: "+" is a space and %XX sequences are
// decoded; malformed escapes are kept literally.
func formDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return toUTF8(b.String())
}

// toUTF8 replaces each invalid UTF-8 sequence with U+FFFD, as WHATWG's
// "UTF-8 decode without BOM" does before names and values are re-encoded.
func toUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		b.WriteRune(r) // RuneError for an invalid byte
		s = s[n:]
	}
	return b.String()
}

// formEncode percent-encodes every byte outside the
// application/x-www-form-urlencoded safe set (alphanumerics and *-._), with
// spaces as %20 rather than "+" (RFC 9421 §2.2.8 examples).
func formEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("*-._", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
