package payments_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// typedStart is startReq with the typed instrument the checkout service
// sends instead of instrument_json.
func typedStart(m merchant, checkoutID string, amount int64, in *paymentsv1.PaymentInstrument) *paymentsv1.StartPaymentRequest {
	req := startReq(m, checkoutID, amount, "")
	req.Instrument = in
	return req
}

func typedCard(credential, brand, last string) *paymentsv1.PaymentInstrument {
	return &paymentsv1.PaymentInstrument{Id: "pi_c", HandlerId: "cartao", Type: "card", Brand: brand, LastDigits: last, Credential: []byte(credential)}
}

// The typed instrument is read as instrument_json was: the credential
// (opaque to the checkout service) pays, is checked for card numbers and
// is never echoed; the stated brand meets the handler's constraint and
// shows on the receipt; a retry is the same attempt and a different
// instrument under its id is refused.
func TestTypedInstrument(t *testing.T) {
	e := newEnv(t)
	req := typedStart(e.a, "chk_typed", 25990, typedCard(tokenCred("tok_typed_4242"), "visa", "4242"))
	a := e.start(e.a, req)
	if a.GetStatus() != statusSucceeded || a.GetInstrumentType() != "card" || a.GetHandlerId() != "cartao" || a.GetAmount() != 25990 {
		t.Fatalf("got %v %s %s %d %q", a.GetStatus(), a.GetInstrumentType(), a.GetHandlerId(), a.GetAmount(), a.GetFailureMessage())
	}
	if a.GetDisplayJson() != `{"brand":"visa","last_digits":"4242"}` {
		t.Errorf("display %s", a.GetDisplayJson())
	}
	if strings.Contains(a.String(), "tok_typed") {
		t.Errorf("the token is echoed: %v", a)
	}
	if again := e.start(e.a, req); again.GetId() != a.GetId() || again.GetStatus() != a.GetStatus() || e.cardCharges(e.a) != 1 {
		t.Errorf("retry: %v, %d charges", again, e.cardCharges(e.a))
	}
	other := typedStart(e.a, "chk_typed", 25990, typedCard(tokenCred("tok_typed2_4242"), "visa", "4242"))
	other.AttemptId = req.GetAttemptId()
	if _, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(other)); codeOf(err) != "failed_precondition/attempt_conflict" {
		t.Errorf("another instrument under the same attempt id: %s", codeOf(err))
	}

	for _, c := range []struct {
		name string
		in   *paymentsv1.PaymentInstrument
		msg  string
	}{
		{"card number in the credential", typedCard(`{"type":"token","token":"tok_x_4242","number":"4111111111111111"}`, "visa", "1111"), "Números de cartão não são aceitos"},
		{"pan as a token", typedCard(tokenCred("4111 1111 1111 1111"), "visa", "1111"), "Números de cartão não são aceitos"},
		{"brand refused", typedCard(tokenCred("tok_amex_4242"), "amex", "0005"), `A bandeira "amex" não é aceita por esta loja (aceitas: visa, mastercard).`},
		{"no type", &paymentsv1.PaymentInstrument{Id: "pi_c", HandlerId: "cartao", Credential: []byte(tokenCred("tok_y_4242"))}, "O meio de pagamento precisa de type."},
		{"no handler", &paymentsv1.PaymentInstrument{Id: "pi_c", Type: "card", Credential: []byte(tokenCred("tok_y_4242"))}, "O meio de pagamento precisa de handler_id."},
		{"credential not JSON", typedCard(`{"type":`, "visa", "4242"), "O meio de pagamento enviado não é um objeto JSON válido."},
		{"no credential", typedCard("", "visa", "4242"), "O cartão delegado precisa de uma credencial do tipo token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := e.start(e.a, typedStart(e.a, "chk_typed_"+strings.ReplaceAll(c.name, " ", "_"), 1000, c.in))
			if a.GetStatus() != statusFailed || a.GetFailureCode() != "payment_failed" || !strings.HasPrefix(a.GetFailureMessage(), c.msg) {
				t.Errorf("got %v %q %q", a.GetStatus(), a.GetFailureCode(), a.GetFailureMessage())
			}
			if strings.Contains(a.String(), "4111") {
				t.Errorf("the card number is echoed: %v", a)
			}
		})
	}
	if n := e.cardCharges(e.a); n != 1 {
		t.Errorf("%d processor charges, want 1", n)
	}
}
