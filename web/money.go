package web

import (
	"regexp"
	"strconv"
)

// formatBRL renders centavos as "R$ 1.234,56" ("-R$ 11,98" when
// negative) with integer arithmetic only: money never touches a float.
func formatBRL(cents int64) string {
	// Work on the magnitude as uint64 so math.MinInt64 has one too.
	mag := uint64(cents)
	if cents < 0 {
		mag = -mag
	}
	digits := strconv.FormatUint(mag/100, 10)
	grouped := make([]byte, 0, len(digits)+len(digits)/3)
	for i := 0; i < len(digits); i++ {
		if i > 0 && (len(digits)-i)%3 == 0 {
			grouped = append(grouped, '.')
		}
		grouped = append(grouped, digits[i])
	}
	c := mag % 100
	s := "R$ " + string(grouped) + "," + string([]byte{byte('0' + c/10), byte('0' + c%10)})
	if cents < 0 {
		return "-" + s
	}
	return s
}

// pixAmount is the API Pix decimal format ("123.45"): exactly two decimals.
var pixAmount = regexp.MustCompile(`^([0-9]{1,13})\.([0-9]{2})$`)

// parsePixAmount turns "123.45" into 12345 centavos; ok is false for
// anything that is not the API Pix format.
func parsePixAmount(s string) (int64, bool) {
	m := pixAmount.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	reais, err1 := strconv.ParseInt(m[1], 10, 64)
	cents, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	// 13 digits of reais times 100 stays far below MaxInt64.
	return reais*100 + cents, true
}

// mulCents is price × quantity, ok false on overflow or negative input.
func mulCents(price, qty int64) (int64, bool) {
	if price < 0 || qty < 0 {
		return 0, false
	}
	if qty != 0 && price > (1<<63-1)/qty {
		return 0, false
	}
	return price * qty, true
}
