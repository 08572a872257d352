package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bcpdev/bcp/internal/tenancy"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// AP2 mandates built the way an AP2 wallet would, from AP2's schemas
// (protocol/ap2/schemas holds AP2's files unmodified) and RFC 9901, with
// go-jose and an RFC 8785 library only: none of the platform's ap2 code.
// Every claim set built here is first validated against AP2's schema.

// sdProp marks a claim as selectively disclosable (object property);
// sdElem an array element.
type (
	sdProp struct{ v any }
	sdElem struct{ v any }
)

type ap2Wallet struct {
	t   *testing.T
	key *ecdsa.PrivateKey // the agent profile's key (issuer and holder)
	kid string
	alg string // _sd_alg; "" leaves it out (sha-256)
}

func (w *ap2Wallet) hash(s string) string {
	var sum []byte
	switch w.alg {
	case "sha-384":
		h := sha512.Sum384([]byte(s))
		sum = h[:]
	default:
		h := sha256.Sum256([]byte(s))
		sum = h[:]
	}
	return base64.RawURLEncoding.EncodeToString(sum)
}

// conceal replaces sdProp/sdElem values by digests, returning the
// disclosures (each disclosed).
func (w *ap2Wallet) conceal(v any, out *[]string) any {
	disclose := func(arr []any) string {
		salt := make([]byte, 16)
		_, _ = rand.Read(salt)
		b, _ := json.Marshal(append([]any{base64.RawURLEncoding.EncodeToString(salt)}, arr...))
		d := base64.RawURLEncoding.EncodeToString(b)
		*out = append(*out, d)
		return w.hash(d)
	}
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		var sd []any
		for k, e := range x {
			if p, ok := e.(sdProp); ok {
				sd = append(sd, disclose([]any{k, w.conceal(p.v, out)}))
				continue
			}
			m[k] = w.conceal(e, out)
		}
		if len(sd) > 0 {
			m["_sd"] = sd
		}
		return m
	case []any:
		a := make([]any, 0, len(x))
		for _, e := range x {
			if el, ok := e.(sdElem); ok {
				a = append(a, map[string]any{"...": disclose([]any{w.conceal(el.v, out)})})
				continue
			}
			a = append(a, w.conceal(e, out))
		}
		return a
	}
	return v
}

// plain is v without the disclosure markers (what the verifier sees).
func plain(v any) any {
	switch x := v.(type) {
	case sdProp:
		return plain(x.v)
	case sdElem:
		return plain(x.v)
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = plain(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = plain(e)
		}
		return a
	}
	return v
}

