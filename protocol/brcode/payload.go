package brcode

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Fixed values of a Pix BR Code.
const (
	GUI        = "br.gov.bcb.pix" // 26-00; compared case-insensitively
	Currency   = "986"            // 53: BRL (ISO 4217)
	Country    = "BR"             // 58
	DefaultMCC = "0000"           // 52 when no merchant category is given
)

// Limits of a Pix BR Code.
const (
	MaxPayloadLen = 512 // whole code, characters (API Pix pixCopiaECola ≤ 512)
	MaxURLLen     = 77  // 26-25 (API Pix location ≤ 77)
	MaxTxIDLen    = 25  // 62-05 (EMV reference label)
)

// Initiation is the Point of Initiation Method (field 01).
type Initiation uint8

// Point of Initiation values. The zero value lets Encode choose: omit the
// field for a static code, 12 for a dynamic one.
const (
	InitiationDefault   Initiation = 0
	InitiationReusable  Initiation = 11 // static code meant to be paid many times
	InitiationSingleUse Initiation = 12 // one payment only; mandatory for dynamic codes
)

// Payload is the content of a Pix BR Code. Fields are plain values (no
// pointers): the zero value of an optional field means "absent", which is
// also what Parse returns for an absent field.
//
// A code is static when Key is set and dynamic when URL is set; exactly one
// of the two must be. Currency (986) and country (BR) are fixed and so are
// not fields.
type Payload struct {
	// Key is the Pix key (26-01) of a static code: CPF, CNPJ, phone
	// (+55…), e-mail or EVP. See ClassifyKey.
	Key string
	// URL is the location of a dynamic code (26-25): the PSP's "location"
	// without scheme, e.g. "pix.example.com/qr/v2/…", at most 77 characters.
	URL string
	// Info is optional free text for the payer (26-02), static codes only.
	// The whole 26 template must stay within 99 characters.
	Info string
	// GUI is 26-00 as written; empty means GUI. Parse keeps the case it
	// found so that re-encoding a parsed code reproduces it exactly.
	GUI string

	// Initiation is field 01; see the Initiation constants.
	Initiation Initiation
	// MCC is the merchant category code (52), 4 digits; empty means "0000".
	MCC string
	// Amount is field 54 in centavos; 0 means absent (the payer types the
	// amount, static codes only in practice). At most MaxAmount.
	Amount int64
	// MerchantName (59) is 1-25 characters; see NormalizeName.
	MerchantName string
	// MerchantCity (60) is 1-15 characters; see NormalizeCity.
	MerchantCity string
	// PostalCode is field 61, optional.
	PostalCode string

	// TxID is 62-05. Empty is written as "***" (no txid), and Parse maps
	// "***" back to empty. Static codes: at most 25 letters and digits, the
	// only way a static Pix can be reconciled. Dynamic codes: ignored by
	// banks (the txid comes from the JWS), any text of at most 25
	// characters, normally empty.
	TxID string
	// AdditionalData holds sub-fields of 62 other than 05, such as the
	// 62-50 BR Code version template some PSPs add, in ascending ID order.
	AdditionalData []Field
	// Unreserved holds templates 80-99, in ascending ID order; each Value
	// must itself be TLV (build it with EncodeTLV).
	Unreserved []Field
}

// IsDynamic reports whether p is a dynamic code (it has a location URL).
func (p Payload) IsDynamic() bool { return p.URL != "" }

// Encode validates p against the Pix rules and returns the BR Code, CRC
// included. All values must be printable ASCII. Errors are *Error with
// Offset -1.
func (p Payload) Encode() (string, error) {
	if err := p.validate(true); err != nil {
		return "", err
	}
	s, err := p.build()
	if err != nil {
		return "", err
	}
	return s, nil
}

