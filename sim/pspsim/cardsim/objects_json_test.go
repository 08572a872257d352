package cardsim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
)

// pmJSONAsMap is the PaymentMethod object as a map, as JSON marshaled it
// before it had its own types: JSON must give these bytes.
func pmJSONAsMap(pm paymentMethod) []byte {
	fp := sha256.Sum256(append([]byte("cardsim fingerprint\x00"+pm.card.last4), pm.tokenHash...))
	md := pm.metadata
	if md == nil {
		md = json.RawMessage(`{}`)
	}
	nullAddress := map[string]any{"city": nil, "country": nil, "line1": nil, "line2": nil, "postal_code": nil, "state": nil}
	b, _ := json.Marshal(map[string]any{
		"id": pm.id, "object": "payment_method", "allow_redisplay": "unspecified",
		"billing_details": map[string]any{"address": nullAddress, "email": nil, "name": nil, "phone": nil, "tax_id": nil},
		"card": map[string]any{
			"brand": pm.card.brand, "display_brand": pm.card.brand, "country": "BR", "funding": "credit",
			"checks":    map[string]any{"address_line1_check": nil, "address_postal_code_check": nil, "cvc_check": "pass"},
			"exp_month": 12, "exp_year": pm.created.Year() + 5, "fingerprint": hex.EncodeToString(fp[:8]),
			"generated_from": nil, "last4": pm.card.last4, "regulated_status": "unregulated",
			"networks":             map[string]any{"available": []string{pm.card.brand}, "preferred": nil},
			"three_d_secure_usage": map[string]any{"supported": true}, "wallet": nil,
		},
		"created": pm.created.Unix(), "customer": nil, "livemode": false, "metadata": md, "type": "card",
	})
	return b
}

func TestPaymentMethodJSONBytes(t *testing.T) {
	at := time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)
	for _, pm := range []paymentMethod{
		{id: "pm_1", card: testCard{"visa", "4242"}, tokenHash: []byte{1, 2, 3}, created: at},
		{id: "pm_card_mastercard", card: testCard{"mastercard", "4444"}, created: at,
			metadata: json.RawMessage(`{ "order" : "<a&b>", "n": 1 }`)},
		{id: "pm_2", card: testCard{"amex", "8431"}, metadata: json.RawMessage(`{}`), created: at.AddDate(1, 0, 0)},
	} {
		got, want := string(pm.JSON()), string(pmJSONAsMap(pm))
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", pm.id, got, want)
		}
	}
}
