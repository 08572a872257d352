package ap2

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// AP2's mandate layout (schemas/, docs checkout_mandate.md and
// payment_mandate.md) on top of Verify's envelope. With UCP, the
// checkout_jwt of a checkout mandate is the merchant-signed JWT of the
// Checkout object: the detached ap2.merchant_authorization with its
// payload (Payload: the RFC 8785 form of the checkout without "ap2")
// re-attached, so a checkout answer as received is all a wallet needs.

// CheckoutJWT is the merchant-signed JWT of a checkout answer that
// carries ap2.merchant_authorization.
func CheckoutJWT(checkout []byte) (string, error) {
	var c struct {
		AP2 *struct {
			MerchantAuthorization string `json:"merchant_authorization"`
		} `json:"ap2"`
	}
	if err := json.Unmarshal(checkout, &c); err != nil {
		return "", errors.New("ap2: the checkout is not a JSON object")
	}
	if c.AP2 == nil || c.AP2.MerchantAuthorization == "" {
		return "", errors.New("ap2: the checkout has no ap2.merchant_authorization")
	}
	h, sig, ok := strings.Cut(c.AP2.MerchantAuthorization, "..")
	if !ok || h == "" || sig == "" {
		return "", errors.New("ap2: a merchant authorization is <header>..<signature>")
	}
	payload, err := Payload(checkout)
	if err != nil {
		return "", err
	}
	return h + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + sig, nil
}

// VerifyCheckoutJWT checks that jwt is a compact JWS by one of keys (a
// merchant's published keys, by kid) over a checkout in RFC 8785 form,
// and returns that checkout and the kid.
func VerifyCheckoutJWT(jwt string, keys []json.RawMessage) ([]byte, string, error) {
	obj, err := jose.ParseSignedCompact(jwt, Algorithms)
	if err != nil || len(obj.Signatures) != 1 {
		return nil, "", errors.New("ap2: checkout_jwt is not a compact JWS signed with ES256, ES384 or ES512")
	}
	kid := obj.Signatures[0].Protected.KeyID
	key, ok := findKey(publicKeys(keys), kid)
	if !ok {
		return nil, "", fmt.Errorf("ap2: no published key %q", kid)
	}
	payload, err := obj.Verify(key)
	if err != nil {
		return nil, "", errors.New("ap2: checkout_jwt does not verify")
	}
	if c, err := Canonical(payload); err != nil || string(c) != string(payload) || len(payload) == 0 || payload[0] != '{' {
		return nil, "", errors.New("ap2: checkout_jwt's payload is not a checkout in RFC 8785 form")
	}
	return payload, kid, nil
}

// CheckoutMandate is a verified mandate read as AP2's checkout mandate:
// the closed mandate (presented alone, or in the key binding under an
// open one) and the open mandate's constraints, if any.
type CheckoutMandate struct {
	*Verified
	CheckoutJWT  string `json:"-"`
	CheckoutHash string `json:"checkout_hash"`
	// Open is set when the closed mandate was presented under an open
	// checkout mandate (mandate.checkout.open.1).
	Open        bool              `json:"open,omitempty"`
	Constraints []json.RawMessage `json:"-"`
}

// CheckoutMandate reads v as a checkout mandate: its claims follow AP2's
// checkout_mandate.json (or open_checkout_mandate.json, the closed claims
// then being the key binding's), and checkout_hash is the hash of
// checkout_jwt (_sd_alg, else sha-256). Nothing here says whose checkout
// it is: the caller verifies checkout_jwt (VerifyCheckoutJWT) and
// evaluates the constraints (Unmet).
func (v *Verified) CheckoutMandate(now time.Time) (*CheckoutMandate, error) {
	closed, alg := v.claims, v.SDAlg
	cm := &CheckoutMandate{Verified: v}
	switch v.VCT {
	case VCTCheckout:
	case VCTCheckoutOpen:
		if err := ValidateClaims(VCTCheckoutOpen, marshalClaims(v.claims)); err != nil {
			return nil, fail(CodeMandateInvalidSignature, "%v", err)
		}
		for _, c := range v.claims["constraints"].([]any) {
			cm.Constraints = append(cm.Constraints, marshalClaims(c))
		}
		cm.Open = true
		closed, alg = map[string]any{}, "sha-256"
		for k, e := range v.kb {
			switch k {
			case "aud", "nonce", "sd_hash":
			case "_sd_alg":
				alg, _ = e.(string)
			default:
				closed[k] = e
			}
		}
		if vct, _ := closed["vct"].(string); vct != VCTCheckout {
			return nil, fail(CodeMandateInvalidSignature, "an open checkout mandate's key binding must be the closed checkout mandate (vct %s) the agent signed", VCTCheckout)
		}
		if exp, ok := closed["exp"].(json.Number); ok {
			if e, err := exp.Int64(); err == nil && now.Unix() >= e {
				return nil, fail(CodeMandateExpired, "the closed checkout mandate expired at %s", time.Unix(e, 0).UTC().Format(time.RFC3339))
			}
		}
	case "":
		return nil, fail(CodeMandateInvalidSignature, "the mandate has no vct: an AP2 checkout mandate is %s (or %s); the former layout with a \"checkout\" claim is no longer accepted", VCTCheckout, VCTCheckoutOpen)
	case VCTPayment, VCTPaymentOpen:
		return nil, fail(CodeMandateInvalidSignature, "this is a payment mandate (%s): send it in payment.instruments[*].credential.token, and the checkout mandate here", v.VCT)
	default:
		return nil, fail(CodeMandateInvalidSignature, "vct %q is not an AP2 checkout mandate (%s or %s)", v.VCT, VCTCheckout, VCTCheckoutOpen)
	}
	switch alg {
	case "sha-256", "sha-384", "sha-512":
	default:
		return nil, fail(CodeMandateInvalidSignature, "_sd_alg must be sha-256, sha-384 or sha-512")
	}
	if jwt, ok := closed["checkout_jwt"]; !ok || jwt == "" {
		return nil, fail(CodeMerchantAuthorizationMissing, "the mandate discloses no checkout_jwt (the merchant-signed checkout)")
	}
	if err := ValidateClaims(VCTCheckout, marshalClaims(closed)); err != nil {
		return nil, fail(CodeMandateInvalidSignature, "%v", err)
	}
	cm.CheckoutJWT, _ = closed["checkout_jwt"].(string)
	cm.CheckoutHash, _ = closed["checkout_hash"].(string)
	if cm.CheckoutHash != hashB64(alg, cm.CheckoutJWT) {
		return nil, fail(CodeMandateInvalidSignature, "checkout_hash is not the %s hash of checkout_jwt", alg)
	}
	return cm, nil
}