// validate checks every per-field rule. enc selects the encoder's rules
// (ASCII only, defaults allowed) over the parser's (UTF-8 text, explicit
// 01=12 for dynamic codes). Structural rules (order, presence, syntax) are
// the parser's job.
func (p *Payload) validate(enc bool) *Error {
	text := func(field, v string) *Error {
		if r, ok := textOK(v, enc); !ok {
			d := "character " + strconv.QuoteRune(r) + " not allowed"
			if enc && r > 0x7E {
				d += "; BR Codes we generate are ASCII (see NormalizeName, NormalizeCity, ASCIIFold)"
			}
			return newErr(field, -1, ErrInvalid, d)
		}
		return nil
	}
	length := func(field, v string, min, max int) *Error {
		n := utf8.RuneCountInString(v)
		if n == 0 && min > 0 {
			return newErr(field, -1, ErrMissing, "empty")
		}
		if n < min || n > max {
			return newErr(field, -1, ErrLength, strconv.Itoa(n)+" characters, want "+
				strconv.Itoa(min)+"-"+strconv.Itoa(max))
		}
		return text(field, v)
	}

	// 26: the Pix template.
	if p.GUI != "" && !asciiEqualFold(p.GUI, GUI) {
		return newErr("26-00", -1, ErrInvalid, strconv.Quote(p.GUI)+" is not the Pix GUI "+GUI)
	}
	dynamic := p.URL != ""
	switch {
	case p.Key != "" && dynamic:
		return newErr("26", -1, ErrConflict,
			"both a Pix key (26-01, static) and a location URL (26-25, dynamic); a code is one or the other")
	case p.Key == "" && !dynamic:
		return newErr("26-01", -1, ErrMissing, "a Pix key (26-01, static) or a location URL (26-25, dynamic) is required")
	case p.Key != "":
		if len(p.Key) > MaxKeyLen {
			return newErr("26-01", -1, ErrLength, strconv.Itoa(len(p.Key))+" characters, maximum 77")
		}
		if ClassifyKey(p.Key) == KeyInvalid {
			return newErr("26-01", -1, ErrInvalid, "not a CPF, CNPJ, phone (+55…), e-mail or EVP key")
		}
	default:
		if err := checkURL(p.URL); err != nil {
			return err
		}
	}
	if p.Info != "" {
		if dynamic {
			return newErr("26-02", -1, ErrConflict, "free text for the payer is for static codes only")
		}
		if err := text("26-02", p.Info); err != nil {
			return err
		}
	}

	// 01
	switch p.Initiation {
	case InitiationDefault, InitiationReusable, InitiationSingleUse:
	default:
		return newErr("01", -1, ErrInvalid, strconv.Itoa(int(p.Initiation))+", want 11 or 12")
	}
	if dynamic && p.Initiation == InitiationReusable {
		return newErr("01", -1, ErrConflict, "a dynamic code is single use (12), not 11")
	}
	if dynamic && !enc && p.Initiation != InitiationSingleUse {
		return newErr("01", -1, ErrMissing, "a dynamic code must carry 01=12")
	}

	if p.MCC != "" && (len(p.MCC) != 4 || !allDigits(p.MCC)) {
		return newErr("52", -1, ErrInvalid, strconv.Quote(p.MCC)+" is not a 4-digit MCC")
	}
	if p.Amount < 0 || p.Amount > MaxAmount {
		return newErr("54", -1, ErrAmount, strconv.FormatInt(p.Amount, 10)+" centavos is outside [0, "+
			strconv.FormatInt(MaxAmount, 10)+"]")
	}
	if err := length("59", p.MerchantName, 1, MaxNameLen); err != nil {
		return err
	}
	if err := length("60", p.MerchantCity, 1, MaxCityLen); err != nil {
		return err
	}
	if err := length("61", p.PostalCode, 0, maxValueLen); err != nil {
		return err
	}

	// 62
	if err := checkTxID(p.TxID, dynamic, enc); err != nil {
		return err
	}
	if err := checkFields("62", p.AdditionalData, 0, 99, enc); err != nil {
		return err
	}
	for _, f := range p.AdditionalData {
		if f.ID == "05" {
			return newErr("62-05", -1, ErrDuplicate, "set Payload.TxID instead of an AdditionalData entry 05")
		}
	}

	// 80-99
	if err := checkFields("", p.Unreserved, 80, 99, enc); err != nil {
		return err
	}
	for _, f := range p.Unreserved {
		if err := walkTLV(f.Value, -1, f.ID, func(string, string, int) *Error { return nil }); err != nil {
			err.Offset = -1
			err.Detail = "template value is not TLV: " + err.Detail
			return err
		}
	}
	return nil
}

// checkURL enforces the 26-25 rules: at most 77 characters, printable
// ASCII, no scheme (banks prepend https:// themselves, so a scheme breaks
// the fetch), and a host.
func checkURL(u string) *Error {
	if n := utf8.RuneCountInString(u); n > MaxURLLen {
		return newErr("26-25", -1, ErrLength, strconv.Itoa(n)+" characters, maximum 77")
	}
	if strings.Contains(u, "://") || hasPrefixFold(u, "https:") || hasPrefixFold(u, "http:") {
		return newErr("26-25", -1, ErrInvalid, "location must not include a scheme such as https://")
	}
	for i := 0; i < len(u); i++ {
		if u[i] <= ' ' || u[i] >= 0x7F {
			return newErr("26-25", -1, ErrInvalid, "location must be printable ASCII without spaces")
		}
	}
	pu, err := url.Parse("https://" + u)
	if err != nil || pu.Host == "" || pu.User != nil {
		return newErr("26-25", -1, ErrInvalid, "location is not host[/path]")
	}
	return nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && asciiEqualFold(s[:len(prefix)], prefix)
}

