package brcode

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// f builds one data object for hand-made test payloads.
func f(id, v string) string {
	n := utf8.RuneCountInString(v)
	return id + string(rune('0'+n/10)) + string(rune('0'+n%10)) + v
}

// withCRC appends a correct field 63, so a test payload fails only for the
// rule it is about.
func withCRC(body string) string {
	body += "6304"
	return body + Checksum(body)
}

var (
	hdr      = f("00", "01")
	acct     = f("26", f("00", GUI)+f("01", evp))
	acctDyn  = f("26", f("00", GUI)+f("25", loc))
	mid      = f("52", "0000") + f("53", "986")
	place    = f("58", "BR") + f("59", "Fulano de Tal") + f("60", "BRASILIA")
	noTxID   = f("62", f("05", "***"))
	goodBody = hdr + acct + mid + place + noTxID
)

func TestParseErrors(t *testing.T) {
	good := withCRC(goodBody)
	if _, err := Parse(good); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	// A payload whose CRC has hex letters, with the CRC in lower case.
	var lowerCRC string
	for i := 0; lowerCRC == ""; i++ {
		c := withCRC(hdr + acct + mid + place + f("62", f("05", "T"+strconv.Itoa(i))))
		if low := strings.ToLower(c[len(c)-4:]); low != c[len(c)-4:] {
			lowerCRC = c[:len(c)-4] + low
		}
	}

	cases := []struct {
		name  string
		s     string
		kind  error
		field string
	}{
		{"empty", "", ErrMissing, ""},
		{"one char", "0", ErrTruncated, ""},
		{"no length", "000", ErrTruncated, "00"},
		{"length not digits", withCRC(hdr + acct + mid + "59AB"), ErrSyntax, "59"},
		{"id not digits", withCRC(hdr + "X1" + acct), ErrSyntax, ""},
		{"over 512", withCRC(hdr + strings.Repeat(f("80", strings.Repeat("x", 95)), 6)), ErrLength, ""},
		{"lower-case CRC", lowerCRC, ErrInvalid, "63"},
		{"CRC not last", withCRC(goodBody+"6304ABCD") + "8000", ErrOrder, "63"},
		{"CRC 5 chars", goodBody + "63051D3D0", ErrLength, "63"},
		{"CRC mismatch", goodBody + "6304ABCD", ErrChecksum, "63"},
		{"00 not first", withCRC(f("01", "12") + hdr + acct + mid + place + noTxID), ErrOrder, "00"},
		{"00 missing", withCRC(acct + mid + place + noTxID), ErrMissing, "00"},
		{"00 wrong", withCRC(f("00", "02") + acct + mid + place + noTxID), ErrInvalid, "00"},
		{"duplicate 59", withCRC(hdr + acct + mid + f("58", "BR") + f("59", "A") + f("59", "B") + f("60", "C") + noTxID), ErrDuplicate, "59"},
		{"descending", withCRC(hdr + acct + mid + f("58", "BR") + f("60", "C") + f("59", "A") + noTxID), ErrOrder, "59"},
		{"unsupported 02", withCRC(hdr + f("02", "4111") + acct + mid + place + noTxID), ErrUnsupported, "02"},
		{"unsupported 27", withCRC(hdr + acct + f("27", f("00", "x")) + mid + place + noTxID), ErrUnsupported, "27"},
		{"unsupported 55", withCRC(hdr + acct + mid + f("55", "01") + place + noTxID), ErrUnsupported, "55"},
		{"unsupported 64", withCRC(goodBody + f("64", f("00", "PT"))), ErrUnsupported, "64"},
		{"currency 840", withCRC(hdr + acct + f("52", "0000") + f("53", "840") + place + noTxID), ErrInvalid, "53"},
		{"country US", withCRC(hdr + acct + mid + f("58", "US") + f("59", "A") + f("60", "C") + noTxID), ErrInvalid, "58"},
		{"initiation 13", withCRC(hdr + f("01", "13") + acct + mid + place + noTxID), ErrInvalid, "01"},
		{"amount zero", withCRC(hdr + acct + mid + f("54", "0.00") + place + noTxID), ErrAmount, "54"},
		{"amount one decimal", withCRC(hdr + acct + mid + f("54", "1.5") + place + noTxID), ErrAmount, "54"},
		{"amount no decimals", withCRC(hdr + acct + mid + f("54", "10") + place + noTxID), ErrAmount, "54"},
		{"amount overflow", withCRC(hdr + acct + mid + f("54", "12345678901.00") + place + noTxID), ErrAmount, "54"},
		{"amount huge", withCRC(hdr + acct + mid + f("54", strings.Repeat("9", 40)+".00") + place + noTxID), ErrAmount, "54"},
		{"amount leading zero", withCRC(hdr + acct + mid + f("54", "01.00") + place + noTxID), ErrAmount, "54"},
		{"amount negative", withCRC(hdr + acct + mid + f("54", "-1.00") + place + noTxID), ErrAmount, "54"},
		{"amount spaces", withCRC(hdr + acct + mid + f("54", " 1.00") + place + noTxID), ErrAmount, "54"},
		{"26 empty", withCRC(hdr + f("26", "") + mid + place + noTxID), ErrLength, "26"},
		{"26 GUI not first", withCRC(hdr + f("26", f("01", evp)+f("00", GUI)) + mid + place + noTxID), ErrMissing, "26-00"},
		{"26 wrong GUI", withCRC(hdr + f("26", f("00", "br.gov.bcb.brcode")+f("01", evp)) + mid + place + noTxID), ErrInvalid, "26-00"},
		{"26 unknown sub", withCRC(hdr + f("26", f("00", GUI)+f("01", evp)+f("03", "x")) + mid + place + noTxID), ErrUnsupported, "26-03"},
		{"26 sub order", withCRC(hdr + f("26", f("00", GUI)+f("02", "x")+f("01", evp)) + mid + place + noTxID), ErrOrder, "26-01"},
		{"26 sub dup", withCRC(hdr + f("26", f("00", GUI)+f("01", evp)+f("01", evp)) + mid + place + noTxID), ErrDuplicate, "26-01"},
		{"26 empty key", withCRC(hdr + f("26", f("00", GUI)+"0100") + mid + place + noTxID), ErrLength, "26-01"},
		{"26 no key", withCRC(hdr + f("26", f("00", GUI)) + mid + place + noTxID), ErrMissing, "26-01"},
		{"26 bad key", withCRC(hdr + f("26", f("00", GUI)+f("01", "12345678901")) + mid + place + noTxID), ErrInvalid, "26-01"},
		{"26 inner truncated", withCRC(hdr + f("26", "0014x") + mid + place + noTxID), ErrTruncated, "26-00"},
		{"62 without 05", withCRC(hdr + acct + mid + place + f("62", f("07", "x"))), ErrMissing, "62-05"},
		{"62-05 empty", withCRC(hdr + acct + mid + place + f("62", "0500")), ErrLength, "62-05"},
		{"62 order", withCRC(hdr + acct + mid + place + f("62", f("07", "x")+f("05", "***"))), ErrOrder, "62-05"},
		{"static txid hyphen", withCRC(hdr + acct + mid + place + f("62", f("05", "RP1-2019"))), ErrTxID, "62-05"},
		{"dynamic without 01", withCRC(hdr + acctDyn + mid + place + noTxID), ErrMissing, "01"},
		{"dynamic 01=11", withCRC(hdr + f("01", "11") + acctDyn + mid + place + noTxID), ErrConflict, "01"},
		{"dynamic with info", withCRC(hdr + f("01", "12") + f("26", f("00", GUI)+f("02", "x")+f("25", loc)) + mid + place + noTxID), ErrConflict, "26-02"},
		{"missing 52", withCRC(hdr + acct + f("53", "986") + place + noTxID), ErrMissing, "52"},
		{"missing 59", withCRC(hdr + acct + mid + f("58", "BR") + f("60", "C") + noTxID), ErrMissing, "59"},
		{"empty name", withCRC(hdr + acct + mid + f("58", "BR") + "5900" + f("60", "C") + noTxID), ErrLength, "59"},
		{"control in name", withCRC(hdr + acct + mid + f("58", "BR") + f("59", "A\tB") + f("60", "C") + noTxID), ErrInvalid, "59"},
		{"C1 control in city", withCRC(hdr + acct + mid + f("58", "BR") + f("59", "A") + f("60", "C\u0085") + noTxID), ErrInvalid, "60"},
		{"invalid UTF-8", withCRC(hdr + acct + mid + f("58", "BR") + "5903A\xffB" + f("60", "C") + noTxID), ErrSyntax, ""},
		{"bad mcc", withCRC(hdr + acct + f("52", "00a0") + f("53", "986") + place + noTxID), ErrInvalid, "52"},
		{"unreserved not TLV", withCRC(goodBody + f("80", "hello")), ErrSyntax, "80"},
		{"unreserved order", withCRC(goodBody + f("81", "") + f("80", "")), ErrOrder, "80"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(c.s)
			if err == nil {
				t.Fatalf("Parse accepted %q: %+v", c.s, p)
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.kind) || e.Field != c.field {
				t.Fatalf("got %v (field %q), want %v on field %q", err, fieldOf(e), c.kind, c.field)
			}
			if e.Offset < -1 || e.Offset > len(c.s) {
				t.Fatalf("offset %d out of range", e.Offset)
			}
			// The offset points at the field's own ID, when it exists
			// (syntax errors point at the bad header instead).
			if e.Offset >= 0 && e.Field != "" && !errors.Is(err, ErrMissing) && !errors.Is(err, ErrSyntax) {
				id := e.Field[strings.LastIndexByte(e.Field, '-')+1:]
				if !strings.HasPrefix(c.s[e.Offset:], id) {
					t.Fatalf("offset %d points at %q, not field %s", e.Offset, c.s[e.Offset:], e.Field)
				}
			}
		})
	}
}

