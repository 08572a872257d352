package brcode

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse decodes and validates a Pix BR Code. It checks, in this order: the
// overall length (≤ 512 characters), the TLV structure, field 63 (present,
// last, 4 uppercase hex digits, matching the CRC), the Pix structure
// (00 first, ascending unique IDs apart from 63, mandatory fields, only
// fields Pix defines), and then the same per-field rules as Encode, except that text
// may be any UTF-8 without control characters.
//
// Structure is checked before the CRC so that a truncated or mis-sized
// field is reported as such rather than as a checksum failure. Errors are
// *Error with the field ID and its byte offset. Parse never panics.
func Parse(s string) (*Payload, error) {
	if n := utf8.RuneCountInString(s); n > MaxPayloadLen {
		return nil, newErr("", -1, ErrLength, "payload is "+strconv.Itoa(n)+" characters, maximum 512")
	}
	type item struct {
		id, v string
		off   int
	}
	items := make([]item, 0, 16)
	if err := walkTLV(s, 0, "", func(id, v string, off int) *Error {
		items = append(items, item{id, v, off})
		return nil
	}); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, newErr("", 0, ErrMissing, "empty payload")
	}

	// 63: CRC, always last.
	crcAt := -1
	for k, it := range items {
		if it.id == "63" {
			crcAt = k
			break
		}
	}
	last := items[len(items)-1]
	switch {
	case crcAt < 0:
		return nil, newErr("63", -1, ErrMissing, "no CRC field; it must be the last field")
	case crcAt != len(items)-1:
		return nil, newErr("63", items[crcAt].off, ErrOrder, "the CRC must be the last field")
	case len(last.v) != 4:
		return nil, newErr("63", last.off, ErrLength, "CRC must be 4 hex digits")
	}
	for i := 0; i < 4; i++ {
		if strings.IndexByte(hexUpper, last.v[i]) < 0 {
			return nil, newErr("63", last.off, ErrInvalid, "CRC must be 4 uppercase hex digits")
		}
	}
	if want := Checksum(s[:len(s)-4]); last.v != want {
		return nil, newErr("63", last.off, ErrChecksum, "payload says "+last.v+", computed "+want)
	}

	p := new(Payload)
	var seen [100]bool
	prev := -1
	for k, it := range items {
		n, _ := idNum(it.id)
		switch {
		case k == 0 && it.id != "00":
			for _, o := range items[1:] {
				if o.id == "00" {
					return nil, newErr("00", o.off, ErrOrder, "the payload format indicator must be the first field")
				}
			}
			return nil, newErr("00", 0, ErrMissing, "payload format indicator")
		case n == 63: // already checked to be the last field
		case n == prev:
			return nil, newErr(it.id, it.off, ErrDuplicate, "")
		case n < prev:
			return nil, newErr(it.id, it.off, ErrOrder, "field IDs must be ascending; "+it.id+" follows "+items[k-1].id)
		}
		prev = n
		seen[n] = true
		if it.v == "" && n < 80 {
			return nil, newErr(it.id, it.off, ErrLength, "empty value")
		}
		bad := func(kind error, detail string) (*Payload, error) {
			return nil, newErr(it.id, it.off, kind, detail)
		}
		switch it.id {
		case "00":
			if it.v != "01" {
				return bad(ErrInvalid, strconv.Quote(it.v)+", want \"01\"")
			}
		case "01":
			switch it.v {
			case "11":
				p.Initiation = InitiationReusable
			case "12":
				p.Initiation = InitiationSingleUse
			default:
				return bad(ErrInvalid, strconv.Quote(it.v)+", want \"11\" or \"12\"")
			}
		case "26":
			if err := parseAccount(p, it.v, it.off); err != nil {
				return nil, err
			}
		case "52":
			p.MCC = it.v
		case "53":
			if it.v != Currency {
				return bad(ErrInvalid, strconv.Quote(it.v)+", Pix is always 986 (BRL)")
			}
		case "54":
			a, err := ParseAmount(it.v)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					return nil, err
				}
				e.Offset = it.off
				return nil, e
			}
			if a == 0 {
				return bad(ErrAmount, "zero amount; omit field 54 to let the payer type the amount")
			}
			p.Amount = a
		case "58":
			if it.v != Country {
				return bad(ErrInvalid, strconv.Quote(it.v)+", Pix is always BR")
			}
		case "59":
			p.MerchantName = it.v
		case "60":
			p.MerchantCity = it.v
		case "61":
			p.PostalCode = it.v
		case "62":
			if err := parseAdditional(p, it.v, it.off); err != nil {
				return nil, err
			}
		case "63":
		default:
			if n < 80 {
				return bad(ErrUnsupported, "")
			}
			if err := walkTLV(it.v, it.off+4, it.id, func(string, string, int) *Error { return nil }); err != nil {
				return nil, err
			}
			p.Unreserved = append(p.Unreserved, Field{ID: it.id, Value: it.v})
		}
	}
	for _, id := range [...]int{26, 52, 53, 58, 59, 60, 62} {
		if !seen[id] {
			return nil, newErr(strconv.Itoa(id), -1, ErrMissing, "")
		}
	}
	if err := p.validate(false); err != nil {
		err.Offset = locate(s, err.Field)
		return nil, err
	}
	return p, nil
}

