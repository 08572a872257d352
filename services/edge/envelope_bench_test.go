package edge

import (
	"encoding/json"
	"testing"

	"github.com/bcpdev/bcp/internal/bcpnames"
)

// A checkout as the checkout service returns it (ready_for_complete, one
// line item, shipping selected, a discount): the body the edge wraps on
// every tool call.
var benchCheckoutJSON = []byte(`{"id":"chk_01JDZ8Q4K3M5N6P7R8S9T0V1W2","status":"ready_for_complete","currency":"BRL",
"line_items":[{"id":"li_1","item":{"id":"var_cam","title":"Camiseta M","price":5990},"quantity":1,
"totals":[{"type":"subtotal","amount":5990},{"type":"total","amount":5990}]}],
"buyer":{"email":"bench@example.com"},
"fulfillment":{"methods":[{"id":"fm_1","type":"shipping","line_item_ids":["li_1"],"selected_destination_id":"dest_1",
"destinations":[{"id":"dest_1","street_address":"Rua Augusta, 500","address_locality":"São Paulo","address_region":"SP","postal_code":"01305-000","address_country":"BR"}],
"groups":[{"id":"fg_1","line_item_ids":["li_1"],"selected_option_id":"rate_pac","options":[
{"id":"rate_sedex","title":"SEDEX","totals":[{"type":"total","amount":3000}]},
{"id":"rate_pac","title":"PAC","totals":[{"type":"total","amount":1500}]}]}]}]},
"discounts":{"codes":["BEMVINDO10"],"applied":[{"code":"BEMVINDO10","title":"10% de boas-vindas","amount":599}]},
"totals":[{"type":"subtotal","amount":5990},{"type":"discount","amount":599},{"type":"fulfillment","amount":1500},{"type":"total","amount":6891}],
"messages":[],"links":[{"type":"privacy_policy","url":"https://loja.example/privacidade"},{"type":"terms_of_service","url":"https://loja.example/termos"}],
"continue_url":"https://loja.example/checkout/chk_01JDZ8Q4K3M5N6P7R8S9T0V1W2","expires_at":"2026-11-30T23:00:00Z"}`)

func benchEnvelope() envelope {
	capability := func(name string) []map[string]any {
		return []map[string]any{{"version": bcpnames.Version, "spec": "https://bcp.dev.br/draft/specification/" + name,
			"schema": "https://bcp.dev.br/draft/schemas/shopping/" + name + ".json"}}
	}
	return envelope{
		Version: bcpnames.Version,
		Capabilities: map[string]any{
			"br.dev.bcp.shopping.checkout":    capability("checkout"),
			"br.dev.bcp.shopping.fulfillment": capability("fulfillment"),
			"br.dev.bcp.shopping.discount":    capability("discount"),
		},
		PaymentHandlers: map[string]any{
			"br.dev.bcp.pix": []map[string]any{{"id": "pix_loja", "version": bcpnames.Version, "available_instruments": []map[string]any{{"type": "pix"}}}},
			"com.example.vendor.delegate_payment": []map[string]any{{"id": "card", "version": bcpnames.Version,
				"available_instruments": []map[string]any{{"type": "card", "constraints": map[string]any{"brands": []string{"visa", "mastercard"}}}}}},
		},
	}
}

// BenchmarkWrap is the envelope splice of every tool response: marshal the
// negotiated "ucp" member and splice it in front of the service's JSON.
func BenchmarkWrap(b *testing.B) {
	m := &mcpEdge{}
	u := benchEnvelope()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchCheckoutJSON)))
	for b.Loop() {
		if _, err := m.wrap(benchCheckoutJSON, u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolResultMarshal is the response serialisation after the
// splice: the MCP result (structuredContent plus the same JSON as text)
// encoded as the JSON-RPC result, as the SDK writes it.
func BenchmarkToolResultMarshal(b *testing.B) {
	out, err := (&mcpEdge{}).wrap(benchCheckoutJSON, benchEnvelope())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res := toolResult(out)
		raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": res})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(raw)))
	}
}

// BenchmarkWrapAndMarshal is both: what the edge adds to every response
// after the checkout service has answered.
func BenchmarkWrapAndMarshal(b *testing.B) {
	m := &mcpEdge{}
	u := benchEnvelope()
	b.ReportAllocs()
	for b.Loop() {
		out, err := m.wrap(benchCheckoutJSON, u)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": toolResult(out)}); err != nil {
			b.Fatal(err)
		}
	}
}
