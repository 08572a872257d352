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
	// Every member of the checkout and its parts: omitempty ones set and
	// unset, nil and empty slices, the embedded address.
	out = append(out, []byte(`{"ucp":{"version":"2026-01-11","capabilities":{"b":[{"version":"1"}],"a":[]}},"id":"chk_1",`+
		`"line_items":[{"id":"li_1","item":{"id":"v","title":"T","price":0,"image_url":"https://x/i.png"},"quantity":1,"totals":[],"parent_id":"li_0"},{"item":{"id":""},"quantity":0}],`+
		`"buyer":{"first_name":"A","last_name":"B","email":"e@x","phone_number":"+55","consent":{"analytics":false,"preferences":true,"marketing":false,"sale_of_data":true}},`+
		`"context":{"address_country":"BR","address_region":"SP","postal_code":"01305-000","intent":"i","language":"pt-BR","currency":"BRL","eligibility":["a","<b>"]},`+
		`"attribution":{"z":"1","a":"<2>"},"status":"completed","currency":"BRL",`+
		`"totals":[{"type":"subtotal","display_text":"Subtotal","amount":10,"lines":[{"display_text":"x","amount":1},{"display_text":"","amount":-2}]},{"type":"total","amount":0,"lines":[]}],`+
		`"messages":[{"type":"error","code":"c","path":"$.x","content_type":"markdown","content":"","severity":"recoverable","presentation":"notice"}],`+
		`"links":[{"type":"terms_of_service","url":"https://x/t","title":"T"},{"type":"privacy_policy","url":""}],"expires_at":"2026-12-03T10:00:00.123456789-03:00",`+
		`"continue_url":"https://x/c?a=1&b=2","payment":{"instruments":[{"id":"pi","handler_id":"h","type":"card","billing_address":{"street_address":"R","postal_code":"1"},"display":{"brand":"visa"},"selected":false},{"id":"","handler_id":"","type":""}]},`+
		`"order":{"id":"ord_1","label":"#1","permalink_url":"https://x/o"},`+
		`"fulfillment":{"methods":[{"id":"ship_1","type":"shipping","line_item_ids":["li_1"],"destinations":[{"id":"d1","street_address":"R","address_locality":"SP","address_region":"SP","address_country":"BR","postal_code":"01305-000","extended_address":"ap 1","first_name":"F","last_name":"L","phone_number":"P","name":"Casa","address":{}},{"name":"n","address":{"postal_code":"2"}}],`+
		`"selected_destination_id":"","groups":[{"id":"g1","line_item_ids":[],"options":[{"id":"o1","title":"PAC","description":"d","carrier":"C","earliest_fulfillment_time":"2026-12-04T00:00:00Z","latest_fulfillment_time":"l","totals":[{"type":"total","amount":1500}]},{"id":"","title":""}],"selected_option_id":"o1"}]},{}],`+
		`"available_methods":[{"type":"shipping","line_item_ids":["li_1"],"fulfillable_on":"now","description":"d"},{"type":"pickup"}]},`+
		`"discounts":{"codes":["BEMVINDO10",""],"applied":[{"code":"B","title":"T","amount":5,"automatic":true,"method":"across","priority":2,"provisional":true,"eligibility":"e","allocations":[{"path":"$.line_items[0]","amount":5}]},{"title":"","amount":0,"allocations":[]}]},"ap2":{"b":1, "a":[true]}}`))
	out = append(out, []byte(`{"line_items":null,"totals":null,"links":null,"messages":[],"payment":{},"fulfillment":{"methods":[]},"discounts":{},"buyer":{},"context":{},"signals":{},"attribution":{}}`))
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
	b.Run("answer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := checkoutMarshal(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The session document as the checkout service stores it: no ucp
	// envelope (the edge adds it).
	stored := c
	stored.UCP = nil
	b.Run("stored", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := checkoutMarshal(&stored); err != nil {
				b.Fatal(err)
			}
		}
	})
}
