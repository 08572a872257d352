package web

import (
	"regexp"
	"strconv"
)

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
