package brcode

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestASCIIFold(t *testing.T) {
	cases := map[string]string{
		"São Paulo":              "Sao Paulo",
		"  Açaí \t do   Zé\n":    "Acai do Ze",
		"Florianópolis":          "Florianopolis",
		"Straße Œuvre Æsir Þór":  "Strasse OEuvre AEsir THor",
		"Łódź Škoda Ğ ı":         "Lodz Skoda G i",
		"D’Ávila – “Loja” Nº 5…": "D'Avila - \"Loja\" No 5...",
		"e\u0301":                "e", // decomposed accent: the mark is dropped
		"北京 Café 😀":              "Cafe",
		"a\x00b\x7fc\u0085d":     "abcd",
		"bad\xffutf8":            "badutf8",
		"":                       "",
		"ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝ":  "AAAAAACEEEEIIIINOOOOOOUUUUY",
		"àáâãäåçèéêëìíîïñòóôõöøùúûüýÿ": "aaaaaaceeeeiiiinoooooouuuuyy",
	}
	for in, want := range cases {
		if got := ASCIIFold(in); got != want {
			t.Errorf("ASCIIFold(%q) = %q, want %q", in, got, want)
		}
	}
	if len(latin1) != 64 || len(latinExtA) != 128 {
		t.Fatalf("fold tables have %d and %d entries, want 64 and 128", len(latin1), len(latinExtA))
	}
	// Spot checks that the tables are aligned with their code points.
	for r, want := range map[rune]string{'Æ': "AE", '×': "x", 'ß': "ss", 'ÿ': "y", 'Ā': "A", 'ı': "i",
		'Ĳ': "IJ", 'ĸ': "k", 'ŉ': "n", 'Œ': "OE", 'Ÿ': "Y", 'ž': "z", 'ſ': "s"} {
		if got := ASCIIFold(string(r)); got != want {
			t.Errorf("ASCIIFold(%q) = %q, want %q", r, got, want)
		}
	}
}

func TestNormalizeNameCity(t *testing.T) {
	cases := []struct{ in, name, city string }{
		{"São Paulo", "SAO PAULO", "SAO PAULO"},
		{"São José dos Campos", "SAO JOSE DOS CAMPOS", "SAO JOSE DOS CA"},
		{"Itapecerica da Serra", "ITAPECERICA DA SERRA", "ITAPECERICA DA"}, // cut at 15, trailing space trimmed
		{"Padaria e Confeitaria Pão de Açúcar Ltda", "PADARIA E CONFEITARIA PAO", "PADARIA E CONFE"},
		{"  Brasília  ", "BRASILIA", "BRASILIA"},
		{"北京", "", ""},
	}
	for _, c := range cases {
		if got := NormalizeName(c.in); got != c.name {
			t.Errorf("NormalizeName(%q) = %q, want %q", c.in, got, c.name)
		}
		if got := NormalizeCity(c.in); got != c.city {
			t.Errorf("NormalizeCity(%q) = %q, want %q", c.in, got, c.city)
		}
	}
}

// Whatever goes in, the normalised values are accepted by Encode (when not
// empty).
func TestNormalizedTextEncodes(t *testing.T) {
	inputs := []string{"São Paulo", strings.Repeat("Ação ", 20), "\u00a0x\u00a0", "Ø", "ﬁ ligature", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 x"}
	for _, in := range inputs {
		p := base()
		p.MerchantName, p.MerchantCity = NormalizeName(in), NormalizeCity(in)
		if _, err := p.Encode(); err != nil {
			t.Errorf("%q -> %q / %q: %v", in, p.MerchantName, p.MerchantCity, err)
		}
	}
}

func TestNewStaticTxID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewStaticTxID()
		if len(id) != MaxTxIDLen || checkTxID(id, false, true) != nil || id == "***" {
			t.Fatalf("bad txid %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate txid %q", id)
		}
		seen[id] = true
	}
	p := base()
	p.TxID = NewStaticTxID()
	if s, err := p.Encode(); err != nil || !utf8.ValidString(s) {
		t.Fatal(err)
	}
}
