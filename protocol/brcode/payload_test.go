package brcode

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

const (
	evp     = "123e4567-e12b-12d1-a456-426655440000"
	cpf     = "52998224725"
	cnpj    = "11222333000181"
	cnpjAlf = "12ABC34501DE35" // Receita Federal's alphanumeric CNPJ example
	loc     = "pix.example.com/qr/v2/9d36b84fc70b478fb95c12729b90ca25"
)

// base returns a minimal valid static payload.
func base() Payload {
	return Payload{Key: evp, MerchantName: "Fulano de Tal", MerchantCity: "BRASILIA"}
}

// canonical fills in what Parse reports for values Encode defaults, so an
// encoded payload and its parse can be compared with DeepEqual.
func canonical(p Payload) Payload {
	if p.GUI == "" {
		p.GUI = GUI
	}
	if p.MCC == "" {
		p.MCC = DefaultMCC
	}
	if p.TxID == "***" {
		p.TxID = ""
	}
	if p.URL != "" && p.Initiation == InitiationDefault {
		p.Initiation = InitiationSingleUse
	}
	if len(p.AdditionalData) == 0 {
		p.AdditionalData = nil
	}
	if len(p.Unreserved) == 0 {
		p.Unreserved = nil
	}
	return p
}

func TestRoundTrip(t *testing.T) {
	with := func(f func(*Payload)) Payload {
		p := base()
		f(&p)
		return p
	}
	cases := map[string]Payload{
		"minimal static":    base(),
		"cpf key":           with(func(p *Payload) { p.Key = cpf }),
		"cnpj key":          with(func(p *Payload) { p.Key = cnpj }),
		"alphanumeric cnpj": with(func(p *Payload) { p.Key = cnpjAlf }),
		"phone key":         with(func(p *Payload) { p.Key = "+5561912345678" }),
		"email key":         with(func(p *Payload) { p.Key = "fulano.tal+pix@example.com.br" }),
		"amount 1 centavo":  with(func(p *Payload) { p.Amount = 1 }),
		"amount 123.45":     with(func(p *Payload) { p.Amount = 12345 }),
		"max amount":        with(func(p *Payload) { p.Amount = MaxAmount }),
		"static txid":       with(func(p *Payload) { p.TxID = "abcdefghijklmnopqrstuvwxy" }),
		"txid stars":        with(func(p *Payload) { p.TxID = "***" }),
		"info":              with(func(p *Payload) { p.Info = "Pedido 42" }),
		"reusable":          with(func(p *Payload) { p.Initiation = InitiationReusable }),
		"single-use static": with(func(p *Payload) { p.Initiation = InitiationSingleUse }),
		"mcc and postal":    with(func(p *Payload) { p.MCC = "5411"; p.PostalCode = "70040010" }),
		"upper GUI":         with(func(p *Payload) { p.GUI = "BR.GOV.BCB.PIX" }),
		"max name and city": with(func(p *Payload) {
			p.MerchantName = strings.Repeat("N", MaxNameLen)
			p.MerchantCity = strings.Repeat("C", MaxCityLen)
		}),
		"26 at 99": with(func(p *Payload) { p.Info = strings.Repeat("i", 99-18-40-4) }),
		"62 extras": with(func(p *Payload) {
			p.TxID = "PEDIDO42"
			p.AdditionalData = []Field{{"50", "0017br.gov.bcb.brcode01051.0.0"}, {"01", "bill"}, {"07", ""}}
		}),
		"unreserved": with(func(p *Payload) {
			p.Unreserved = []Field{{"91", "0004test"}, {"80", "0014br.com.example0102ok"}, {"99", ""}}
		}),
		"dynamic": {URL: loc, MerchantName: "EMPRESA", MerchantCity: "SAO PAULO"},
		"dynamic amount reflabel": {URL: loc, MerchantName: "EMPRESA", MerchantCity: "SAO PAULO",
			Amount: 12345, TxID: "RP12345678-2019", Initiation: InitiationSingleUse},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := p.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !strings.HasPrefix(s, "000201") || !strings.HasSuffix(s, Checksum(s[:len(s)-4])) {
				t.Fatalf("bad frame: %s", s)
			}
			got, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(%s): %v", s, err)
			}
			want := canonical(p)
			if len(want.AdditionalData) > 1 || len(want.Unreserved) > 1 {
				// Encode writes sub-fields in ID order.
				want.AdditionalData = sortedFields(want.AdditionalData)
				want.Unreserved = sortedFields(want.Unreserved)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("round trip mismatch\n got %+v\nwant %+v\ncode %s", *got, want, s)
			}
			again, err := got.Encode()
			if err != nil || again != s {
				t.Fatalf("re-encode = %q, %v; want %q", again, err, s)
			}
		})
	}
}