// ap2Schema validates claims against AP2's schema file.
func ap2Schema(t *testing.T, file string, claims any) error {
	t.Helper()
	c := jsonschema.NewCompiler()
	dir := filepath.Join("..", "protocol", "ap2", "schemas")
	var root string
	for _, f := range []string{file, "types/merchant.json", "types/amount.json", "types/payment_instrument.json", "types/pisp.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		id := doc.(map[string]any)["$id"].(string)
		if f == file {
			root = id
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(root)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(plain(claims))
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	return s.Validate(inst)
}

// kbOptions shape the key binding (defaults: the merchant's origin, the
// checkout id, the right sd_hash, now).
type kbOptions struct {
	aud, nonce, sdHash string
	extra              map[string]any // more claims (an open mandate's closed one)
	noKB               bool
}

// present signs mandate claims (with iat, exp, cnf) as an SD-JWT and adds
// the key binding.
func (w *ap2Wallet) present(claims map[string]any, kb kbOptions) string {
	w.t.Helper()
	now := time.Now()
	claims["iat"], claims["exp"] = now.Unix(), now.Add(10*time.Minute).Unix()
	cnf, _ := jose.JSONWebKey{Key: &w.key.PublicKey}.MarshalJSON()
	claims["cnf"] = map[string]any{"jwk": json.RawMessage(cnf)}
	var disclosures []string
	payload := w.conceal(claims, &disclosures).(map[string]any)
	if w.alg != "" {
		payload["_sd_alg"] = w.alg
	}
	sign := func(typ, kid string, v any) string {
		var key any = w.key
		if kid != "" {
			key = jose.JSONWebKey{Key: w.key, KeyID: kid}
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
		if err != nil {
			w.t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		obj, err := s.Sign(b)
		if err != nil {
			w.t.Fatal(err)
		}
		out, _ := obj.CompactSerialize()
		return out
	}
	sd := sign("dc+sd-jwt", w.kid, payload) + "~"
	for _, d := range disclosures {
		sd += d + "~"
	}
	if kb.noKB {
		return sd
	}
	if kb.sdHash == "" {
		kb.sdHash = w.hash(sd)
	}
	kbClaims := map[string]any{"iat": now.Unix(), "aud": kb.aud, "nonce": kb.nonce, "sd_hash": kb.sdHash}
	for k, v := range kb.extra {
		kbClaims[k] = v
	}
	return sd + sign("kb+jwt", "", kbClaims)
}

// checkoutJWT is the merchant-signed JWT of a checkout answer: its
// detached merchant_authorization with the RFC 8785 form of the answer
// without "ap2" re-attached (UCP's signing input).
func checkoutJWT(t *testing.T, checkout json.RawMessage) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(checkout, &m); err != nil {
		t.Fatal(err)
	}
	auth := m["ap2"].(map[string]any)["merchant_authorization"].(string)
	delete(m, "ap2")
	b, _ := json.Marshal(m)
	canon, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	h, sig, _ := strings.Cut(auth, "..")
	return h + "." + base64.RawURLEncoding.EncodeToString(canon) + "." + sig
}

// closed is the closed checkout mandate's claims (checkout_mandate.json).
func (w *ap2Wallet) closed(jwt string) map[string]any {
	c := map[string]any{"vct": "mandate.checkout.1", "checkout_jwt": sdProp{jwt}, "checkout_hash": w.hash(jwt)}
	if err := ap2Schema(w.t, "checkout_mandate.json", c); err != nil {
		w.t.Fatalf("a closed checkout mandate that AP2's schema refuses: %v", err)
	}
	return c
}

// open is an open checkout mandate (open_checkout_mandate.json) with
// constraints; the closed mandate the agent signs goes in the key binding.
func (w *ap2Wallet) open(constraints ...any) map[string]any {
	c := map[string]any{"vct": "mandate.checkout.open.1", "constraints": constraints, "cnf": map[string]any{}}
	if err := ap2Schema(w.t, "open_checkout_mandate.json", c); err != nil {
		w.t.Fatalf("an open checkout mandate that AP2's schema refuses: %v", err)
	}
	delete(c, "cnf") // present adds the real one
	return c
}

func allowedMerchants(merchants ...any) map[string]any {
	return map[string]any{"type": "checkout.allowed_merchants", "allowed": merchants}
}

// lineItems is one checkout.line_items constraint: requirements of
// (id, quantity, acceptable item ids).
func lineItems(reqs ...any) map[string]any {
	return map[string]any{"type": "checkout.line_items", "items": reqs}
}

func requirement(id string, quantity int, items ...string) map[string]any {
	acc := []any{}
	for _, i := range items {
		acc = append(acc, sdElem{map[string]any{"id": i, "title": "Item " + i}})
	}
	return map[string]any{"id": id, "acceptable_items": acc, "quantity": quantity}
}

// payment is the closed payment mandate's claims (payment_mandate.json).
func (w *ap2Wallet) payment(transactionID string, payee map[string]any, amount int64, currency, instID, instType string) map[string]any {
	c := map[string]any{"vct": "mandate.payment.1", "transaction_id": transactionID, "payee": payee,
		"payment_amount":     map[string]any{"amount": amount, "currency": currency},
		"payment_instrument": map[string]any{"id": instID, "type": instType, "description": instType + " do comprador"}}
	if err := ap2Schema(w.t, "payment_mandate.json", c); err != nil {
		w.t.Fatalf("a payment mandate that AP2's schema refuses: %v", err)
	}
	return c
}

// layoutWorld is an AP2 merchant (Pix and card) and the ap2 agent, whose
// profile key is the wallet's.
type layoutWorld struct {
	*ap2World
	host   string
	origin string
	wallet *ap2Wallet
}

func newLayoutWorld(t *testing.T, host string) *layoutWorld {
	w := newAP2World(t, host)
	w.setAP2(host, true)
	return &layoutWorld{ap2World: w, host: host, origin: w.origin(host),
		wallet: &ap2Wallet{t: t, key: w.wallet.Issuer, kid: "wallet-1"}}
}

func (lw *layoutWorld) payee() map[string]any {
	return map[string]any{"id": lw.origin, "name": "Loja " + lw.host, "website": lw.origin}
}

// total is the checkout's total and currency.
func total(t *testing.T, checkout json.RawMessage) (int64, string) {
	var c struct {
		Currency string `json:"currency"`
		Totals   []struct {
			Type   string `json:"type"`
			Amount int64  `json:"amount"`
		} `json:"totals"`
	}
	if err := json.Unmarshal(checkout, &c); err != nil {
		t.Fatal(err)
	}
	for _, tt := range c.Totals {
		if tt.Type == "total" {
			return tt.Amount, c.Currency
		}
	}
	t.Fatalf("no total in %s", checkout)
	return 0, ""
}

func (lw *layoutWorld) pixInstrument(token string) map[string]any {
	in := map[string]any{"id": "pi_pix", "handler_id": lw.merch[lw.host].pixHandler, "type": "pix"}
	if token != "" {
		in["credential"] = map[string]any{"type": "token", "token": token}
	}
	return in
}

func ap2Card(token string) map[string]any {
	return map[string]any{"id": "pi_card", "handler_id": "card", "type": "card",
		"display":    map[string]any{"brand": "visa", "last_digits": "4242"},
		"credential": map[string]any{"type": "token", "token": token}}
}

func completeWith(d *ap2Driver, id, checkoutMandate string, instrument map[string]any) ap2Checkout {
	body := map[string]any{"payment": map[string]any{"instruments": []any{instrument}}}
	if checkoutMandate != "" {
		body["ap2"] = map[string]any{"checkout_mandate": checkoutMandate}
	}
	return decodeAP2(d.w.t, d.do("complete_checkout", id, body))
}

// charged counts what the simulators hold for the merchant: Pix charges
// and card payment intents, and the platform's payment attempts.
func (lw *layoutWorld) charged() int {
	return lw.count(`SELECT (SELECT count(*) FROM pspsim.charges) + (SELECT count(*) FROM pspsim.card_intents) + (SELECT count(*) FROM payments.attempts)`)
}

func (lw *layoutWorld) mandateRecord(orderID string) map[string]any {
	lw.t.Helper()
	ctx := tenancy.With(context.Background(), uuid.MustParse(lw.tenantID(lw.host)))
	o, err := lw.r.ClientsWithToken(operatorToken).Orders.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: orderID}))
	if err != nil {
		lw.t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(o.Msg.GetAp2MandateJson(), &rec); err != nil {
		lw.t.Fatalf("mandate record %s: %v", o.Msg.GetAp2MandateJson(), err)
	}
	return rec
}

// TestAP2LayoutPurchases: over MCP and REST, AP2-layout mandates built
// from AP2's schemas complete a Pix purchase (closed checkout mandate and
// payment mandate) and a card purchase (open checkout mandate with both
// constraints, the closed one in its key binding, and a payment mandate);
// the order records each mandate's vct and hash.
func TestAP2LayoutPurchases(t *testing.T) {
	lw := newLayoutWorld(t, "ap2-layout.localhost")
	w := lw.wallet
	for _, binding := range []string{"mcp", "rest"} {
		d := lw.driver(binding, "ap2", lw.host)

		// Pix: closed checkout mandate (sha-384 disclosures) + payment mandate.
		w.alg = "sha-384"
		ready := d.ready(lw.rates(lw.host))[1]
		id := decodeAP2(t, ready).ID
		jwt := checkoutJWT(t, ready)
		amount, currency := total(t, ready)
		cm := w.present(w.closed(jwt), kbOptions{aud: lw.origin, nonce: id})
		pm := w.present(w.payment(w.hash(jwt), lw.payee(), amount, currency, "pi_pix", "pix"), kbOptions{aud: lw.origin, nonce: id})
		got := completeWith(d, id, cm, lw.pixInstrument(pm))
		if got.Status != "complete_in_progress" {
			t.Fatalf("%s pix: %+v", binding, got)
		}
		var c struct {
			Payment struct {
				Instruments []struct {
					Display pixData `json:"display"`
				} `json:"instruments"`
			} `json:"payment"`
		}
		_ = json.Unmarshal(d.do("get_checkout", id, nil), &c)
		attempt := c.Payment.Instruments[0].Display.Pix.AttemptID
		ctx := tenancy.With(context.Background(), uuid.MustParse(lw.tenantID(lw.host)))
		if _, err := lw.r.ClientsWithToken(operatorToken).Payments.SimulatePixPayment(ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: attempt})); err != nil {
			t.Fatalf("simulate Pix payment of %q: %v", attempt, err)
		}
		var done ap2Checkout
		eventually(t, 30*time.Second, "pix checkout completes", func() bool {
			done = decodeAP2(t, d.do("get_checkout", id, nil))
			return done.Status == "completed"
		})
		rec := lw.mandateRecord(done.Order.ID)
		pay, _ := rec["payment_mandate"].(map[string]any)
		if rec["vct"] != "mandate.checkout.1" || rec["checkout_hash"] != w.hash(jwt) || pay == nil || pay["vct"] != "mandate.payment.1" ||
			pay["transaction_id"] != w.hash(jwt) || pay["instrument_type"] != "pix" || fmt.Sprint(pay["amount"]) != fmt.Sprint(amount) {
			t.Fatalf("%s pix: mandate record %v", binding, rec)
		}

		// Card: open checkout mandate (allowed_merchants by website,
		// line_items) with the closed mandate in the key binding.
		w.alg = ""
		ready = d.ready(lw.rates(lw.host))[1]
		id = decodeAP2(t, ready).ID
		jwt = checkoutJWT(t, ready)
		amount, currency = total(t, ready)
		open := w.open(
			lineItems(requirement("camiseta", 1, "var_cam", "var_outra")),
			allowedMerchants(sdElem{map[string]any{"id": "outra", "name": "Outra", "website": "https://outra.example"}},
				sdElem{map[string]any{"id": "m-1", "name": "Loja", "website": lw.origin}}),
		)
		closed := plain(w.closed(jwt)).(map[string]any)
		cm = w.present(open, kbOptions{aud: lw.origin, nonce: id, extra: closed})
		pm = w.present(w.payment(w.hash(jwt), lw.payee(), amount, currency, "pi_card", "card"), kbOptions{aud: lw.origin, nonce: id})
		got = completeWith(d, id, cm, ap2Card(pm))
		if got.Status != "completed" || got.Order == nil {
			t.Fatalf("%s card with an open mandate: %+v", binding, got)
		}
		rec = lw.mandateRecord(got.Order.ID)
		if rec["vct"] != "mandate.checkout.open.1" || rec["open"] != true || rec["checkout_hash"] != w.hash(jwt) || rec["payment_mandate"].(map[string]any)["instrument_id"] != "pi_card" {
			t.Fatalf("%s card: mandate record %v", binding, rec)
		}
	}
	if n := lw.count(`SELECT count(*) FROM pspsim.card_intents WHERE status = 'succeeded'`); n != 2 {
		t.Fatalf("%d card charges, want 2", n)
	}
}