// Merchant is who verifies a mandate, as AP2's merchant objects (id,
// name, website) may name it: any of IDs, or a website on one of Hosts.
type Merchant struct {
	IDs   []string
	Hosts []string // host names, without port
}

// Is reports whether an AP2 merchant object names m.
func (m Merchant) Is(raw json.RawMessage) bool {
	var o struct {
		ID      string `json:"id"`
		Website string `json:"website"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return false
	}
	if o.ID != "" && slices.Contains(m.IDs, strings.TrimRight(o.ID, "/")) {
		return true
	}
	if o.Website == "" {
		return false
	}
	w := o.Website
	if !strings.Contains(w, "://") {
		w = "https://" + w
	}
	u, err := url.Parse(w)
	return err == nil && u.Hostname() != "" && slices.ContainsFunc(m.Hosts, func(h string) bool { return strings.EqualFold(h, u.Hostname()) })
}

// Line is one checkout line for the line_items constraint.
type Line struct {
	ItemID   string
	Quantity int64
}

// Unmet evaluates the open mandate's constraints (checkout_mandate.md,
// "Constraints") against this merchant and the checkout's lines, and
// returns one reason per failed constraint (none: all are met).
func (cm *CheckoutMandate) Unmet(m Merchant, lines []Line) []string {
	var out []string
	for _, raw := range cm.Constraints {
		var c struct {
			Type    string            `json:"type"`
			Allowed []json.RawMessage `json:"allowed"`
			Items   []struct {
				ID              string `json:"id"`
				AcceptableItems []struct {
					ID string `json:"id"`
				} `json:"acceptable_items"`
				Quantity int64 `json:"quantity"`
			} `json:"items"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			out = append(out, "a constraint is malformed")
			continue
		}
		switch c.Type {
		case "checkout.allowed_merchants":
			switch {
			case len(c.Allowed) == 0:
				out = append(out, "checkout.allowed_merchants reveals no merchant, so no merchant is allowed")
			case !slices.ContainsFunc(c.Allowed, m.Is):
				out = append(out, "checkout.allowed_merchants does not allow this merchant")
			}
		case "checkout.line_items":
			reqs := make([]lineRequirement, len(c.Items))
			for i, it := range c.Items {
				reqs[i] = lineRequirement{id: it.ID, quantity: it.Quantity}
				for _, a := range it.AcceptableItems {
					reqs[i].acceptable = append(reqs[i].acceptable, a.ID)
				}
			}
			out = append(out, unmetLineItems(reqs, lines)...)
		default:
			out = append(out, fmt.Sprintf("constraint type %q is not one this merchant evaluates", c.Type))
		}
	}
	return out
}

type lineRequirement struct {
	id         string
	acceptable []string
	quantity   int64
}

