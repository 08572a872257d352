package money

import "testing"

func TestFormatBRL(t *testing.T) {
	for cents, want := range map[int64]string{
		0: "R$ 0,00", 5: "R$ 0,05", 99: "R$ 0,99", 100: "R$ 1,00", 11980: "R$ 119,80",
		123456: "R$ 1.234,56", 100000000: "R$ 1.000.000,00", -1198: "-R$ 11,98", -5: "-R$ 0,05", -1099: "-R$ 10,99",
		99999: "R$ 999,99", 100000: "R$ 1.000,00", 12345678: "R$ 123.456,78", -100000: "-R$ 1.000,00", -123456789: "-R$ 1.234.567,89",
		-99: "-R$ 0,99", -100: "-R$ 1,00", 9007199254740991: "R$ 90.071.992.547.409,91",
		9223372036854775807:  "R$ 92.233.720.368.547.758,07",
		-9223372036854775808: "-R$ 92.233.720.368.547.758,08",
	} {
		if got := FormatBRL(cents); got != want {
			t.Errorf("FormatBRL(%d) = %q, want %q", cents, got, want)
		}
	}
	for cents, want := range map[int64]string{0: "0,00", 5: "0,05", 123456: "1234,56", -1099: "-10,99"} {
		if got := FormatReais(cents); got != want {
			t.Errorf("FormatReais(%d) = %q, want %q", cents, got, want)
		}
	}
	for cents, want := range map[int64]string{0: "0.00", 5: "0.05", 18470: "184.70", 123456: "1234.56", -1099: "-10.99"} {
		if got := FormatDecimal(cents); got != want {
			t.Errorf("FormatDecimal(%d) = %q, want %q", cents, got, want)
		}
	}
}

func TestParseBRL(t *testing.T) {
	ok := map[string]int64{
		"0": 0, "12": 1200, "12,9": 1290, "12,90": 1290, "1.234,56": 123456, "R$ 1.234,56": 123456, "r$0,99": 99,
		"12.50": 1250, "12.5": 1250, "1.234": 123400, "1.234.567,89": 123456789, ",5": 50, " 49,90 ": 4990,
		"10000000000,00": 1_000_000_000_000,
	}
	for in, want := range ok {
		got, msg := ParseBRL(in)
		if msg != "" || got != want {
			t.Errorf("ParseBRL(%q) = %d %q, want %d", in, got, msg, want)
		}
	}
	for _, in := range []string{"", "-1", "-0,01", "1,234", "12,3a", "abc", "1e3", "1,2,3", "12.345,6.7", "1.23.45", "10000000001,00", "99999999999999999999", "0x10", "1 234,00x"} {
		if got, msg := ParseBRL(in); msg == "" {
			t.Errorf("ParseBRL(%q) = %d, want an error", in, got)
		}
	}
	// Round trip of the edit form's value.
	for _, c := range []int64{0, 1, 99, 100, 123456, 999999999} {
		if got, msg := ParseBRL(FormatReais(c)); msg != "" || got != c {
			t.Errorf("round trip %d → %q → %d %q", c, FormatReais(c), got, msg)
		}
	}
}
