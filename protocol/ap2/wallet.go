package ap2

import (
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Wallet makes AP2 mandates: the test wallet of the demo agent and of the
// tests (a trusted platform provider signing with its profile key). It is
// the producing side of Verify, CheckoutMandate and PaymentMandate; the
// e2e tests build theirs from AP2's schemas instead.
type Wallet struct {
	// Issuer signs the SD-JWT; IssuerKID is its kid in the agent profile.
	Issuer    *ecdsa.PrivateKey
	IssuerKID string
	// Holder signs the key binding (default: Issuer).
	Holder *ecdsa.PrivateKey
	// IssuerID is the iss claim (the agent profile URL).
	IssuerID string
}

// MandateOptions shape one mandate; the zero value is a valid one.
type MandateOptions struct {
	// Lifetime is exp - now (default 10 minutes); negative makes an
	// expired mandate.
	Lifetime time.Duration
	// Now defaults to time.Now.
	Now time.Time
	// NoKeyBinding leaves the key-binding JWT out.
	NoKeyBinding bool
	// Nonce defaults to the checkout's id (tests bind a mandate to
	// another checkout with it).
	Nonce string
}

// Mandate makes AP2's closed checkout mandate (vct mandate.checkout.1)
// for checkout (the checkout answer as received, with its
// ap2.merchant_authorization): checkout_jwt is the merchant-signed JWT of
// it (CheckoutJWT), selectively disclosed, and checkout_hash its sha-256;
// presented to the merchant at audience (its origin) for the checkout's
// id.
func (w *Wallet) Mandate(checkout json.RawMessage, audience string, o MandateOptions) (string, error) {
	id, err := checkoutID(checkout)
	if err != nil {
		return "", err
	}
	jwt, err := CheckoutJWT(checkout)
	if err != nil {
		return "", err
	}
	disclosure, digest, err := disclosureOf("checkout_jwt", jwt)
	if err != nil {
		return "", err
	}
	claims := map[string]any{"vct": VCTCheckout, "checkout_hash": sdHash(jwt), "_sd": []string{digest}}
	return w.present(claims, []string{disclosure}, audience, id, o)
}

// PaymentDetails are what a payment mandate authorizes besides the
// checkout: the payee (default: the merchant at audience), the instrument
// (AP2 payment_instrument: id and type of the instrument the agent
// selects), and the amount (default: the checkout's total and currency).
type PaymentDetails struct {
	Payee      map[string]any
	Instrument map[string]any
	Amount     *int64
	Currency   string
}

// PaymentMandate makes AP2's closed payment mandate (vct
// mandate.payment.1) for checkout: transaction_id is the sha-256 of the
// checkout's checkout_jwt (the same as the checkout mandate's
// checkout_hash), payment_amount the checkout's total in centavos. It goes
// in payment.instruments[*].credential.token.
func (w *Wallet) PaymentMandate(checkout json.RawMessage, audience string, d PaymentDetails, o MandateOptions) (string, error) {
	id, err := checkoutID(checkout)
	if err != nil {
		return "", err
	}
	jwt, err := CheckoutJWT(checkout)
	if err != nil {
		return "", err
	}
	var c struct {
		Currency string `json:"currency"`
		Totals   []struct {
			Type   string `json:"type"`
			Amount int64  `json:"amount"`
		} `json:"totals"`
	}
	_ = json.Unmarshal(checkout, &c)
	amount, currency := int64(-1), c.Currency
	for _, t := range c.Totals {
		if t.Type == "total" {
			amount = t.Amount
		}
	}
	if d.Amount != nil {
		amount = *d.Amount
	}
	if d.Currency != "" {
		currency = d.Currency
	}
	if amount < 0 || currency == "" {
		return "", errors.New("ap2: the checkout has no total to pay")
	}
	payee := d.Payee
	if payee == nil {
		payee = map[string]any{"id": audience, "name": hostOf(audience), "website": audience}
	}
	if d.Instrument == nil {
		return "", errors.New("ap2: a payment mandate needs the payment instrument (id and type)")
	}
	claims := map[string]any{
		"vct": VCTPayment, "transaction_id": sdHash(jwt), "payee": payee,
		"payment_amount": map[string]any{"amount": amount, "currency": currency}, "payment_instrument": d.Instrument,
	}
	return w.present(claims, nil, audience, id, o)
}

// present signs claims (with iat, exp, iss and cnf added) as the issuer
// JWT, appends the disclosures and the key binding to audience and nonce
// (o.Nonce, else id).
func (w *Wallet) present(claims map[string]any, disclosures []string, audience, id string, o MandateOptions) (string, error) {
	if w.Issuer == nil || w.IssuerKID == "" {
		return "", errors.New("ap2: the wallet needs an issuer key and its kid")
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	life := o.Lifetime
	if life == 0 {
		life = 10 * time.Minute
	}
	holder := w.Holder
	if holder == nil {
		holder = w.Issuer
	}
	cnf, err := jose.JSONWebKey{Key: &holder.PublicKey, Algorithm: string(jose.ES256)}.MarshalJSON()
	if err != nil {
		return "", err
	}
	claims["iat"], claims["exp"] = now.Unix(), now.Add(life).Unix()
	claims["_sd_alg"] = "sha-256"
	claims["cnf"] = map[string]json.RawMessage{"jwk": cnf}
	if _, ok := claims["_sd"]; !ok {
		claims["_sd"] = []string{}
	}
	if w.IssuerID != "" {
		claims["iss"] = w.IssuerID
	}
	issuerJWT, err := signJWT(w.Issuer, w.IssuerKID, TypeIssuer, claims)
	if err != nil {
		return "", err
	}
	sd := issuerJWT + "~"
	for _, d := range disclosures {
		sd += d + "~"
	}
	if o.NoKeyBinding {
		return strings.TrimSuffix(sd, "~"), nil
	}
	nonce := o.Nonce
	if nonce == "" {
		nonce = id
	}
	kb, err := signJWT(holder, "", TypeKeyBinding, map[string]any{
		"iat": now.Unix(), "aud": audience, "nonce": nonce, "sd_hash": sdHash(sd),
	})
	if err != nil {
		return "", err
	}
	return sd + kb, nil
}

func checkoutID(checkout json.RawMessage) (string, error) {
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(checkout, &c); err != nil || c.ID == "" {
		return "", errors.New("ap2: the checkout has no id")
	}
	return c.ID, nil
}

func hostOf(origin string) string {
	if u, err := url.Parse(origin); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return origin
}

func disclosureOf(name string, value any) (string, string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", "", err
	}
	arr, err := json.Marshal([]any{base64.RawURLEncoding.EncodeToString(salt), name, value})
	if err != nil {
		return "", "", err
	}
	d := base64.RawURLEncoding.EncodeToString(arr)
	return d, sdHash(d), nil
}

func signJWT(key *ecdsa.PrivateKey, kid, typ string, claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	var k any = key
	if kid != "" {
		k = jose.JSONWebKey{Key: key, KeyID: kid}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		return "", err
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return obj.CompactSerialize()
}

// PublicJWK is key's public JWK with kid, as an agent profile publishes it.
func PublicJWK(key *ecdsa.PrivateKey, kid string) (json.RawMessage, error) {
	return jose.JSONWebKey{Key: &key.PublicKey, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}.MarshalJSON()
}
