package checkout

import (
	"testing"
	"time"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// What the buyer reads for each attempt that did not pay.
func TestFailureMessage(t *testing.T) {
	for _, tc := range []struct {
		a    *paymentsv1.Attempt
		want string
	}{
		{&paymentsv1.Attempt{Status: paymentsv1.AttemptStatus_ATTEMPT_STATUS_EXPIRED},
			"O Pix expirou sem pagamento; conclua novamente para gerar outro (com uma nova chave de idempotência)."},
		{&paymentsv1.Attempt{Status: paymentsv1.AttemptStatus_ATTEMPT_STATUS_CANCELED},
			"O pagamento foi cancelado; conclua novamente com uma nova chave de idempotência."},
		{&paymentsv1.Attempt{Status: paymentsv1.AttemptStatus_ATTEMPT_STATUS_FAILED, FailureMessage: "Saldo insuficiente."},
			"Saldo insuficiente. Tente outro meio de pagamento, com uma nova chave de idempotência."},
		{&paymentsv1.Attempt{Status: paymentsv1.AttemptStatus_ATTEMPT_STATUS_FAILED},
			"O pagamento foi recusado. Tente outro meio de pagamento, com uma nova chave de idempotência."},
	} {
		if got := failureMessage(tc.a); got != tc.want {
			t.Errorf("%v %q: %q, want %q", tc.a.GetStatus(), tc.a.GetFailureMessage(), got, tc.want)
		}
	}
}

// The Pix message names São Paulo time and its offset; expires_at stays UTC.
func TestPixMessage(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 23, 0, 0, time.UTC)
	if got, want := pixMessage(9072, at), "Pague R$ 90,72 via Pix até 02/12 13:23 (horário de Brasília, UTC-3); acompanhe com get_checkout."; got != want {
		t.Fatalf("pixMessage = %q, want %q", got, want)
	}
}

// The order records how the attempt paid: Pix with its end-to-end id and
// txid, or the card's brand and last digits.
func TestOrderPayment(t *testing.T) {
	pix := orderPayment(&paymentsv1.Attempt{InstrumentType: "pix", HandlerId: "pix_loja", EndToEndId: "E123",
		DisplayJson: `{"pix":{"txid":"tx1","copia_e_cola":"000201"}}`})
	if pix.GetMethod() != "pix" || pix.GetHandlerId() != "pix_loja" || pix.GetEndToEndId() != "E123" || pix.GetTxid() != "tx1" || pix.GetCardBrand() != "" {
		t.Fatalf("pix %v", pix)
	}
	card := orderPayment(&paymentsv1.Attempt{InstrumentType: "card", HandlerId: "card", DisplayJson: `{"brand":"visa","last_digits":"4242"}`})
	if card.GetMethod() != "card" || card.GetCardBrand() != "visa" || card.GetCardLastDigits() != "4242" || card.GetEndToEndId() != "" {
		t.Fatalf("card %v", card)
	}
}
