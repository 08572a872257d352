package brcode

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is a
// well-formed *Error, and that anything it accepts in ASCII re-encodes to
// exactly the same string (the encoder and parser agree on every rule).
// Seeds are the shared vectors plus a few hand-made codes.
func FuzzParse(f *testing.F) {
	v := loadVectors(f)
	for _, x := range v.Valid {
		f.Add(x.Payload)
	}
	for _, x := range v.InvalidDerived {
		f.Add(x.Payload)
	}
	f.Add("")
	f.Add(withCRC(goodBody + f0("80", "0004test")))
	f.Add(withCRC(hdr + f0("01", "11") + acct + f0("52", "5411") + mid[8:] + f0("54", "10.00") + place +
		f0("61", "70040010") + f0("62", f0("01", "nf")+f0("05", "PEDIDO42"))))

	sentinels := []error{ErrSyntax, ErrTruncated, ErrChecksum, ErrMissing, ErrDuplicate, ErrOrder,
		ErrUnsupported, ErrLength, ErrInvalid, ErrAmount, ErrTxID, ErrConflict}
	check := func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			if e.Offset < -1 || e.Offset > len(s) {
				t.Fatalf("offset %d outside [-1, %d]", e.Offset, len(s))
			}
			known := false
			for _, k := range sentinels {
				known = known || errors.Is(err, k)
			}
			if !known {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			_ = e.Error()
			return
		}
		out, err := p.Encode()
		if !isASCII(s) {
			return // Parse accepts UTF-8 text that Encode, by design, refuses
		}
		if err != nil {
			t.Fatalf("Parse accepted %q but Encode fails: %v", s, err)
		}
		if out != s {
			t.Fatalf("Encode(Parse(s)) differs\n  s %q\nout %q", s, out)
		}
		q, err := Parse(out)
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("second parse: %v\n%+v\n%+v", err, p, q)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		check(t, s)
		// Almost every mutation breaks the CRC; also try the input with a
		// correct one so the Pix rules behind the CRC check get fuzzed too.
		if n := len(s); n >= 8 && s[n-8:n-4] == "6304" {
			s = s[:n-8]
		}
		check(t, withCRC(s))
	})
}

// FuzzTLV checks that generic decoding is lossless.
func FuzzTLV(f *testing.F) {
	for _, x := range loadVectors(f).Valid {
		f.Add(x.Payload)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := DecodeTLV(s)
		if err != nil {
			return
		}
		out, err := EncodeTLV(fs)
		if err != nil || out != s {
			t.Fatalf("EncodeTLV(DecodeTLV(%q)) = %q, %v", s, out, err)
		}
	})
}

// f0 is f for fuzz seeds (f is taken by *testing.F there).
func f0(id, v string) string { return f(id, v) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
