package brcode

import (
	"strconv"
	"unicode/utf8"
)

// Field is one EMV MPM data object. For a template (see [IsTemplate]) Value
// is the encoded list of its sub-fields; decode it with [DecodeTLV].
type Field struct {
	ID    string // two ASCII digits, "00" to "99"
	Value string // at most 99 characters
}

// maxValueLen is the largest length two decimal digits can declare.
const maxValueLen = 99

// IsTemplate reports whether the top-level ID holds nested TLVs in EMV MPM:
// merchant account templates 26-51, additional data 62, language template
// 64 and unreserved templates 80-99. IDs 02-25 are primitive scheme fields.
func IsTemplate(id string) bool {
	n, ok := idNum(id)
	return ok && (n >= 26 && n <= 51 || n == 62 || n == 64 || n >= 80)
}

// DecodeTLV splits s into one level of data objects, in the order they
// appear. Lengths count characters, not bytes, as in the EMVCo example with
// Chinese text. It applies no Pix rule and does not check the CRC: use
// [Parse] for that.
func DecodeTLV(s string) ([]Field, error) {
	var fs []Field
	err := walkTLV(s, 0, "", func(id, v string, _ int) *Error {
		fs = append(fs, Field{ID: id, Value: v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return fs, nil
}

// EncodeTLV is the inverse of [DecodeTLV]: it concatenates fields in the
// given order. It fails on a malformed ID, a value longer than 99
// characters, or invalid UTF-8.
func EncodeTLV(fields []Field) (string, error) {
	var b []byte
	for _, f := range fields {
		if _, ok := idNum(f.ID); !ok {
			return "", newErr(f.ID, -1, ErrSyntax, "ID must be two digits")
		}
		if !utf8.ValidString(f.Value) {
			return "", newErr(f.ID, -1, ErrSyntax, "value is not valid UTF-8")
		}
		n := utf8.RuneCountInString(f.Value)
		if n > maxValueLen {
			return "", newErr(f.ID, -1, ErrLength, "value is "+strconv.Itoa(n)+" characters, maximum 99")
		}
		b = append(b, f.ID...)
		b = append(b, byte('0'+n/10), byte('0'+n%10))
		b = append(b, f.Value...)
	}
	return string(b), nil
}

// walkTLV calls fn for each data object of s. base is the byte offset of s
// in the whole payload and parent the enclosing template ID, both only for
// error reports. fn receives the byte offset of the object's ID.
func walkTLV(s string, base int, parent string, fn func(id, value string, off int) *Error) *Error {
	if !utf8.ValidString(s) {
		i := 0
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return newErr(parent, base+i, ErrSyntax, "invalid UTF-8")
	}
	i, prev := 0, ""
	// after names the previous field in syntax errors: a bad header right
	// after a field almost always means that field's length is wrong.
	after := func() string {
		if prev == "" {
			return ""
		}
		return " (after field " + prev + ": is its declared length right?)"
	}
	for i < len(s) {
		off := base + i
		if len(s)-i < 2 {
			return newErr(parent, off, ErrTruncated, "payload ends inside a field ID")
		}
		id := s[i : i+2]
		if _, ok := idNum(id); !ok {
			return newErr(parent, off, ErrSyntax, "field ID "+strconv.Quote(id)+" is not two digits"+after())
		}
		name := subID(parent, id)
		if len(s)-i < 4 {
			return newErr(name, off, ErrTruncated, "payload ends inside the length")
		}
		n, ok := idNum(s[i+2 : i+4])
		if !ok {
			return newErr(name, off, ErrSyntax, "length "+strconv.Quote(s[i+2:i+4])+" is not two digits"+after())
		}
		start := i + 4
		end := start
		for k := 0; k < n; k++ {
			if end >= len(s) {
				return newErr(name, off, ErrTruncated,
					"declares length "+strconv.Itoa(n)+" but only "+strconv.Itoa(k)+" characters remain")
			}
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
		}
		if err := fn(id, s[start:end], off); err != nil {
			return err
		}
		i, prev = end, name
	}
	return nil
}

// idNum parses exactly two ASCII digits.
func idNum(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// appendTLV appends a data object whose value is known to be ASCII and at
// most 99 bytes long (the encoder validates both first).
func appendTLV(b []byte, id, v string) []byte {
	return append(appendHeader(b, id, len(v)), v...)
}

// appendHeader appends ID and 2-digit length; it is split out so templates
// can be written in place without building the value first.
func appendHeader(b []byte, id string, n int) []byte {
	return append(b, id[0], id[1], byte('0'+n/10), byte('0'+n%10))
}
