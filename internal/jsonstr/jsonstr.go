// Package jsonstr writes JSON strings with only the escapes JSON requires
// (the quote, the backslash and control characters as \u00XX): the form
// RFC 7638 thumbprints and RFC 8785 canonical JSON ask for, and a cheap
// one for documents the platform writes by hand.
package jsonstr

// Append appends s to b as a JSON string. It does not check that s is
// valid UTF-8: callers that must refuse invalid text check it first.
func Append(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
