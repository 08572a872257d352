package wire

import (
	"encoding/json"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// PaymentInstrument is the instrument StartPayment carries to the payments
// service: what it is, typed, with the card display the agent stated
// (display.brand, display.last_digits), around the credential, which goes
// exactly as the agent sent it (with AP2, a payment mandate in
// credential.token) and which only the payments service reads.
func PaymentInstrument(in bcp.PaymentInstrument) *paymentsv1.PaymentInstrument {
	var d struct {
		Brand      string `json:"brand"`
		LastDigits string `json:"last_digits"`
	}
	if len(in.Display) > 0 {
		_ = json.Unmarshal(in.Display, &d) // what it holds of both, as the payments service read it
	}
	return &paymentsv1.PaymentInstrument{Id: in.ID, HandlerId: in.HandlerID, Type: in.Type, Brand: d.Brand, LastDigits: d.LastDigits,
		Credential: in.Credential}
}
