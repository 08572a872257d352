package stripecard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/form"
)

// stripeGoForm is the body stripe-go's Call sends for params (its form
// encoder; none of these params has UnsetFields).
func stripeGoForm(params stripe.ParamsContainer) string {
	v := &form.Values{}
	form.AppendTo(v, params)
	return v.Encode()
}

// TestChargeFormIsStripeGos: Charge's hand-encoded body is byte for byte
// what stripe-go made of the PaymentIntentCreateParams Charge built before
// (a retry after an upgrade must send the same parameters under its key).
func TestChargeFormIsStripeGos(t *testing.T) {
	for _, c := range []struct {
		amount                                 int64
		currency, pm, returnURL, key, checkout string
	}{
		{12345, "brl", "pm_1PqRsT", "https://loja.example/checkout/chk_1", "pay_06bz8x7d3y2k4m5n6p7q8r9s0t", "chk_1"},
		{1, "usd", "card_1abc", "", "k", ""},
		{9223372036854775807, "brl", "src_x", "https://loja.example/c?a=1&b=c d+e/é#f", "pay:1.2_3-4", ""},
		{500, "brl", "pm_x", "", "pay_1", "chk ção&x=y+z"},
		{500, "brl", "", "http://127.0.0.1:8080/", "pay_1", "chk_[1]"},
	} {
		params := &stripe.PaymentIntentCreateParams{
			Amount:             stripe.Int64(c.amount),
			Currency:           stripe.String(c.currency),
			Confirm:            stripe.Bool(true),
			CaptureMethod:      stripe.String(string(stripe.PaymentIntentCaptureMethodAutomatic)),
			PaymentMethod:      stripe.String(c.pm),
			PaymentMethodTypes: []*string{stripe.String("card")},
		}
		if c.returnURL != "" {
			params.ReturnURL = stripe.String(c.returnURL)
		}
		params.AddMetadata(metaAttempt, c.key)
		if c.checkout != "" {
			params.AddMetadata(metaCheckout, c.checkout)
		}
		want := stripeGoForm(params)
		if got := string(chargeForm(c.amount, c.currency, c.pm, c.returnURL, c.key, c.checkout)); got != want {
			t.Errorf("charge form\n got %s\nwant %s", got, want)
		}
	}
}

func TestTokenFormIsStripeGos(t *testing.T) {
	for _, c := range []struct{ token, key string }{
		{"tok_1PqRsTuV", "pay_06bz8x7d3y2k4m5n6p7q8r9s0t"},
		{"tok_a+b/c d&é", "pay:1.2_3-4"},
	} {
		params := &stripe.PaymentMethodCreateParams{
			Type: stripe.String("card"),
			Card: &stripe.PaymentMethodCreateCardParams{Token: stripe.String(c.token)},
		}
		params.AddMetadata(metaAttempt, c.key)
		want := stripeGoForm(params)
		if got := string(tokenForm(c.token, c.key)); got != want {
			t.Errorf("token form\n got %s\nwant %s", got, want)
		}
	}
}

// TestIntentReplyIsStripeGos: what Charge decodes of a PaymentIntent
// equals what stripe-go's PaymentIntent decodes of the same answer, in
// every field Charge reads.
func TestIntentReplyIsStripeGos(t *testing.T) {
	for _, body := range []string{
		`{"id":"pi_1","object":"payment_intent","amount":12345,"created":1764750000,"currency":"brl","status":"succeeded",
		  "metadata":{"bcp_attempt_id":"pay_1","bcp_checkout_id":"chk_1"},"next_action":null,"last_payment_error":null,
		  "payment_method_options":{"card":{"request_three_d_secure":"automatic"}},"amount_details":{"tip":{}}}`,
		`{"id":"pi_2","object":"payment_intent","amount":500,"created":1,"status":"requires_action","metadata":{"bcp_attempt_id":"k"},
		  "next_action":{"type":"redirect_to_url","redirect_to_url":{"return_url":"https://loja.example/c","url":"https://sim.example/3ds/pi_2?client_secret=pi_2_secret_x"}}}`,
		`{"id":"pi_3","object":"payment_intent","amount":500,"status":"requires_payment_method","metadata":{},
		  "last_payment_error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds.",
		  "payment_method":{"id":"pm_1","object":"payment_method","type":"card","card":{"brand":"visa","last4":"9995"}}}}`,
		`{"id":"pi_4","object":"payment_intent","amount":7,"status":"canceled","metadata":{"bcp_voided":"true"},"next_action":{"type":"use_stripe_sdk","use_stripe_sdk":{"type":"three_d_secure_redirect"}}}`,
	} {
		var full stripe.PaymentIntent
		if err := json.Unmarshal([]byte(body), &full); err != nil {
			t.Fatal(err)
		}
		var r intentReply
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		want := stripe.PaymentIntent{
			ID: full.ID, Amount: full.Amount, Created: full.Created, Status: full.Status, Metadata: full.Metadata,
			NextAction: full.NextAction, LastPaymentError: full.LastPaymentError,
		}
		got, _ := json.Marshal(r.intent())
		wantJSON, _ := json.Marshal(&want)
		if string(got) != string(wantJSON) {
			t.Errorf("decoded\n got %s\nwant %s", got, wantJSON)
		}
		p := &Processor{}
		gotCh, gotErr := p.outcome(r.intent())
		wantCh, wantErr := p.outcome(&full)
		if gotCh != wantCh || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("outcome %+v %v, want %+v %v", gotCh, gotErr, wantCh, wantErr)
		}
	}
}

// TestKeyShapedIsTheRegexp: keyShaped answers as idempotencyKeyShape.
func TestKeyShapedIsTheRegexp(t *testing.T) {
	keys := []string{"", "a", "pay_06bz8x7d3y2k4m5n6p7q8r9s0t", "pm:pay_1", "a.b-c_d:E9", "a b", "a/b", "ação", "a\n", "a\x00",
		strings.Repeat("k", 200), strings.Repeat("k", 201), "tok_%", "[x]", "pay_1'"}
	for c := 0; c < 256; c++ {
		keys = append(keys, string(rune(c)), "k"+string([]byte{byte(c)}))
	}
	for _, k := range keys {
		if got, want := keyShaped(k), idempotencyKeyShape.MatchString(k); got != want {
			t.Errorf("keyShaped(%q) = %v, want %v", k, got, want)
		}
	}
}
