// Copyright 2026 The bcp authors. bcp patch 4 (PATCHES.md); not in the
// upstream SDK.

package mcp

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
)

// bcp patch 6 (PATCHES.md): what marshalText writes is valid JSON on one
// line by construction (the structured content was checked, the text is
// escaped, the rest is constant), so the JSON-RPC response need not check
// it again.
func init() {
	jsonrpc2.OneLineResult = func(result any) ([]byte, bool) {
		if x, ok := result.(*CallToolResult); ok && x != nil {
			return x.marshalText()
		}
		return nil, false
	}
}

// marshalText writes the common result, one TextContent and raw
// structured content, directly: the bytes encoding/json makes of it,
// without its compaction pass over the structured content and over the
// text content's own encoding (about 60 µs for a 4 KB checkout, twice in
// the answer). Anything else, or structured content that compaction would
// change, is left to MarshalJSON's general path.
func (x *CallToolResult) marshalText() ([]byte, bool) {
	if len(x.Meta) != 0 || x.InputRequests != nil || x.RequestState != "" || len(x.Content) != 1 {
		return nil, false
	}
	if x.resultType != "" && x.resultType != resultTypeComplete && x.resultType != resultTypeInputRequired {
		return nil, false
	}
	tc, ok := x.Content[0].(*TextContent)
	if !ok || len(tc.Meta) != 0 || tc.Annotations != nil {
		return nil, false
	}
	raw, ok := x.StructuredContent.(json.RawMessage)
	if !ok || !compactAsIs(raw) || !segjson.Valid(raw) {
		return nil, false
	}
	// The text escaped as json.Marshal escapes a string (bcp patch 6:
	// appended in place instead of through json.Marshal's own buffer).
	// Room for the text with its quotes and backslashes escaped (a JSON
	// text is full of them; anything else to escape is rare).
	escaped := len(tc.Text) + strings.Count(tc.Text, `"`) + strings.Count(tc.Text, `\`) + 2
	b := make([]byte, 0, escaped+len(raw)+96)
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = appendJSONString(b, tc.Text)
	b = append(b, `}],"structuredContent":`...)
	b = append(b, raw...)
	if x.IsError {
		b = append(b, `,"isError":true`...)
	}
	if x.resultType != "" {
		b = append(b, `,"resultType":"`...)
		b = append(b, x.resultType...)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

// compactAsIs reports whether encoding/json's compaction (with HTML
// escaping, as json.Marshal does) would leave the JSON text b unchanged:
// no whitespace outside strings, and none of the characters it escapes
// (<, >, &, U+2028, U+2029) anywhere. It does not check validity.
func compactAsIs(b []byte) bool {
	inString, escaped := false, false
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9): // U+2028, U+2029
			return false
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

// appendJSONString appends s as a JSON string exactly as json.Marshal
// writes one (encoding/json's appendString with HTML escaping): ", \ and
// the control characters escaped (\b \f \n \r \t by name, the others
// and <, >, & as \u00XX), invalid UTF-8 as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029 (bcp patch 6).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
