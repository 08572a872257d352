package brcode

import "strings"

// KeyType is the kind of a Pix key (chave) as registered in the DICT.
type KeyType int

// Pix key types.
const (
	KeyInvalid KeyType = iota // not a well-formed Pix key
	KeyCPF                    // 11 digits with valid check digits
	KeyCNPJ                   // 14 characters with valid check digits (numeric or the 2026 alphanumeric form)
	KeyPhone                  // E.164: "+" and up to 15 digits, e.g. "+5561912345678"
	KeyEmail                  // an e-mail address
	KeyEVP                    // random key: a 36-character UUID
)

// MaxKeyLen is the API Pix limit for a key ("chave" ≤ 77).
const MaxKeyLen = 77

func (k KeyType) String() string {
	switch k {
	case KeyCPF:
		return "cpf"
	case KeyCNPJ:
		return "cnpj"
	case KeyPhone:
		return "phone"
	case KeyEmail:
		return "email"
	case KeyEVP:
		return "evp"
	}
	return "invalid"
}

// ClassifyKey returns the type of a Pix key, or KeyInvalid. CPF and CNPJ
// check digits are verified because a mistyped document key would silently
// point the QR at nobody (or at someone else); the DICT never holds keys
// with wrong check digits, so rejecting them costs nothing.
func ClassifyKey(key string) KeyType {
	switch {
	case len(key) == 0 || len(key) > MaxKeyLen:
		return KeyInvalid
	case len(key) == 11 && allDigits(key) && cpfValid(key):
		return KeyCPF
	case len(key) == 14 && cnpjValid(key):
		return KeyCNPJ
	case key[0] == '+' && len(key) >= 3 && len(key) <= 16 && key[1] != '0' && allDigits(key[1:]):
		return KeyPhone
	case len(key) == 36 && isUUID(key):
		return KeyEVP
	case strings.IndexByte(key, '@') >= 0 && emailValid(key):
		return KeyEmail
	}
	return KeyInvalid
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

func cpfValid(s string) bool {
	same := true
	for i := 1; i < 11; i++ {
		same = same && s[i] == s[0]
	}
	if same { // 000.000.000-00 etc. pass the arithmetic but are never issued
		return false
	}
	dv := func(n int) byte {
		sum := 0
		for i := 0; i < n; i++ {
			sum += int(s[i]-'0') * (n + 1 - i)
		}
		r := sum * 10 % 11
		if r == 10 {
			r = 0
		}
		return byte('0' + r)
	}
	return dv(9) == s[9] && dv(10) == s[10]
}

// cnpjValid accepts the numeric CNPJ and the alphanumeric CNPJ that the
// Receita Federal issues from July 2026 (12 characters [0-9A-Z], then two
// numeric check digits; each character weighs its ASCII code minus 48).
func cnpjValid(s string) bool {
	for i := 0; i < 14; i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || i < 12 && c >= 'A' && c <= 'Z') {
			return false
		}
	}
	if allDigits(s) && strings.Count(s, s[:1]) == 14 {
		return false
	}
	dv := func(n int) byte {
		sum, w := 0, n-7
		for i := 0; i < n; i++ {
			sum += int(s[i]-'0') * w
			if w--; w < 2 {
				w = 9
			}
		}
		r := sum % 11
		if r < 2 {
			return '0'
		}
		return byte('0' + 11 - r)
	}
	return dv(12) == s[12] && dv(13) == s[13]
}

func isUUID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// emailValid is deliberately loose (one '@', non-empty local part, a dotted
// domain, printable ASCII without spaces): the DICT is the authority, we
// only catch values that cannot be an address at all.
func emailValid(s string) bool {
	at := strings.IndexByte(s, '@')
	if at < 1 || strings.IndexByte(s[at+1:], '@') >= 0 {
		return false
	}
	dom := s[at+1:]
	if dom == "" || dom[0] == '.' || dom[len(dom)-1] == '.' || !strings.Contains(dom, ".") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7F {
			return false
		}
	}
	return true
}