func TestEncodeKnownLayout(t *testing.T) {
	p := Payload{URL: "pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a99", GUI: "BR.GOV.BCB.PIX",
		MerchantName: "EMPRESA", MerchantCity: "SAO PAULO"}
	s, err := p.Encode()
	const want = "00020101021226770014BR.GOV.BCB.PIX2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304EEAB"
	if err != nil || s != want {
		t.Fatalf("Encode = %q, %v\nwant %q", s, err, want)
	}
	p = base()
	p.Amount = 5
	p.AdditionalData = []Field{{"50", "x"}, {"01", "a"}}
	s, err = p.Encode()
	if err != nil || !strings.Contains(s, "54040.05") || !strings.Contains(s, "62170101a0503***5001x6304") {
		t.Fatalf("Encode = %q, %v", s, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	with := func(f func(*Payload)) Payload {
		p := base()
		f(&p)
		return p
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	var many []Field
	for id := 80; id <= 99; id++ {
		many = append(many, Field{ID: string(rune('0'+id/10)) + string(rune('0'+id%10)), Value: "0030" + long(30)})
	}
	cases := []struct {
		name  string
		p     Payload
		kind  error
		field string
	}{
		{"no key no url", with(func(p *Payload) { p.Key = "" }), ErrMissing, "26-01"},
		{"key and url", with(func(p *Payload) { p.URL = loc }), ErrConflict, "26"},
		{"garbage key", with(func(p *Payload) { p.Key = "not a key" }), ErrInvalid, "26-01"},
		{"cpf check digit", with(func(p *Payload) { p.Key = "52998224726" }), ErrInvalid, "26-01"},
		{"cnpj check digit", with(func(p *Payload) { p.Key = "11222333000180" }), ErrInvalid, "26-01"},
		{"key too long", with(func(p *Payload) { p.Key = long(70) + "@ex.com" + "x" }), ErrLength, "26-01"},
		{"wrong GUI", with(func(p *Payload) { p.GUI = "br.gov.bcb.brcode" }), ErrInvalid, "26-00"},
		{"GUI non-ASCII", with(func(p *Payload) { p.GUI = "br.gov.bcb.pi\u0445" }), ErrInvalid, "26-00"},
		{"GUI mixed case", with(func(p *Payload) { p.GUI = "Br.Gov.Bcb.Pix"; p.Key = "bad" }), ErrInvalid, "26-01"},
		{"url with scheme", Payload{URL: "https://" + loc, MerchantName: "E", MerchantCity: "C"}, ErrInvalid, "26-25"},
		{"url scheme no slashes", Payload{URL: "HTTPS:" + loc, MerchantName: "E", MerchantCity: "C"}, ErrInvalid, "26-25"},
		{"url too long", Payload{URL: "pix.example.com/" + long(62), MerchantName: "E", MerchantCity: "C"}, ErrLength, "26-25"},
		{"url with space", Payload{URL: "pix.example.com/a b", MerchantName: "E", MerchantCity: "C"}, ErrInvalid, "26-25"},
		{"url without host", Payload{URL: "/qr/1", MerchantName: "E", MerchantCity: "C"}, ErrInvalid, "26-25"},
		{"info on dynamic", Payload{URL: loc, Info: "x", MerchantName: "E", MerchantCity: "C"}, ErrConflict, "26-02"},
		{"26 over 99", with(func(p *Payload) { p.Info = long(99 - 18 - 40 - 3) }), ErrLength, "26"},
		{"initiation 13", with(func(p *Payload) { p.Initiation = 13 }), ErrInvalid, "01"},
		{"dynamic reusable", Payload{URL: loc, Initiation: InitiationReusable, MerchantName: "E", MerchantCity: "C"}, ErrConflict, "01"},
		{"mcc letters", with(func(p *Payload) { p.MCC = "54a1" }), ErrInvalid, "52"},
		{"mcc short", with(func(p *Payload) { p.MCC = "541" }), ErrInvalid, "52"},
		{"negative amount", with(func(p *Payload) { p.Amount = -1 }), ErrAmount, "54"},
		{"amount over 13 chars", with(func(p *Payload) { p.Amount = MaxAmount + 1 }), ErrAmount, "54"},
		{"amount max int64", with(func(p *Payload) { p.Amount = math.MaxInt64 }), ErrAmount, "54"},
		{"empty name", with(func(p *Payload) { p.MerchantName = "" }), ErrMissing, "59"},
		{"name 26", with(func(p *Payload) { p.MerchantName = long(26) }), ErrLength, "59"},
		{"accented name", with(func(p *Payload) { p.MerchantName = "João" }), ErrInvalid, "59"},
		{"empty city", with(func(p *Payload) { p.MerchantCity = "" }), ErrMissing, "60"},
		{"city 16", with(func(p *Payload) { p.MerchantCity = long(16) }), ErrLength, "60"},
		{"accented city", with(func(p *Payload) { p.MerchantCity = "São Paulo" }), ErrInvalid, "60"},
		{"control in postal", with(func(p *Payload) { p.PostalCode = "7004\n0010" }), ErrInvalid, "61"},
		{"static txid 26", with(func(p *Payload) { p.TxID = long(26) }), ErrTxID, "62-05"},
		{"static txid hyphen", with(func(p *Payload) { p.TxID = "RP1-2019" }), ErrTxID, "62-05"},
		{"static txid non-ascii", with(func(p *Payload) { p.TxID = "pedidoº1" }), ErrTxID, "62-05"},
		{"dynamic txid 26", Payload{URL: loc, TxID: long(26), MerchantName: "E", MerchantCity: "C"}, ErrTxID, "62-05"},
		{"62-05 via extras", with(func(p *Payload) { p.AdditionalData = []Field{{"05", "x"}} }), ErrDuplicate, "62-05"},
		{"62 bad id", with(func(p *Payload) { p.AdditionalData = []Field{{"5", "x"}} }), ErrInvalid, "62-5"},
		{"62 dup id", with(func(p *Payload) { p.AdditionalData = []Field{{"07", "x"}, {"07", "y"}} }), ErrDuplicate, "62-07"},
		{"62 over 99", with(func(p *Payload) { p.AdditionalData = []Field{{"07", long(60)}, {"08", long(30)}} }), ErrLength, "62"},
		{"unreserved id 79", with(func(p *Payload) { p.Unreserved = []Field{{"79", ""}} }), ErrInvalid, "79"},
		{"unreserved not tlv", with(func(p *Payload) { p.Unreserved = []Field{{"80", "hello"}} }), ErrSyntax, "80"},
		{"unreserved dup", with(func(p *Payload) { p.Unreserved = []Field{{"80", ""}, {"80", ""}} }), ErrDuplicate, "80"},
		{"unreserved value 100", with(func(p *Payload) { p.Unreserved = []Field{{"80", long(100)}} }), ErrLength, "80"},
		{"payload over 512", with(func(p *Payload) { p.Unreserved = many }), ErrLength, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.p.Encode()
			if err == nil {
				t.Fatalf("Encode succeeded: %s", s)
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.kind) || e.Field != c.field || e.Offset != -1 {
				t.Fatalf("got %v (%#v), want %v on field %q", err, e, c.kind, c.field)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	cases := []struct {
		e    *Error
		want string
	}{
		{newErr("59", 89, ErrLength, "26 characters"), "brcode: field 59 at offset 89: invalid length: 26 characters"},
		{newErr("26-25", -1, ErrInvalid, ""), "brcode: field 26-25: invalid value"},
		{newErr("", 3, ErrSyntax, "x"), "brcode: offset 3: malformed TLV: x"},
		{newErr("", -1, ErrLength, ""), "brcode: invalid length"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestClassifyKey(t *testing.T) {
	cases := map[string]KeyType{
		cpf:                                    KeyCPF,
		"11144477735":                          KeyCPF,
		"52998224726":                          KeyInvalid, // check digit
		"11111111111":                          KeyInvalid, // repeated digits
		"5299822472":                           KeyInvalid,
		cnpj:                                   KeyCNPJ,
		cnpjAlf:                                KeyCNPJ,
		"12ABC34501DE36":                       KeyInvalid,
		"12abc34501DE35":                       KeyInvalid, // lower case
		"00000000000000":                       KeyInvalid,
		"+5561912345678":                       KeyPhone,
		"+551133334444":                        KeyPhone,
		"+0561912345678":                       KeyInvalid,
		"+55619123456789012":                   KeyInvalid,
		"+55 61 91234-5678":                    KeyInvalid,
		"5561912345678":                        KeyInvalid,
		evp:                                    KeyEVP,
		strings.ToUpper(evp):                   KeyEVP,
		"123e4567e12b12d1a456426655440000":     KeyInvalid,
		"123e4567-e12b-12d1-a456-42665544000g": KeyInvalid,
		"fulano@example.com":                   KeyEmail,
		"+tag@example.com":                     KeyEmail,
		"fulano@localhost":                     KeyInvalid,
		"a@b@example.com":                      KeyInvalid,
		"@example.com":                         KeyInvalid,
		"fu lano@example.com":                  KeyInvalid,
		"fulano@example.com.":                  KeyInvalid,
		strings.Repeat("a", 70) + "@ex.com.br": KeyInvalid, // 80 > 77
		"":                                     KeyInvalid,
		"hello":                                KeyInvalid,
	}
	for k, want := range cases {
		if got := ClassifyKey(k); got != want {
			t.Errorf("ClassifyKey(%q) = %v, want %v", k, got, want)
		}
	}
	for k, s := range map[KeyType]string{KeyInvalid: "invalid", KeyCPF: "cpf", KeyCNPJ: "cnpj",
		KeyPhone: "phone", KeyEmail: "email", KeyEVP: "evp"} {
		if k.String() != s {
			t.Errorf("%d.String() = %q", k, k.String())
		}
	}
}
