package cardsim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"time"

	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// testCard is a card as a PaymentMethod shows it.
type testCard struct{ brand, last4 string }

// Stripe's documented test tokens and test payment methods the simulator
// knows (docs.stripe.com/testing), by the card they stand for.
var (
	testTokens = map[string]testCard{
		"tok_visa": {"visa", "4242"}, "tok_visa_debit": {"visa", "5556"}, "tok_mastercard": {"mastercard", "4444"},
		"tok_mastercard_debit": {"mastercard", "8210"}, "tok_amex": {"amex", "8431"},
		"tok_chargeDeclined": {"visa", "0002"}, "tok_chargeDeclinedInsufficientFunds": {"visa", "9995"},
		"tok_threeDSecure2Required": {"visa", "3220"},
	}
	testPaymentMethods = map[string]testCard{
		"pm_card_visa": {"visa", "4242"}, "pm_card_visa_debit": {"visa", "5556"}, "pm_card_mastercard": {"mastercard", "4444"},
		"pm_card_mastercard_debit": {"mastercard", "8210"}, "pm_card_amex": {"amex", "8431"},
		"pm_card_chargeDeclined": {"visa", "0002"}, "pm_card_chargeDeclinedInsufficientFunds": {"visa", "9995"},
		"pm_card_threeDSecure2Required": {"visa", "3220"},
	}
)

// sandboxToken is the shape of the sandbox vault's tokens (as simcard's).
var (
	sandboxToken = regexp.MustCompile(`^tok_[A-Za-z0-9_]{4,200}$`)
	fourDigits   = regexp.MustCompile(`^[0-9]{4}$`)
)

// tokenCard is the card behind a token; false for what is no token.
func tokenCard(tok string) (testCard, bool) {
	if c, ok := testTokens[tok]; ok {
		return c, true
	}
	if !sandboxToken.MatchString(tok) {
		return testCard{}, false
	}
	c := testCard{"visa", tok[len(tok)-4:]}
	if !fourDigits.MatchString(c.last4) {
		c.last4 = "4242"
	}
	return c, true
}

// outcome is what the issuer answers a card.
type outcome struct {
	status      string // succeeded, requires_action or requires_payment_method
	code        string // Stripe's error code of a decline
	declineCode string
	message     string
}

func outcomeOf(last4 string) outcome {
	switch last4 {
	case "0002":
		return outcome{"requires_payment_method", "card_declined", "generic_decline", "Your card was declined."}
	case "9995":
		return outcome{"requires_payment_method", "card_declined", "insufficient_funds", "Your card has insufficient funds."}
	case "3220":
		return outcome{status: "requires_action"}
	}
	return outcome{status: "succeeded"}
}

// paymentMethod is a PaymentMethod as the API resolves it.
type paymentMethod struct {
	id        string
	card      testCard
	tokenHash []byte // nil for Stripe's test payment methods
	metadata  json.RawMessage
	created   time.Time
}

func pmFromRow(r pspsimdb.PspsimCardPaymentMethod) paymentMethod {
	return paymentMethod{id: r.ID, card: testCard{r.Brand, r.Last4}, tokenHash: r.TokenHash, metadata: r.Metadata, created: r.CreatedAt}
}

