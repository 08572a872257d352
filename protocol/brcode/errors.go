package brcode

import (
	"errors"
	"strconv"
)

// Sentinel errors. Every error returned by this package is an [*Error]
// wrapping exactly one of these, so callers can classify failures with
// errors.Is without parsing messages.
var (
	// ErrSyntax: the TLV structure is malformed (non-digit ID or length,
	// invalid UTF-8), usually because a declared length is wrong and the
	// walk lost its place.
	ErrSyntax = errors.New("malformed TLV")
	// ErrTruncated: the payload ends inside a field.
	ErrTruncated = errors.New("truncated")
	// ErrChecksum: field 63 does not match the CRC of the payload.
	ErrChecksum = errors.New("CRC mismatch")
	// ErrMissing: a mandatory field or sub-field is absent or empty.
	ErrMissing = errors.New("missing mandatory field")
	// ErrDuplicate: a field ID occurs twice at the same level.
	ErrDuplicate = errors.New("duplicate field")
	// ErrOrder: fields are not in ascending ID order, or 00 is not first, or
	// 63 is not last.
	ErrOrder = errors.New("field out of order")
	// ErrUnsupported: a field that has no meaning in a Pix BR Code.
	ErrUnsupported = errors.New("field not allowed in a Pix BR Code")
	// ErrLength: a value is too long or too short for its field.
	ErrLength = errors.New("invalid length")
	// ErrInvalid: a value has the wrong format or characters.
	ErrInvalid = errors.New("invalid value")
	// ErrAmount: field 54 is malformed, zero, negative or too large.
	ErrAmount = errors.New("invalid amount")
	// ErrTxID: field 62-05 breaks the txid rules.
	ErrTxID = errors.New("invalid txid")
	// ErrConflict: fields that exclude each other are both present, such
	// as a Pix key and a location URL.
	ErrConflict = errors.New("conflicting fields")
)

// Error describes why a BR Code could not be encoded or parsed.
type Error struct {
	// Field is the offending field ID ("59"), or "ID-subID" for a
	// sub-field ("26-25"); empty when the payload as a whole is at fault.
	Field string
	// Offset is the byte offset in the parsed payload where the problem
	// was found: the field's ID, or for ErrSyntax the bad header or byte.
	// It is -1 when there is no position (always, from Encode).
	Offset int
	// Err is one of the Err* sentinels.
	Err error
	// Detail is a human-readable explanation; it may be empty.
	Detail string
}

func (e *Error) Error() string {
	b := []byte("brcode: ")
	if e.Field != "" {
		b = append(b, "field "...)
		b = append(b, e.Field...)
		if e.Offset >= 0 {
			b = append(b, " at offset "...)
			b = strconv.AppendInt(b, int64(e.Offset), 10)
		}
		b = append(b, ": "...)
	} else if e.Offset >= 0 {
		b = append(b, "offset "...)
		b = strconv.AppendInt(b, int64(e.Offset), 10)
		b = append(b, ": "...)
	}
	b = append(b, e.Err.Error()...)
	if e.Detail != "" {
		b = append(b, ": "...)
		b = append(b, e.Detail...)
	}
	return string(b)
}

// Unwrap returns the sentinel, for errors.Is.
func (e *Error) Unwrap() error { return e.Err }

func newErr(field string, offset int, kind error, detail string) *Error {
	return &Error{Field: field, Offset: offset, Err: kind, Detail: detail}
}

// subID joins a template ID and a sub-field ID the way the BCB manuals
// write them ("26-01").
func subID(parent, id string) string {
	if parent == "" {
		return id
	}
	return parent + "-" + id
}