// ascending returns a walkTLV callback wrapper that enforces strictly
// ascending sub-field IDs, so that re-encoding a parsed code is exact.
func ascending(parent string, fn func(id, v string, off int) *Error) func(id, v string, off int) *Error {
	prev := -1
	return func(id, v string, off int) *Error {
		n, _ := idNum(id)
		switch {
		case n == prev:
			return newErr(subID(parent, id), off, ErrDuplicate, "")
		case n < prev:
			return newErr(subID(parent, id), off, ErrOrder, "sub-field IDs must be ascending")
		}
		prev = n
		return fn(id, v, off)
	}
}

// parseAccount reads the Pix merchant account template (26).
func parseAccount(p *Payload, v string, off int) *Error {
	first := true
	err := walkTLV(v, off+4, "26", ascending("26", func(id, v string, off int) *Error {
		if first && id != "00" {
			return newErr("26-00", off, ErrMissing, "the GUI must be the first sub-field")
		}
		first = false
		if v == "" {
			return newErr(subID("26", id), off, ErrLength, "empty value")
		}
		switch id {
		case "00":
			p.GUI = v
		case "01":
			p.Key = v
		case "02":
			p.Info = v
		case "25":
			p.URL = v
		default:
			return newErr(subID("26", id), off, ErrUnsupported, "the Pix template defines only 00, 01, 02 and 25")
		}
		return nil
	}))
	if err != nil {
		return err
	}
	if first {
		return newErr("26-00", off, ErrMissing, "empty Pix template")
	}
	return nil
}

// parseAdditional reads the additional data template (62).
func parseAdditional(p *Payload, v string, off int) *Error {
	hasTxID := false
	err := walkTLV(v, off+4, "62", ascending("62", func(id, v string, off int) *Error {
		if id != "05" {
			p.AdditionalData = append(p.AdditionalData, Field{ID: id, Value: v})
			return nil
		}
		if v == "" {
			return newErr("62-05", off, ErrLength, "empty txid; use *** for none")
		}
		hasTxID = true
		if v != "***" {
			p.TxID = v
		}
		return nil
	}))
	if err != nil {
		return err
	}
	if !hasTxID {
		return newErr("62-05", off, ErrMissing, "reference label (txid, or ***)")
	}
	return nil
}

// errStop ends a walk early; it never escapes this file.
var errStop = &Error{}

// locate finds the byte offset of field ("59" or "26-01") in s, falling
// back to the parent template, or -1. It runs only on the error path, so
// the happy path keeps no offset table.
func locate(s, field string) int {
	top, sub, _ := strings.Cut(field, "-")
	off := -1
	_ = walkTLV(s, 0, "", func(id, v string, o int) *Error {
		if id != top {
			return nil
		}
		off = o
		if sub != "" {
			_ = walkTLV(v, o+4, top, func(id, _ string, o int) *Error {
				if id == sub {
					off = o
					return errStop
				}
				return nil
			})
		}
		return errStop
	})
	return off
}