// asciiEqualFold is strings.EqualFold restricted to ASCII letters, so that
// Unicode folds such as 'ſ' (long s) → 's' or 'K' (Kelvin) → 'k' cannot
// smuggle non-ASCII bytes past a comparison with a fixed ASCII value.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// checkTxID enforces the 62-05 rules of pix.md: "***" or empty for none;
// static: 1-25 ASCII letters and digits; dynamic: any text of 1-25
// characters, since banks ignore it (the BCB example carries
// "RP12345678-2019").
func checkTxID(t string, dynamic, enc bool) *Error {
	if t == "" || t == "***" {
		return nil
	}
	if n := utf8.RuneCountInString(t); n > MaxTxIDLen {
		return newErr("62-05", -1, ErrTxID, strconv.Itoa(n)+" characters, maximum 25")
	}
	if dynamic {
		if _, ok := textOK(t, enc); !ok {
			return newErr("62-05", -1, ErrTxID, "control or non-ASCII character")
		}
		return nil
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return newErr("62-05", -1, ErrTxID, "a static txid is letters and digits only, or ***")
		}
	}
	return nil
}

// checkFields validates caller-supplied sub-fields: IDs in [lo, hi],
// unique, values within 99 characters of allowed text. parent prefixes the
// field names in errors.
func checkFields(parent string, fs []Field, lo, hi int, enc bool) *Error {
	for i, f := range fs {
		name := subID(parent, f.ID)
		n, ok := idNum(f.ID)
		if !ok || n < lo || n > hi {
			return newErr(name, -1, ErrInvalid, "ID must be two digits in "+strconv.Itoa(lo)+"-"+strconv.Itoa(hi))
		}
		for _, g := range fs[:i] {
			if g.ID == f.ID {
				return newErr(name, -1, ErrDuplicate, "")
			}
		}
		if c := utf8.RuneCountInString(f.Value); c > maxValueLen {
			return newErr(name, -1, ErrLength, strconv.Itoa(c)+" characters, maximum 99")
		}
		if r, ok := textOK(f.Value, enc); !ok {
			return newErr(name, -1, ErrInvalid, "character "+strconv.QuoteRune(r)+" not allowed")
		}
	}
	return nil
}

// build writes the validated payload. Templates are written in place
// (length first) so Encode allocates only the output buffer and string.
func (p *Payload) build() (string, *Error) {
	b := make([]byte, 0, 256)
	b = append(b, "000201"...)

	init := p.Initiation
	if p.URL != "" && init == InitiationDefault {
		init = InitiationSingleUse
	}
	if init != InitiationDefault {
		b = append(b, "0102"...)
		b = strconv.AppendInt(b, int64(init), 10)
	}

	gui := cmp.Or(p.GUI, GUI)
	n := 4 + len(gui) + 4 + len(p.Key) + len(p.URL)
	if p.Info != "" {
		n += 4 + len(p.Info)
	}
	if n > maxValueLen {
		return "", newErr("26", -1, ErrLength, "Pix template is "+strconv.Itoa(n)+
			" characters, maximum 99; shorten 26-02 or the key/URL")
	}
	b = appendHeader(b, "26", n)
	b = appendTLV(b, "00", gui)
	if p.Key != "" {
		b = appendTLV(b, "01", p.Key)
		if p.Info != "" {
			b = appendTLV(b, "02", p.Info)
		}
	} else {
		b = appendTLV(b, "25", p.URL)
	}

	b = appendTLV(b, "52", cmp.Or(p.MCC, DefaultMCC))
	b = append(b, "5303"+Currency...)
	if p.Amount > 0 {
		var buf [16]byte
		a := appendAmount(buf[:0], p.Amount)
		b = appendHeader(b, "54", len(a))
		b = append(b, a...)
	}
	b = append(b, "5802"+Country...)
	b = appendTLV(b, "59", p.MerchantName)
	b = appendTLV(b, "60", p.MerchantCity)
	if p.PostalCode != "" {
		b = appendTLV(b, "61", p.PostalCode)
	}

	txid := cmp.Or(p.TxID, "***")
	extra := sortedFields(p.AdditionalData)
	n = 4 + len(txid)
	for _, f := range extra {
		n += 4 + len(f.Value)
	}
	if n > maxValueLen {
		return "", newErr("62", -1, ErrLength, "additional data template is "+strconv.Itoa(n)+" characters, maximum 99")
	}
	b = appendHeader(b, "62", n)
	i := 0
	for ; i < len(extra) && extra[i].ID < "05"; i++ {
		b = appendTLV(b, extra[i].ID, extra[i].Value)
	}
	b = appendTLV(b, "05", txid)
	for ; i < len(extra); i++ {
		b = appendTLV(b, extra[i].ID, extra[i].Value)
	}

	for _, f := range sortedFields(p.Unreserved) {
		b = appendTLV(b, f.ID, f.Value)
	}

	if len(b)+8 > MaxPayloadLen {
		return "", newErr("", -1, ErrLength, "payload is "+strconv.Itoa(len(b)+8)+" characters, maximum 512")
	}
	b = append(b, "6304"...)
	b = appendHex(b, crcUpdate(0xFFFF, b))
	return string(b), nil
}

func sortedFields(fs []Field) []Field {
	byID := func(a, b Field) int { return strings.Compare(a.ID, b.ID) }
	if slices.IsSortedFunc(fs, byID) {
		return fs
	}
	fs = slices.Clone(fs)
	slices.SortFunc(fs, byID)
	return fs
}
