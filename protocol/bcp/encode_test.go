package bcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// encodeSeeds are checkout documents from the schema package's binding
// examples (requests' checkouts and responses' structured content), and
// one with every member kind whose encoding could differ: escapes, HTML
// characters, U+2028/2029, invalid UTF-8 and raw members with spaces.
func encodeSeeds(t testing.TB) [][]byte {
	files, err := filepath.Glob("../bcpschema/testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v", err)
	}
	var out [][]byte
	for _, name := range files {
		doc, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var msg struct {
			Result struct {
				StructuredContent json.RawMessage `json:"structuredContent"`
			} `json:"result"`
			Params struct {
				Arguments struct {
					Checkout json.RawMessage `json:"checkout"`
				} `json:"arguments"`
			} `json:"params"`
		}
		_ = json.Unmarshal(doc, &msg)
		for _, d := range []json.RawMessage{msg.Result.StructuredContent, msg.Params.Arguments.Checkout} {
			if len(d) > 0 {
				out = append(out, d)
			}
		}
	}
	out = append(out, []byte(`{"id":"a\u2028<>&\u00ff\ud800 `+"\xff\xc3"+`","buyer":{"email":"a<b>@c.d","first_name":"\u0001\b\f\t\u007f"},`+
		`"payment":{"instruments":[{"id":"x","handler_id":"h","type":"card","credential":{"a" : [1, 2.50e3, "<&>\u2029", {"b":null}]},"display":" {\"x\" : 1} "}]},`+
		`"signals":{"k":"\"x\"","a":{"z":1}},"ap2":{"z":1,"a":2},"payment_handlers":{"b":[{"id":1}],"a":[{"id":"2"}, {}]},`+
		`"line_items":[{"id":"li","item":{"id":"i","title":"Camiseta <P> & Cia","price":5990},"quantity":2,"totals":[{"type":"total","amount":-11980}]}],`+
		`"totals":[{"type":"total","amount":9007199254740991}],"messages":[{"type":"info","code":"c","content":"ação\n"}]}`))
	return out
}

// checkoutMarshal is EncodeCheckout without the count: what the stored
// session document and every checkout answer are made of.
func checkoutMarshal(c *Checkout) ([]byte, error) { return encodeCheckout(c) }

// EncodeCheckout writes exactly what encoding/json writes of the same
// checkout (it uses a faster encoder).
func TestEncodeCheckoutMatchesEncodingJSON(t *testing.T) {
	seeds := encodeSeeds(t)
	for _, doc := range seeds {
		compareEncode(t, doc)
	}
}

func compareEncode(t *testing.T, doc []byte) {
	t.Helper()
	var c Checkout
	if json.Unmarshal(doc, &c) != nil {
		return
	}
	want, wantErr := json.Marshal(&c)
	got, err := checkoutMarshal(&c)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%.80q: error %v, encoding/json's %v", doc, err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%.80q:\n got %s\nwant %s", doc, got, want)
	}
}

func FuzzEncodeCheckout(f *testing.F) {
	for _, doc := range encodeSeeds(f) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc []byte) { compareEncode(t, doc) })
}

// BenchmarkEncodeCheckout encodes a ready checkout (the binding example's
// update_checkout answer) with EncodeCheckout's encoder.
func BenchmarkEncodeCheckout(b *testing.B) {
	doc, err := os.ReadFile("../bcpschema/testdata/binding_update_checkout.response.json")
	if err != nil {
		b.Fatal(err)
	}
	var msg struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	var c Checkout
	if err := json.Unmarshal(doc, &msg); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(msg.Result.StructuredContent, &c); err != nil || len(c.LineItems) == 0 {
		b.Fatalf("fixture: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkoutMarshal(&c); err != nil {
			b.Fatal(err)
		}
	}
}