func fieldOf(e *Error) string {
	if e == nil {
		return "<not *Error>"
	}
	return e.Field
}

func TestParseAcceptsUTF8Text(t *testing.T) {
	s := withCRC(hdr + acct + mid + f("58", "BR") + f("59", "Padaria Açaí") + f("60", "São Paulo") + noTxID)
	p, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if p.MerchantCity != "São Paulo" || p.MerchantName != "Padaria Açaí" {
		t.Fatalf("got %+v", p)
	}
	// We never write non-ASCII: re-encoding asks for normalisation.
	if _, err := p.Encode(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "NormalizeName") {
		t.Fatalf("Encode of non-ASCII: %v", err)
	}
	p.MerchantName, p.MerchantCity = NormalizeName(p.MerchantName), NormalizeCity(p.MerchantCity)
	out, err := p.Encode()
	if err != nil || !strings.Contains(out, "5912PADARIA ACAI6009SAO PAULO") {
		t.Fatalf("Encode = %q, %v", out, err)
	}
	// Lengths count characters: 16 characters in 17 bytes is over the limit.
	city15 := withCRC(hdr + acct + mid + f("58", "BR") + f("59", "A") + f("60", "São José do Rio") + noTxID)
	if _, err := Parse(city15); err != nil {
		t.Fatalf("15-character city rejected: %v", err)
	}
	tooLong := withCRC(hdr + acct + mid + f("58", "BR") + f("59", "A") + f("60", "São José do Rioo") + noTxID)
	if _, err := Parse(tooLong); !errors.Is(err, ErrLength) {
		t.Fatalf("16-character city: %v", err)
	}
}

