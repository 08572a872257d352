package brcode

import "strconv"

// MaxAmount is the largest amount, in centavos, that fits field 54 (13
// characters with two decimals: "9999999999.99"). It is also the largest
// "valor" the API Pix accepts (\d{1,10}\.\d{2}).
const MaxAmount int64 = 999_999_999_999

// FormatAmount renders centavos as the decimal string used by field 54 and
// the API Pix ("123.45", "1.00", "0.05"). It uses integer arithmetic only;
// cents must be in [0, MaxAmount].
func FormatAmount(cents int64) (string, error) {
	if cents < 0 || cents > MaxAmount {
		return "", newErr("54", -1, ErrAmount, "amount "+strconv.FormatInt(cents, 10)+
			" centavos is outside [0, "+strconv.FormatInt(MaxAmount, 10)+"]")
	}
	var buf [16]byte
	return string(appendAmount(buf[:0], cents)), nil
}

func appendAmount(b []byte, cents int64) []byte {
	b = strconv.AppendInt(b, cents/100, 10)
	c := cents % 100
	return append(b, '.', byte('0'+c/10), byte('0'+c%10))
}

// ParseAmount parses a field-54 / API Pix amount into centavos. It accepts
// only the canonical form FormatAmount produces: 1-10 integer digits
// without leading zeros (except "0"), a dot, and exactly two decimals. The
// strictness keeps "1,00", "1.5", "01.00" or "1e3" from being read as
// something the payer did not see.
func ParseAmount(s string) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, newErr("54", -1, ErrAmount, strconv.Quote(s)+": "+why)
	}
	if len(s) > 13 {
		return bad("longer than 13 characters")
	}
	dot := len(s) - 3
	if dot < 1 || s[dot] != '.' {
		return bad("want digits, '.' and exactly two decimals")
	}
	if dot > 1 && s[0] == '0' {
		return bad("leading zero")
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if i == dot {
			continue
		}
		c := s[i]
		if c < '0' || c > '9' {
			return bad("want digits, '.' and exactly two decimals")
		}
		v = v*10 + int64(c-'0') // at most 12 digits: cannot overflow
	}
	return v, nil
}