// unmetLineItems is the line_items evaluation as a maximum flow
// (checkout_mandate.md): source → requirement (its quantity) → each
// checkout item it accepts (unbounded) → sink (the checkout's quantity of
// that item). It is met when the flow fills every requirement and every
// checkout item; each shortfall is its own reason.
func unmetLineItems(reqs []lineRequirement, lines []Line) []string {
	qty := map[string]int64{}
	for _, l := range lines {
		qty[l.ItemID] += l.Quantity
	}
	items := make([]string, 0, len(qty))
	for id := range qty {
		items = append(items, id)
	}
	sort.Strings(items)
	// Nodes: 0 source, 1..R requirements, R+1..R+I items, R+I+1 sink.
	R, I := len(reqs), len(items)
	n := R + I + 2
	sink := n - 1
	capm := make([][]int64, n)
	for i := range capm {
		capm[i] = make([]int64, n)
	}
	const inf = int64(1) << 50
	for r, req := range reqs {
		capm[0][1+r] = req.quantity
		for i, id := range items {
			if slices.Contains(req.acceptable, id) {
				capm[1+r][1+R+i] = inf
			}
		}
	}
	for i, id := range items {
		capm[1+R+i][sink] = qty[id]
	}
	flow := make([][]int64, n)
	for i := range flow {
		flow[i] = make([]int64, n)
	}
	for { // Edmonds–Karp: the graph is a few dozen nodes.
		prev := make([]int, n)
		for i := range prev {
			prev[i] = -1
		}
		prev[0] = 0
		queue := []int{0}
		for len(queue) > 0 && prev[sink] == -1 {
			u := queue[0]
			queue = queue[1:]
			for v := 0; v < n; v++ {
				if prev[v] == -1 && capm[u][v]-flow[u][v] > 0 {
					prev[v] = u
					queue = append(queue, v)
				}
			}
		}
		if prev[sink] == -1 {
			break
		}
		push := inf
		for v := sink; v != 0; v = prev[v] {
			push = min(push, capm[prev[v]][v]-flow[prev[v]][v])
		}
		for v := sink; v != 0; v = prev[v] {
			flow[prev[v]][v] += push
			flow[v][prev[v]] -= push
		}
	}
	var out []string
	for r, req := range reqs {
		if len(req.acceptable) == 0 {
			out = append(out, fmt.Sprintf("checkout.line_items requirement %q reveals no acceptable item", req.id))
		} else if got := flow[0][1+r]; got < req.quantity {
			out = append(out, fmt.Sprintf("checkout.line_items requirement %q needs %d of its acceptable items; the checkout has %d for it", req.id, req.quantity, got))
		}
	}
	for i, id := range items {
		if extra := qty[id] - flow[1+R+i][sink]; extra > 0 {
			out = append(out, fmt.Sprintf("the checkout has %d of item %q that checkout.line_items does not allow", extra, id))
		}
	}
	return out
}

// PaymentMandate is a verified mandate read as AP2's closed payment
// mandate (payment_mandate.json).
type PaymentMandate struct {
	*Verified
	TransactionID string          `json:"transaction_id"`
	Payee         json.RawMessage `json:"payee"`
	Amount        int64           `json:"amount"`
	Currency      string          `json:"currency"`
	Instrument    struct {
		ID          string `json:"id"`
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
	} `json:"payment_instrument"`
}

// PaymentMandate reads v as a closed payment mandate.
func (v *Verified) PaymentMandate() (*PaymentMandate, error) {
	switch v.VCT {
	case VCTPayment:
	case VCTPaymentOpen:
		return nil, fail(CodeMandateInvalidSignature, "open payment mandates (%s) are for the credential provider; present the closed payment mandate (%s)", VCTPaymentOpen, VCTPayment)
	case "":
		return nil, fail(CodeMandateInvalidSignature, "the mandate has no vct: an AP2 payment mandate is %s", VCTPayment)
	default:
		return nil, fail(CodeMandateInvalidSignature, "vct %q is not an AP2 payment mandate (%s)", v.VCT, VCTPayment)
	}
	raw := marshalClaims(v.claims)
	if err := ValidateClaims(VCTPayment, raw); err != nil {
		return nil, fail(CodeMandateInvalidSignature, "%v", err)
	}
	var c struct {
		TransactionID string          `json:"transaction_id"`
		Payee         json.RawMessage `json:"payee"`
		Amount        struct {
			Amount   int64  `json:"amount"`
			Currency string `json:"currency"`
		} `json:"payment_amount"`
		Instrument json.RawMessage `json:"payment_instrument"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fail(CodeMandateInvalidSignature, "the payment mandate's claims are malformed")
	}
	pm := &PaymentMandate{Verified: v, TransactionID: c.TransactionID, Payee: c.Payee, Amount: c.Amount.Amount, Currency: c.Amount.Currency}
	if err := json.Unmarshal(c.Instrument, &pm.Instrument); err != nil {
		return nil, fail(CodeMandateInvalidSignature, "the payment mandate's payment_instrument is malformed")
	}
	return pm, nil
}

// BindsTo reports whether the payment mandate's transaction_id is the
// hash of checkoutJWT (its SD-JWT's _sd_alg, else sha-256).
func (pm *PaymentMandate) BindsTo(checkoutJWT string) bool {
	return checkoutJWT != "" && pm.TransactionID == hashB64(pm.SDAlg, checkoutJWT)
}

// LooksLikeMandate reports whether a credential token has the shape of
// an SD-JWT presentation (a JWS followed by "~"): an AP2 payment mandate
// rather than a processor token or a delegated JWS.
func LooksLikeMandate(token string) bool {
	head, _, ok := strings.Cut(token, "~")
	return ok && strings.Count(head, ".") == 2
}

// HashB64 is the base64url digest of s with an SD-JWT hash algorithm
// ("" is sha-256): checkout_hash and transaction_id are such digests.
func HashB64(alg, s string) string { return hashB64(alg, s) }
