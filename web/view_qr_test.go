package web

import "testing"

func TestQRURLSameMerchantAnyPort(t *testing.T) {
	d := pixDisplay{QRSVGURL: "http://loja.localhost/checkout/chk_1/pix.svg"}
	for host, want := range map[string]string{
		"loja.localhost:8080": "/checkout/chk_1/pix.svg",
		"loja.localhost":      "/checkout/chk_1/pix.svg",
		"LOJA.localhost:443":  "/checkout/chk_1/pix.svg",
		"outra.localhost":     "",
		"loja.localhost.evil": "",
	} {
		if got := string(qrURL(host, d)); got != want {
			t.Errorf("qrURL(%q) = %q, want %q", host, got, want)
		}
	}
	d = pixDisplay{QRPNGURL: "https://evil.example/qr.png"}
	if got := qrURL("loja.localhost", d); got != "" {
		t.Errorf("foreign QR URL = %q, want none", got)
	}
}
