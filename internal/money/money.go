// Package money is the one place Brazilian-real amounts are written for
// people and read back: the buyer pages, the merchant admin, the operator
// pages, the messages agents relay to buyers, bcpctl and the simulators all
// use it. Amounts are int64 centavos and never touch a float. A negative
// amount carries its sign before the symbol ("-R$ 11,98"), as the buyer
// page shows a discount.
package money

import (
	"strconv"
	"strings"
)

// FormatBRL renders centavos as "R$ 1.234,56" ("-R$ 11,98" when negative).
func FormatBRL(cents int64) string {
	mag, sign := magnitude(cents)
	s := "R$ " + groupThousands(strconv.FormatUint(mag/100, 10)) + "," + twoDigits(mag%100)
	return sign + s
}

// FormatReais is the form-field form of centavos: "1234,56".
func FormatReais(cents int64) string {
	mag, sign := magnitude(cents)
	return sign + strconv.FormatUint(mag/100, 10) + "," + twoDigits(mag%100)
}

// FormatDecimal is the machine-readable form of centavos, for exports:
// "1234.56" (point, no grouping, "-" when negative).
func FormatDecimal(cents int64) string {
	mag, sign := magnitude(cents)
	return sign + strconv.FormatUint(mag/100, 10) + "." + twoDigits(mag%100)
}

// magnitude works on uint64 so math.MinInt64 has one too.
func magnitude(cents int64) (uint64, string) {
	if cents < 0 {
		return -uint64(cents), "-"
	}
	return uint64(cents), ""
}

func twoDigits(c uint64) string { return string([]byte{byte('0' + c/10), byte('0' + c%10)}) }

func groupThousands(digits string) string {
	var b strings.Builder
	for i := 0; i < len(digits); i++ {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteByte(digits[i])
	}
	return b.String()
}

// maxReais bounds prices typed in the admin (R$ 10 bilhões), far below
// int64 overflow.
const maxReais = 10_000_000_000

// ParseBRL reads what a merchant types as a price into centavos, exactly:
// "1234,56", "1.234,56", "R$ 12,9", "12", "12.50" (a dot followed by one
// or two digits at the end is a decimal point). Negative amounts, more
// than two decimals and anything else are refused with a message in
// Portuguese.
func ParseBRL(raw string) (int64, string) {
	s := strings.TrimSpace(raw)
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(s, "R$"), "r$"))
	s = strings.ReplaceAll(s, "\u00a0", "")
	s = strings.ReplaceAll(s, " ", "")
	if s == "" {
		return 0, "Informe o preço."
	}
	if strings.HasPrefix(s, "-") {
		return 0, "O preço não pode ser negativo."
	}
	var intPart, frac string
	if i := strings.LastIndexByte(s, ','); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
		if strings.Contains(frac, ".") {
			return 0, "Preço inválido: use o formato 1.234,56."
		}
		intPart = stripGroups(intPart, '.')
	} else if i := strings.LastIndexByte(s, '.'); i >= 0 && len(s)-i-1 <= 2 && strings.Count(s, ".") == 1 {
		intPart, frac = s[:i], s[i+1:]
	} else {
		intPart = stripGroups(s, '.')
	}
	if intPart == "" {
		intPart = "0"
	}
	if !digitsOnly(intPart) || !digitsOnly(frac) {
		return 0, "Preço inválido: use só números, como 49,90."
	}
	if len(frac) > 2 {
		return 0, "O preço tem no máximo duas casas decimais (centavos)."
	}
	if len(intPart) > 11 {
		return 0, "Preço alto demais."
	}
	reais, _ := strconv.ParseInt(intPart, 10, 64)
	if reais > maxReais {
		return 0, "Preço alto demais."
	}
	var cents int64
	switch len(frac) {
	case 1:
		cents = int64(frac[0]-'0') * 10
	case 2:
		cents = int64(frac[0]-'0')*10 + int64(frac[1]-'0')
	}
	return reais*100 + cents, ""
}

// stripGroups removes thousands separators when they group by three
// ("1.234.567"); otherwise it returns s unchanged (and digitsOnly fails).
func stripGroups(s string, sep byte) string {
	if !strings.ContainsRune(s, rune(sep)) {
		return s
	}
	parts := strings.Split(s, string(sep))
	if len(parts[0]) == 0 || len(parts[0]) > 3 {
		return s
	}
	for _, p := range parts[1:] {
		if len(p) != 3 {
			return s
		}
	}
	return strings.Join(parts, "")
}

func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
