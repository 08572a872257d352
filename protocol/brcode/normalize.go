package brcode

import (
	"crypto/rand"
	"strings"
	"unicode/utf8"
)

// Limits of the text fields, in characters.
const (
	MaxNameLen = 25 // field 59
	MaxCityLen = 15 // field 60
)

// latin1 folds U+00C0..U+00FF; latinExtA folds U+0100..U+017F. Tables
// instead of Unicode normalisation keep the package on the standard library
// and cover every letter used in Portuguese and the rest of Western Europe.
var (
	latin1 = strings.Fields("A A A A A A AE C E E E E I I I I D N O O O O O x O U U U U Y TH ss " +
		"a a a a a a ae c e e e e i i i i d n o o o o o / o u u u u y th y")
	latinExtA = strings.Fields("A a A a A a C c C c C c C c D d D d E e E e E e E e E e " +
		"G g G g G g G g H h H h I i I i I i I i I i IJ ij J j K k k L l L l L l L l L l " +
		"N n N n N n n N n O o O o O o OE oe R r R r R r S s S s S s S s T t T t T t " +
		"U u U u U u U u U u U u W w Y y Y Z z Z z Z z s")
	// punct maps the typographic characters that people paste from word
	// processors into merchant settings.
	punct = map[rune]string{
		0x00A0: " ", 0x00AA: "a", 0x00BA: "o", 0x00B4: "'",
		0x2010: "-", 0x2011: "-", 0x2012: "-", 0x2013: "-", 0x2014: "-",
		0x2018: "'", 0x2019: "'", 0x201C: "\"", 0x201D: "\"", 0x2026: "...",
	}
)

// ASCIIFold transliterates s to printable ASCII: accented Latin letters
// lose their accents ("São" → "Sao", "Ç" → "C", "ß" → "ss"), typographic
// quotes and dashes become ASCII ones, whitespace runs collapse to one
// space and the ends are trimmed. Characters with no ASCII form (combining
// marks, CJK, emoji, controls) are dropped. Invalid UTF-8 bytes are dropped.
//
// BR Code text must be ASCII to avoid the mismatch between character
// lengths and byte CRCs that multi-byte text causes in bank apps.
func ASCIIFold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	emit := func(t string) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteString(t)
	}

	for i, r := range s {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0xA0:
			space = true
		case r > ' ' && r < 0x7F:
			emit(s[i : i+1])
		case r >= 0xC0 && r <= 0xFF:
			emit(latin1[r-0xC0])
		case r >= 0x100 && r <= 0x17F:
			emit(latinExtA[r-0x100])
		default:
			if t, ok := punct[r]; ok {
				emit(t)
			}
		}
	}
	return b.String()
}

// NormalizeName makes a merchant name fit field 59: ASCIIFold, upper case
// (as in the BCB examples and what most PSPs emit), cut to 25 characters.
// The value is for display only: the payer's bank shows the name
// registered in the DICT for the key.
func NormalizeName(s string) string { return normalize(s, MaxNameLen) }

// NormalizeCity makes a city fit field 60: ASCIIFold, upper case, cut to
// 15 characters ("São Paulo" → "SAO PAULO").
func NormalizeCity(s string) string { return normalize(s, MaxCityLen) }

func normalize(s string, max int) string {
	s = strings.ToUpper(ASCIIFold(s))
	if len(s) > max {
		s = strings.TrimRight(s[:max], " ")
	}
	return s
}

// NewStaticTxID returns a random txid for a static BR Code: 25 base36
// characters (about 129 bits), the longest value the static 62-05 limit of
// 25 alphanumerics allows. Dynamic charges use the API Pix txid rules
// (26-35 characters) instead and never put it in the BR Code.
func NewStaticTxID() string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	out := make([]byte, 0, 25)
	var buf [32]byte
	for len(out) < 25 {
		rand.Read(buf[:]) // never fails since Go 1.24
		for _, c := range buf {
			if c < 252 && len(out) < 25 { // 252 = 7*36: unbiased
				out = append(out, alphabet[c%36])
			}
		}
	}
	return string(out)
}

// textOK reports whether s holds only characters allowed in a BR Code
// value: printable ASCII when ascii is set (the encoder), otherwise any
// UTF-8 except control characters (the parser). It returns the first bad
// rune when not.
func textOK(s string, ascii bool) (rune, bool) {
	for _, r := range s {
		if r < 0x20 || r == 0x7F || ascii && r > 0x7E || r >= 0x80 && r < 0xA0 || r == utf8.RuneError {
			return r, false
		}
	}
	return 0, true
}
