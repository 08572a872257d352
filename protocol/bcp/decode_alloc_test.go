package bcp

import (
	"os"
	"runtime"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

// segmentio/encoding/json gave every decoded slice room for ten elements
// at its first element, whatever their size: a checkout (one line item,
// two totals each, one destination, …) cost ~13 KB per decode, most of it
// empty slots. third_party/segmentio-encoding starts large elements at
// one slot (PATCHES.md); this fails if the unpatched module comes back.
func TestDecodeCheckoutAllocations(t *testing.T) {
	doc, err := os.ReadFile("../bcpschema/testdata/binding_update_checkout.response.json")
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Result struct {
			StructuredContent segjson.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := segjson.Unmarshal(doc, &msg); err != nil || len(msg.Result.StructuredContent) == 0 {
		t.Fatalf("fixture: %v", err)
	}
	raw := msg.Result.StructuredContent
	var c Checkout
	if err := segjson.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.LineItems) == 0 || len(c.Totals) == 0 {
		t.Fatalf("fixture decoded to %d line items, %d totals", len(c.LineItems), len(c.Totals))
	}
	if cap(c.LineItems) != len(c.LineItems) && len(c.LineItems) == 1 {
		t.Errorf("one line item decoded with capacity %d, want 1", cap(c.LineItems))
	}
	const runs = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		var c Checkout
		if err := segjson.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perDecode := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("%d bytes of JSON: %d bytes allocated per decode", len(raw), perDecode)
	if perDecode > 8<<10 {
		t.Errorf("decoding a %d-byte checkout allocates %d bytes, want under 8 KiB (upstream segmentio/encoding: ~13 KiB)", len(raw), perDecode)
	}
}