// TestAP2LayoutRefusals: every hash, binding, constraint and payee (or
// amount, currency, instrument) mismatch is refused with its code, the
// checkout left ready and nothing charged anywhere (no attempt, no Pix
// charge, no card intent); then a good pair of mandates completes it.
func TestAP2LayoutRefusals(t *testing.T) {
	lw := newLayoutWorld(t, "ap2-recusas.localhost")
	w := lw.wallet
	for _, binding := range []string{"mcp", "rest"} {
		t.Run(binding, func(t *testing.T) {
			w.t = t
			d := lw.driver(binding, "ap2", lw.host)
			ready := d.ready(lw.rates(lw.host))[1]
			id := decodeAP2(t, ready).ID
			other := d.ready(lw.rates(lw.host))[1]
			jwt, otherJWT := checkoutJWT(t, ready), checkoutJWT(t, other)
			amount, currency := total(t, ready)
			kb := kbOptions{aud: lw.origin, nonce: id}
			good := func() string { return w.present(w.closed(jwt), kb) }
			goodPM := func() string {
				return w.present(w.payment(w.hash(jwt), lw.payee(), amount, currency, "pi_card", "card"), kb)
			}
			tamperedJWT := func() string {
				parts := strings.Split(jwt, ".")
				var m map[string]any
				b, _ := base64.RawURLEncoding.DecodeString(parts[1])
				_ = json.Unmarshal(b, &m)
				m["currency"] = "USD"
				b, _ = json.Marshal(m)
				b, _ = jcs.Transform(b)
				return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
			}()
			withClaims := func(f func(map[string]any)) string {
				c := w.closed(jwt)
				f(c)
				return w.present(c, kb)
			}
			openWith := func(constraints ...any) string {
				return w.present(w.open(constraints...), kbOptions{aud: lw.origin, nonce: id, extra: plain(w.closed(jwt)).(map[string]any)})
			}
			onlyThis := lineItems(requirement("camiseta", 1, "var_cam"))
			// Each refusal: its code and, for constraints, one message
			// each, with what a message must say.
			cases := []struct {
				name, mandate string
				codes         []string
				says          []string
			}{
				{"checkout_hash of another checkout_jwt", withClaims(func(c map[string]any) { c["checkout_hash"] = w.hash(otherJWT) }), []string{"mandate_invalid_signature"}, []string{"checkout_hash"}},
				{"checkout_hash with another algorithm", withClaims(func(c map[string]any) {
					s := sha512.Sum384([]byte(jwt))
					c["checkout_hash"] = base64.RawURLEncoding.EncodeToString(s[:])
				}), []string{"mandate_invalid_signature"}, []string{"checkout_hash"}},
				{"no vct (the former layout)", withClaims(func(c map[string]any) { delete(c, "vct") }), []string{"mandate_invalid_signature"}, []string{"vct"}},
				{"checkout_hash not a string", withClaims(func(c map[string]any) { c["checkout_hash"] = 42 }), []string{"mandate_invalid_signature"}, []string{"checkout_mandate.json"}},
				{"no checkout_jwt", withClaims(func(c map[string]any) { delete(c, "checkout_jwt") }), []string{"merchant_authorization_missing"}, nil},
				{"checkout_jwt edited", withClaims(func(c map[string]any) {
					c["checkout_jwt"], c["checkout_hash"] = sdProp{tamperedJWT}, w.hash(tamperedJWT)
				}), []string{"merchant_authorization_invalid"}, nil},
				{"another checkout's checkout_jwt", withClaims(func(c map[string]any) {
					c["checkout_jwt"], c["checkout_hash"] = sdProp{otherJWT}, w.hash(otherJWT)
				}), []string{"mandate_scope_mismatch"}, []string{"outro checkout"}},
				{"key binding for another audience", w.present(w.closed(jwt), kbOptions{aud: "https://outra.example", nonce: id}), []string{"mandate_scope_mismatch"}, []string{"audience"}},
				{"key binding for another checkout", w.present(w.closed(jwt), kbOptions{aud: lw.origin, nonce: "chk_outro"}), []string{"mandate_scope_mismatch"}, []string{"nonce"}},
				{"key binding over another SD-JWT", w.present(w.closed(jwt), kbOptions{aud: lw.origin, nonce: id, sdHash: w.hash("x")}), []string{"mandate_invalid_signature"}, []string{"sd_hash"}},
				{"no key binding", w.present(w.closed(jwt), kbOptions{noKB: true}), []string{"mandate_invalid_signature"}, []string{"key-binding"}},
				{"open: another merchant only", openWith(onlyThis, allowedMerchants(sdElem{map[string]any{"id": "outra", "name": "Outra", "website": "https://outra.example"}})),
					[]string{"mandate_scope_mismatch"}, []string{"allowed_merchants does not allow this merchant"}},
				{"open: no merchant revealed", openWith(onlyThis, allowedMerchants()), []string{"mandate_scope_mismatch"}, []string{"reveals no merchant"}},
				{"open: other items", openWith(lineItems(requirement("caneca", 1, "var_caneca"))),
					[]string{"mandate_scope_mismatch", "mandate_scope_mismatch"}, []string{`requirement "caneca" needs 1`, `item "var_cam" that checkout.line_items does not allow`}},
				{"open: more than the checkout has", openWith(lineItems(requirement("camiseta", 2, "var_cam"))), []string{"mandate_scope_mismatch"}, []string{`requirement "camiseta" needs 2 of its acceptable items; the checkout has 1`}},
				{"open: both constraints fail", openWith(lineItems(requirement("caneca", 1, "var_caneca")), allowedMerchants(sdElem{map[string]any{"id": "outra", "name": "Outra"}})),
					[]string{"mandate_scope_mismatch", "mandate_scope_mismatch", "mandate_scope_mismatch"}, []string{"caneca", "var_cam", "allowed_merchants"}},
				{"open: no closed mandate in the key binding", w.present(w.open(onlyThis), kb), []string{"mandate_invalid_signature"}, []string{"closed checkout mandate"}},
			}
			before := lw.charged()
			for _, c := range cases {
				got := completeWith(d, id, c.mandate, ap2Card(goodPM()))
				if got.Status != "ready_for_complete" || len(got.Messages) < len(c.codes) {
					t.Fatalf("%s: %+v", c.name, got)
				}
				for i, code := range c.codes {
					m := got.Messages[i]
					if m.Type != "error" || m.Code != code || m.Path != "$.ap2.checkout_mandate" || m.Severity != "recoverable" {
						t.Fatalf("%s: message %d %+v, want %s at $.ap2.checkout_mandate", c.name, i, m, code)
					}
				}
				var said []string
				for _, m := range got.Messages {
					said = append(said, m.Content)
				}
				for _, s := range c.says {
					if !strings.Contains(strings.Join(said, " | "), s) {
						t.Fatalf("%s: messages %q do not say %q", c.name, said, s)
					}
				}
			}
			// Payment mandates, with a good checkout mandate.
			otherPayee := map[string]any{"id": "outra", "name": "Outra", "website": "https://outra.example"}
			pmCases := []struct{ name, token, says string }{
				{"transaction_id of another checkout", w.present(w.payment(w.hash(otherJWT), lw.payee(), amount, currency, "pi_card", "card"), kb), "transaction_id"},
				{"transaction_id not a hash of checkout_jwt", w.present(w.payment("abc", lw.payee(), amount, currency, "pi_card", "card"), kb), "transaction_id"},
				{"another payee", w.present(w.payment(w.hash(jwt), otherPayee, amount, currency, "pi_card", "card"), kb), "payee"},
				{"one centavo less", w.present(w.payment(w.hash(jwt), lw.payee(), amount-1, currency, "pi_card", "card"), kb), fmt.Sprintf("%d centavos", amount-1)},
				{"another currency", w.present(w.payment(w.hash(jwt), lw.payee(), amount, "USD", "pi_card", "card"), kb), `"USD"`},
				{"another instrument", w.present(w.payment(w.hash(jwt), lw.payee(), amount, currency, "pi_outro", "card"), kb), "payment_instrument"},
				{"another instrument type", w.present(w.payment(w.hash(jwt), lw.payee(), amount, currency, "pi_card", "pix"), kb), "payment_instrument"},
				{"bound to another audience", w.present(w.payment(w.hash(jwt), lw.payee(), amount, currency, "pi_card", "card"), kbOptions{aud: "https://outra.example", nonce: id}), "mandate_scope_mismatch"},
				{"a checkout mandate instead", good(), "mandate.payment.1"},
			}
			for _, c := range pmCases {
				got := completeWith(d, id, good(), ap2Card(c.token))
				if got.Status != "ready_for_complete" || len(got.Messages) == 0 {
					t.Fatalf("%s: %+v", c.name, got)
				}
				m := got.Messages[0]
				if m.Type != "error" || m.Code != "payment_failed" || m.Path != "$.payment.instruments[0].credential.token" || !strings.Contains(m.Content, c.says) {
					t.Fatalf("%s: %+v, want payment_failed saying %q", c.name, m, c.says)
				}
			}
			if after := lw.charged(); after != before {
				t.Fatalf("refused mandates left %d payment attempts or charges", after-before)
			}
			if n := lw.count(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, id); n != 0 {
				t.Fatalf("%d attempts for the refused checkout", n)
			}
			if got := completeWith(d, id, good(), ap2Card(goodPM())); got.Status != "completed" {
				t.Fatalf("the good mandates after the refusals: %+v", got)
			}
		})
	}
	// A payment mandate without AP2 (an agent that does not speak it) is
	// refused too: nothing verified it.
	d := lw.driver("mcp", "plain", lw.host)
	ready := d.ready(lw.rates(lw.host))[1]
	id := decodeAP2(t, ready).ID
	w.t = t
	before := lw.charged()
	got := completeWith(d, id, "", ap2Card(w.present(w.payment("abc", lw.payee(), 1, "BRL", "pi_card", "card"), kbOptions{aud: lw.origin, nonce: id})))
	if got.Status != "ready_for_complete" || len(got.Messages) == 0 || got.Messages[0].Code != "payment_failed" || got.Messages[0].Path != "$.payment.instruments[0].credential.token" {
		t.Fatalf("a payment mandate without AP2: %+v", got)
	}
	if lw.charged() != before {
		t.Fatal("a payment mandate without AP2 was charged")
	}
}