func TestParseKeepsExtras(t *testing.T) {
	s := withCRC(hdr + f("01", "11") + acct + f("52", "5411") + f("53", "986") + f("54", "10.00") + place +
		f("61", "70040010") + f("62", f("01", "nf")+f("05", "PEDIDO42")+f("50", f("00", "br.gov.bcb.brcode")+f("01", "1.0.0"))) +
		f("80", f("00", "br.com.example")+f("01", "v")) + f("99", ""))
	p, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	want := Payload{Key: evp, GUI: GUI, Initiation: InitiationReusable, MCC: "5411", Amount: 1000,
		MerchantName: "Fulano de Tal", MerchantCity: "BRASILIA", PostalCode: "70040010", TxID: "PEDIDO42",
		AdditionalData: []Field{{"01", "nf"}, {"50", "0017br.gov.bcb.brcode01051.0.0"}},
		Unreserved:     []Field{{"80", "0014br.com.example0101v"}, {"99", ""}}}
	if !reflect.DeepEqual(*p, want) {
		t.Fatalf("got  %+v\nwant %+v", *p, want)
	}
	if out, err := p.Encode(); err != nil || out != s {
		t.Fatalf("re-encode %q, %v", out, err)
	}
}

func TestCRC16(t *testing.T) {
	// Bit-by-bit reference, independent of the table.
	ref := func(b []byte) uint16 {
		crc := uint16(0xFFFF)
		for _, c := range b {
			crc ^= uint16(c) << 8
			for range 8 {
				if crc&0x8000 != 0 {
					crc = crc<<1 ^ 0x1021
				} else {
					crc <<= 1
				}
			}
		}
		return crc
	}
	if got := CRC16([]byte("123456789")); got != 0x29B1 {
		t.Fatalf("check value %04X, want 29B1", got)
	}
	if got := CRC16(nil); got != 0xFFFF {
		t.Fatalf("empty %04X, want FFFF (init, no xorout)", got)
	}
	buf := make([]byte, 0, 600)
	for i := range 600 {
		if got, want := CRC16(buf), ref(buf); got != want {
			t.Fatalf("len %d: %04X != %04X", len(buf), got, want)
		}
		buf = append(buf, byte(i*131+7))
	}
	if got := Checksum("\x00\x0f"); len(got) != 4 || strings.ToUpper(got) != got {
		t.Fatalf("Checksum %q: want 4 upper-case hex digits", got)
	}
	// Zero-padded to four digits.
	for i := 0; ; i++ {
		in := strconv.Itoa(i)
		if c := CRC16([]byte(in)); c < 0x1000 {
			if got := Checksum(in); got != fmt.Sprintf("%04X", c) {
				t.Fatalf("Checksum(%q) = %q, want %04X", in, got, c)
			}
			break
		}
	}
}

