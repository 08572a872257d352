package hostname

import "testing"

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Loja-Demo.Localhost:8080": "loja-demo.localhost",
		"loja.com.br.":             "loja.com.br",
		"LOJA.COM.BR.:443":         "loja.com.br",
		"[::1]:8080":               "::1",
		"[::1]":                    "::1",
		" shop.example ":           "shop.example",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, ok := range []string{"loja-demo.localhost", "loja.com.br", "xn--loj-6na.com.br", "a.b"} {
		if msg := Validate(ok); msg != "" {
			t.Errorf("Validate(%q) = %q, want valid", ok, msg)
		}
	}
	for _, bad := range []string{"", "localhost", "127.0.0.1", "-loja.com", "loja-.com", "lo ja.com", "lojá.com.br", "a..b", "UPPER.com"} {
		if Validate(bad) == "" {
			t.Errorf("Validate(%q) accepted an invalid domain", bad)
		}
	}
}