// JSON is Stripe's PaymentMethod object. Its fields are in the order of
// their names (as a map's would be): the bytes are those of the object as
// a map, with the constant parts marshaled once.
func (pm paymentMethod) JSON() json.RawMessage {
	fp := sha256.Sum256(append([]byte("cardsim fingerprint\x00"+pm.card.last4), pm.tokenHash...))
	md := pm.metadata
	if md == nil {
		md = json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(pmObject{
		AllowRedisplay: "unspecified", BillingDetails: pmBillingDetails,
		Card: pmCard{
			Brand: pm.card.brand, Checks: pmChecks, Country: "BR", DisplayBrand: pm.card.brand,
			ExpMonth: 12, ExpYear: pm.created.Year() + 5, Fingerprint: hex.EncodeToString(fp[:8]), Funding: "credit",
			Last4: pm.card.last4, Networks: pmNetworks{Available: []string{pm.card.brand}},
			RegulatedStatus: "unregulated", ThreeDSecureUsage: pmThreeDSecureUsage,
		},
		Created: pm.created.Unix(), ID: pm.id, Metadata: md, Object: "payment_method", Type: "card",
	})
	return b
}

// The constant parts of a PaymentMethod.
var (
	pmBillingDetails    = json.RawMessage(`{"address":{"city":null,"country":null,"line1":null,"line2":null,"postal_code":null,"state":null},"email":null,"name":null,"phone":null,"tax_id":null}`)
	pmChecks            = json.RawMessage(`{"address_line1_check":null,"address_postal_code_check":null,"cvc_check":"pass"}`)
	pmThreeDSecureUsage = json.RawMessage(`{"supported":true}`)
)

type pmObject struct {
	AllowRedisplay string          `json:"allow_redisplay"`
	BillingDetails json.RawMessage `json:"billing_details"`
	Card           pmCard          `json:"card"`
	Created        int64           `json:"created"`
	Customer       *string         `json:"customer"`
	ID             string          `json:"id"`
	Livemode       bool            `json:"livemode"`
	Metadata       json.RawMessage `json:"metadata"`
	Object         string          `json:"object"`
	Type           string          `json:"type"`
}

type pmCard struct {
	Brand             string          `json:"brand"`
	Checks            json.RawMessage `json:"checks"`
	Country           string          `json:"country"`
	DisplayBrand      string          `json:"display_brand"`
	ExpMonth          int             `json:"exp_month"`
	ExpYear           int             `json:"exp_year"`
	Fingerprint       string          `json:"fingerprint"`
	Funding           string          `json:"funding"`
	GeneratedFrom     *string         `json:"generated_from"`
	Last4             string          `json:"last4"`
	Networks          pmNetworks      `json:"networks"`
	RegulatedStatus   string          `json:"regulated_status"`
	ThreeDSecureUsage json.RawMessage `json:"three_d_secure_usage"`
	Wallet            *string         `json:"wallet"`
}

type pmNetworks struct {
	Available []string `json:"available"`
	Preferred *string  `json:"preferred"`
}

// nextAction is a PaymentIntent's next_action while it waits for 3-D
// Secure: the challenge page by redirect when the intent has a return_url,
// else (as Stripe) for Stripe.js.
type nextAction struct {
	Type          string         `json:"type"`
	RedirectToURL *redirectToURL `json:"redirect_to_url,omitempty"`
	UseStripeSDK  map[string]any `json:"use_stripe_sdk,omitempty"`
}

type redirectToURL struct {
	ReturnURL string `json:"return_url"`
	URL       string `json:"url"`
}

// intentJSON is Stripe's PaymentIntent object.
type intentJSON struct {
	ID                                string          `json:"id"`
	Object                            string          `json:"object"`
	Amount                            int64           `json:"amount"`
	AmountCapturable                  int64           `json:"amount_capturable"`
	AmountDetails                     map[string]any  `json:"amount_details"`
	AmountReceived                    int64           `json:"amount_received"`
	Application                       *string         `json:"application"`
	ApplicationFeeAmount              *int64          `json:"application_fee_amount"`
	AutomaticPaymentMethods           json.RawMessage `json:"automatic_payment_methods"`
	CanceledAt                        *int64          `json:"canceled_at"`
	CancellationReason                *string         `json:"cancellation_reason"`
	CaptureMethod                     string          `json:"capture_method"`
	ClientSecret                      string          `json:"client_secret"`
	ConfirmationMethod                string          `json:"confirmation_method"`
	Created                           int64           `json:"created"`
	Currency                          string          `json:"currency"`
	Customer                          *string         `json:"customer"`
	Description                       *string         `json:"description"`
	LastPaymentError                  json.RawMessage `json:"last_payment_error"`
	LatestCharge                      *string         `json:"latest_charge"`
	Livemode                          bool            `json:"livemode"`
	Metadata                          json.RawMessage `json:"metadata"`
	NextAction                        *nextAction     `json:"next_action"`
	OnBehalfOf                        *string         `json:"on_behalf_of"`
	PaymentMethod                     *string         `json:"payment_method"`
	PaymentMethodConfigurationDetails *string         `json:"payment_method_configuration_details"`
	PaymentMethodOptions              map[string]any  `json:"payment_method_options"`
	PaymentMethodTypes                []string        `json:"payment_method_types"`
	Processing                        *string         `json:"processing"`
	ReceiptEmail                      *string         `json:"receipt_email"`
	Review                            *string         `json:"review"`
	SetupFutureUsage                  *string         `json:"setup_future_usage"`
	Shipping                          *string         `json:"shipping"`
	Source                            *string         `json:"source"`
	StatementDescriptor               *string         `json:"statement_descriptor"`
	StatementDescriptorSuffix         *string         `json:"statement_descriptor_suffix"`
	Status                            string          `json:"status"`
	TransferData                      *string         `json:"transfer_data"`
	TransferGroup                     *string         `json:"transfer_group"`
}

// challengeURL is the 3-D Secure page of an intent (its client secret
// lets the buyer's browser in).
func (s *Sim) challengeURL(in pspsimdb.PspsimCardIntent) string {
	return s.baseURL() + "/sim/3ds/" + in.ID + "?" + url.Values{"client_secret": {in.ClientSecret}}.Encode()
}

func (s *Sim) intentObject(in pspsimdb.PspsimCardIntent) intentJSON {
	o := intentJSON{
		ID: in.ID, Object: "payment_intent", Amount: in.Amount, AmountDetails: map[string]any{"tip": map[string]any{}},
		AmountReceived: in.AmountReceived, AutomaticPaymentMethods: in.AutomaticPaymentMethods,
		CancellationReason: in.CancellationReason, CaptureMethod: in.CaptureMethod, ClientSecret: in.ClientSecret,
		ConfirmationMethod: "automatic", Created: in.CreatedAt.Unix(), Currency: in.Currency, Description: in.Description,
		LastPaymentError: in.LastPaymentError, LatestCharge: in.LatestCharge, Metadata: in.Metadata,
		PaymentMethod: in.PaymentMethod, PaymentMethodTypes: in.PaymentMethodTypes, Status: in.Status,
		PaymentMethodOptions: map[string]any{"card": map[string]any{
			"installments": nil, "mandate_options": nil, "network": nil, "request_three_d_secure": "automatic"}},
	}
	if in.CanceledAt != nil {
		at := in.CanceledAt.Unix()
		o.CanceledAt = &at
	}
	if o.PaymentMethodTypes == nil {
		o.PaymentMethodTypes = []string{}
	}
	if in.Status == "requires_action" {
		if in.ReturnUrl != nil {
			o.NextAction = &nextAction{Type: "redirect_to_url", RedirectToURL: &redirectToURL{ReturnURL: *in.ReturnUrl, URL: s.challengeURL(in)}}
		} else {
			o.NextAction = &nextAction{Type: "use_stripe_sdk", UseStripeSDK: map[string]any{
				"type": "three_d_secure_redirect", "stripe_js": s.challengeURL(in)}}
		}
	}
	return o
}

func (s *Sim) intentRaw(in pspsimdb.PspsimCardIntent) json.RawMessage {
	b, err := json.Marshal(s.intentObject(in))
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// paymentError is a failed confirmation as last_payment_error shows it.
func paymentError(typ, code, declineCode, message, charge string, pm json.RawMessage) json.RawMessage {
	m := map[string]any{"type": typ, "code": code, "decline_code": declineCode, "doc_url": docURL(code), "message": message}
	if charge != "" {
		m["charge"] = charge
	}
	if pm != nil {
		m["payment_method"] = pm
	}
	b, _ := json.Marshal(m)
	return b
}

func refundObject(r pspsimdb.PspsimCardRefund) map[string]any {
	return map[string]any{
		"id": r.ID, "object": "refund", "amount": r.Amount, "balance_transaction": "txn_" + r.ID[len("re_"):],
		"charge": r.Charge, "created": r.CreatedAt.Unix(), "currency": r.Currency,
		"destination_details": map[string]any{"type": "card", "card": map[string]any{
			"reference_status": "pending", "reference_type": "acquirer_reference_number", "type": "refund"}},
		"metadata": r.Metadata, "payment_intent": r.PaymentIntent, "reason": r.Reason, "receipt_number": nil,
		"source_transfer_reversal": nil, "status": "succeeded", "transfer_reversal": nil,
	}
}