func TestTLV(t *testing.T) {
	const emv = "00020101021264200002ZH0104最佳运输0202北京6304A13A"
	fs, err := DecodeTLV(emv)
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{{"00", "01"}, {"01", "12"}, {"64", "0002ZH0104最佳运输0202北京"}, {"63", "A13A"}}
	if !reflect.DeepEqual(fs, want) {
		t.Fatalf("got %q", fs)
	}
	if out, err := EncodeTLV(fs); err != nil || out != emv {
		t.Fatalf("EncodeTLV = %q, %v", out, err)
	}
	if !IsTemplate("64") || !IsTemplate("26") || !IsTemplate("51") || !IsTemplate("62") || !IsTemplate("80") || !IsTemplate("99") {
		t.Fatal("template IDs")
	}
	if IsTemplate("25") || IsTemplate("52") || IsTemplate("63") || IsTemplate("65") || IsTemplate("79") || IsTemplate("x") {
		t.Fatal("primitive IDs")
	}
	if fs, err := DecodeTLV(""); err != nil || len(fs) != 0 {
		t.Fatalf("empty: %v %v", fs, err)
	}
	for s, kind := range map[string]error{
		"0":          ErrTruncated,
		"00":         ErrTruncated,
		"000":        ErrTruncated,
		"0003ab":     ErrTruncated,
		"0a02ab":     ErrSyntax,
		"00x2ab":     ErrSyntax,
		"0002ab\xff": ErrSyntax,
		"0002北":      ErrTruncated,
	} {
		if _, err := DecodeTLV(s); !errors.Is(err, kind) {
			t.Errorf("DecodeTLV(%q) = %v, want %v", s, err, kind)
		}
	}
	for _, bad := range [][]Field{{{"1", ""}}, {{"0a", ""}}, {{"00", strings.Repeat("x", 100)}}, {{"00", "\xff"}}} {
		if _, err := EncodeTLV(bad); err == nil {
			t.Errorf("EncodeTLV(%q) succeeded", bad)
		}
	}
	if out, err := EncodeTLV([]Field{{"00", strings.Repeat("é", 99)}}); err != nil || !strings.HasPrefix(out, "0099") {
		t.Errorf("99 two-byte characters: %q, %v", out[:6], err)
	}
}

func TestAmount(t *testing.T) {
	for cents, s := range map[int64]string{
		0: "0.00", 1: "0.01", 10: "0.10", 100: "1.00", 505: "5.05", 12345: "123.45",
		100000: "1000.00", MaxAmount: "9999999999.99",
	} {
		got, err := FormatAmount(cents)
		if err != nil || got != s {
			t.Errorf("FormatAmount(%d) = %q, %v; want %q", cents, got, err, s)
		}
		back, err := ParseAmount(s)
		if err != nil || back != cents {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d", s, back, err, cents)
		}
	}
	for _, c := range []int64{-1, MaxAmount + 1, 1 << 62} {
		if _, err := FormatAmount(c); !errors.Is(err, ErrAmount) {
			t.Errorf("FormatAmount(%d) = %v", c, err)
		}
	}
	for _, s := range []string{"", ".", "1", "1.", ".00", "1.0", "1.000", "1,00", "01.00", "00.00", "-1.00",
		"+1.00", "1 .00", "1e2.00", "1.0a", "10000000000.00", "99999999999999999999.00", "１.00", "0x1.00"} {
		if v, err := ParseAmount(s); !errors.Is(err, ErrAmount) {
			t.Errorf("ParseAmount(%q) = %d, %v; want ErrAmount", s, v, err)
		}
	}
	// Every value of a dense sweep survives the trip through text.
	for c := int64(0); c < 200_000; c += 7 {
		s, _ := FormatAmount(c)
		if back, err := ParseAmount(s); err != nil || back != c {
			t.Fatalf("%d -> %q -> %d, %v", c, s, back, err)
		}
	}
}
