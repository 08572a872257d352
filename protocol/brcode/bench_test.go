package brcode

import "testing"

// benchPayload is a typical checkout code: dynamic, with an amount.
var benchPayload = Payload{
	URL:          "pix.example.com/qr/v2/cobv/9d36b84fc70b478fb95c12729b90ca25",
	Amount:       12345,
	MerchantName: "LOJA EXEMPLO LTDA",
	MerchantCity: "SAO PAULO",
}

func BenchmarkEncode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := benchPayload.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	s, err := benchPayload.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if _, err := Parse(s); err != nil {
			b.Fatal(err)
		}
	}
}
