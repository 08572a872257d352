package payments_test

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

const statusRequiresAction = paymentsv1.AttemptStatus_ATTEMPT_STATUS_REQUIRES_ACTION

func TestOpaqueCardTokensBySandboxOutcome(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		token       string
		status      paymentsv1.AttemptStatus
		code, msg   string
		actionURL   bool
		wantCharged int64
	}{
		{"tok_visa_4242", statusSucceeded, "", "", false, 1},
		{"tok_visa_0002", statusFailed, "card_declined", "O cartão foi recusado pelo emissor.", false, 2},
		{"tok_visa_3220", statusRequiresAction, "", "", true, 3},
		{"tok_visa_9995", statusFailed, "insufficient_funds", "O cartão não tem saldo ou limite suficiente para esta compra.", false, 4},
	} {
		t.Run(c.token, func(t *testing.T) {
			checkout := "chk_card_" + c.token[len(c.token)-4:]
			req := startReq(e.a, checkout, 25990, cardInstrument(tokenCred(c.token), "visa", "4242"))
			a := e.start(e.a, req)
			if a.GetStatus() != c.status || a.GetFailureCode() != c.code || a.GetFailureMessage() != c.msg || a.GetAmount() != 25990 {
				t.Errorf("got %v %q %q amount %d", a.GetStatus(), a.GetFailureCode(), a.GetFailureMessage(), a.GetAmount())
			}
			// 3-D Secure: the processor's challenge page, which sends the
			// buyer back to the hosted checkout page.
			if want := e.sim.ControlURL() + "/sim/3ds/pi_"; c.actionURL != strings.HasPrefix(a.GetActionUrl(), want) {
				t.Errorf("action_url %q", a.GetActionUrl())
			}
			if a.GetDisplayJson() != `{"brand":"visa","last_digits":"4242"}` {
				t.Errorf("display %s", a.GetDisplayJson())
			}
			if strings.Contains(a.String(), c.token) {
				t.Errorf("the token is echoed: %v", a)
			}
			// A retry never charges twice.
			again := e.start(e.a, req)
			if again.GetStatus() != a.GetStatus() || again.GetUpdateTime().AsTime() != a.GetUpdateTime().AsTime() {
				t.Errorf("retry: %v", again)
			}
			if n := e.cardCharges(e.a); n != c.wantCharged {
				t.Errorf("%d processor charges, want %d", n, c.wantCharged)
			}
		})
	}
	// The 3DS attempt blocks a new one until canceled; cancel voids it.
	_, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(startReq(e.a, "chk_card_3220", 25990, cardInstrument(tokenCred("tok_other_4242"), "visa", "4242"))))
	if codeOf(err) != "failed_precondition/payment_in_progress" {
		t.Errorf("second attempt while 3DS is pending: %s", codeOf(err))
	}
	var id string
	e.scalar(e.a, &id, `SELECT id FROM payments.attempts WHERE checkout_id = 'chk_card_3220'`)
	r, err := e.client.CancelPayment(e.a.ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: id}))
	if err != nil || r.Msg.GetAttempt().GetStatus() != statusCanceled {
		t.Fatalf("cancel 3DS: %v %v", r, err)
	}
	var st string
	e.superScalar(&st, `SELECT status FROM pspsim.card_intents WHERE idempotency_key = $1`, id)
	if st != "canceled" {
		t.Errorf("processor intent %s after cancel, want canceled", st)
	}
	// A token pays once: reusing it for another checkout is declined.
	a := e.start(e.a, startReq(e.a, "chk_reuse", 1000, cardInstrument(tokenCred("tok_visa_4242"), "visa", "4242")))
	if a.GetStatus() != statusFailed || a.GetFailureMessage() != "Este token de pagamento já foi usado." {
		t.Errorf("reused opaque token: %v %q", a.GetStatus(), a.GetFailureMessage())
	}
}

func TestRawCardNumbersAreRejected(t *testing.T) {
	e := newEnv(t)
	for name, instrument := range map[string]string{
		"card credential": cardInstrument(`{"type":"card","card_number_type":"fpan","number":"4111111111111111","expiry_month":12,"expiry_year":2030}`, "visa", "1111"),
		"pan credential":  cardInstrument(`{"type":"pan","number":"4111111111111111","cvc":"123"}`, "visa", "1111"),
		"number field":    cardInstrument(`{"type":"token","token":"tok_x_4242","number":"4111111111111111"}`, "visa", "1111"),
		"pan as a token":  cardInstrument(tokenCred("4111 1111 1111 1111"), "visa", "1111"),
	} {
		t.Run(name, func(t *testing.T) {
			a := e.start(e.a, startReq(e.a, "chk_raw_"+strings.ReplaceAll(name, " ", "_"), 1000, instrument))
			if a.GetStatus() != statusFailed || a.GetFailureCode() != "payment_failed" || !strings.HasPrefix(a.GetFailureMessage(), "Números de cartão não são aceitos") {
				t.Errorf("got %v %q %q", a.GetStatus(), a.GetFailureCode(), a.GetFailureMessage())
			}
			if strings.Contains(a.String(), "4111") {
				t.Errorf("the card number is echoed: %v", a)
			}
		})
	}
	var stored int
	e.scalar(e.a, &stored, `SELECT count(*) FROM payments.attempts WHERE request_hash::text LIKE '%4111%' OR display::text LIKE '%4111%'`)
	if n := e.cardCharges(e.a); n != 0 || stored != 0 {
		t.Errorf("%d processor charges, %d rows with the number", n, stored)
	}
}

func TestBillingAddressNumberIsNotACardNumber(t *testing.T) {
	e := newEnv(t)
	in := `{"id":"pi_c","handler_id":"cartao","type":"card","display":{"brand":"visa","last_digits":"4242"},` +
		`"billing_address":{"street_address":"Rua das Flores","number":"100","postal_code":"01310-100"},"credential":` + tokenCred("tok_addr_4242") + `}`
	if a := e.start(e.a, startReq(e.a, "chk_addr", 1000, in)); a.GetStatus() != statusSucceeded {
		t.Errorf("got %v %q", a.GetStatus(), a.GetFailureMessage())
	}
}

func TestDelegatedJWSTokens(t *testing.T) {
	e := newEnv(t)
	agent := newSigner(t, "agente-2026")
	vendor := newSigner(t, "vendor-1")
	// The handler also trusts the vendor's key, from its config.
	e.setHandler(e.a.id, cardHandlerWithJWKS(vendor))
	now := e.clock.Now()
	claims := func(checkout string, mod func(map[string]any)) map[string]any {
		c := map[string]any{
			"iss": "https://agente.example/perfil", "aud": "cartao", "checkout_id": checkout, "max_amount": 15000,
			"currency": "brl", "exp": now.Add(10 * time.Minute).Unix(), "iat": now.Unix(), "jti": "jti-" + checkout,
			"brand": "mastercard", "last_digits": "5454",
		}
		if mod != nil {
			mod(c)
		}
		return c
	}
	start := func(checkout string, s signer, c map[string]any) *paymentsv1.Attempt {
		req := startReq(e.a, checkout, 14990, cardInstrument(`{"type":"delegate_token","token":"`+s.sign(t, c)+`"}`, "", ""))
		req.AgentSigningKeysJson = []string{agent.jwk}
		return e.start(e.a, req)
	}

	ok := start("chk_jws_ok", agent, claims("chk_jws_ok", nil))
	if ok.GetStatus() != statusSucceeded || ok.GetDisplayJson() != `{"brand":"mastercard","last_digits":"5454"}` {
		t.Fatalf("valid JWS: %v %q %s", ok.GetStatus(), ok.GetFailureMessage(), ok.GetDisplayJson())
	}
	viaConfig := start("chk_jws_cfg", vendor, claims("chk_jws_cfg", func(c map[string]any) { c["aud"] = []string{"loja-a.localhost"}; delete(c, "iss") }))
	if viaConfig.GetStatus() != statusSucceeded {
		t.Fatalf("JWS with the handler's JWKS and aud = primary domain: %v %q", viaConfig.GetStatus(), viaConfig.GetFailureMessage())
	}
	declined := start("chk_jws_decl", agent, claims("chk_jws_decl", func(c map[string]any) { c["scenario"] = "decline" }))
	if declined.GetStatus() != statusFailed || declined.GetFailureCode() != "card_declined" {
		t.Fatalf("scenario decline: %v %q", declined.GetStatus(), declined.GetFailureCode())
	}
	charged := e.cardCharges(e.a)
	if charged != 3 {
		t.Fatalf("%d processor charges, want 3", charged)
	}

	stranger := newSigner(t, "desconhecida")
	for _, c := range []struct {
		name string
		s    signer
		c    map[string]any
		want string
	}{
		// Each token below is valid but for one claim (or its key).
		{"wrong aud", agent, claims("chk_j1", func(c map[string]any) { c["aud"] = "outra-loja.com.br" }), "outro destinatário (aud)"},
		{"expired", agent, claims("chk_j2", func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() }), "expirou"},
		{"amount too low", agent, claims("chk_j3", func(c map[string]any) { c["max_amount"] = 14989 }), "(R$ 149,89) é menor que o total (R$ 149,90)"},
		{"fractional amount", agent, claims("chk_j4", func(c map[string]any) { c["max_amount"] = 15000.5 }), "claims"},
		{"currency", agent, claims("chk_j5", func(c map[string]any) { c["currency"] = "usd" }), `moeda "usd"`},
		{"wrong checkout", agent, claims("chk_j6", func(c map[string]any) { c["checkout_id"] = "chk_outro" }), "outro checkout"},
		{"reused jti", agent, claims("chk_j7", func(c map[string]any) { c["jti"] = "jti-chk_jws_ok" }), "já foi usado"},
		{"unknown kid", stranger, claims("chk_j8", nil), `(kid "desconhecida") é desconhecida`},
		{"wrong issuer", agent, claims("chk_j9", func(c map[string]any) { c["iss"] = "https://outro.example/perfil" }), "emissor"},
		{"no jti", agent, claims("chk_j10", func(c map[string]any) { delete(c, "jti") }), "jti"},
		{"brand", agent, claims("chk_j11", func(c map[string]any) { c["brand"] = "elo" }), `bandeira "elo"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkout := c.c["checkout_id"].(string)
			if c.name == "wrong checkout" {
				checkout = "chk_j6" // a token for chk_outro used on chk_j6
			}
			a := start(checkout, c.s, c.c)
			if a.GetStatus() != statusFailed || a.GetFailureCode() != "payment_failed" || !strings.Contains(a.GetFailureMessage(), c.want) {
				t.Errorf("got %v %q %q, want FAILED payment_failed containing %q", a.GetStatus(), a.GetFailureCode(), a.GetFailureMessage(), c.want)
			}
		})
	}
	// A forged signature.
	tok := agent.sign(t, claims("chk_j12", nil))
	forged := tok[:len(tok)-4] + "AAAA"
	req := startReq(e.a, "chk_j12", 14990, cardInstrument(`{"type":"token","token":"`+forged+`"}`, "", ""))
	req.AgentSigningKeysJson = []string{agent.jwk}
	if a := e.start(e.a, req); a.GetStatus() != statusFailed || !strings.Contains(a.GetFailureMessage(), "assinatura") {
		t.Errorf("forged signature: %v %q", a.GetStatus(), a.GetFailureMessage())
	}
	if n := e.cardCharges(e.a); n != charged {
		t.Errorf("rejected tokens reached the processor: %d charges, want %d", n, charged)
	}
	// The jti register keeps hashes only.
	var n int
	e.scalar(e.a, &n, `SELECT count(*) FROM payments.token_uses WHERE encode(jti_hash, 'escape') LIKE '%jti-%'`)
	if n != 0 {
		t.Errorf("jti stored in clear")
	}
}

func TestRefunds(t *testing.T) {
	e := newEnv(t)
	// Pix: partial, then the rest; more is refused.
	a := e.start(e.a, startReq(e.a, "chk_refund", 10000, pixInstrument))
	if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(e.a, a.GetId(), statusSucceeded)
	refund := func(id string, amount int64) (*paymentsv1.Refund, error) {
		r, err := e.client.RefundPayment(e.a.ctx, connect.NewRequest(&paymentsv1.RefundPaymentRequest{AttemptId: a.GetId(), RefundId: id, Amount: amount, Reason: "Produto devolvido"}))
		if err != nil {
			return nil, err
		}
		return r.Msg.GetRefund(), nil
	}
	r1, err := refund("rf_1", 2550)
	if err != nil || r1.GetStatus() != "succeeded" || r1.GetAmount() != 2550 {
		t.Fatalf("partial refund: %v %v", r1, err)
	}
	if got := e.get(e.a, a.GetId()); got.GetStatus() != paymentsv1.AttemptStatus_ATTEMPT_STATUS_PARTIALLY_REFUNDED || got.GetRefundedAmount() != 2550 {
		t.Errorf("after partial: %v %d", got.GetStatus(), got.GetRefundedAmount())
	}
	if again, err := refund("rf_1", 2550); err != nil || again.GetStatus() != "succeeded" {
		t.Errorf("idempotent retry: %v %v", again, err)
	}
	if _, err := refund("rf_1", 2600); codeOf(err) != "failed_precondition/refund_conflict" {
		t.Errorf("same id, other amount: %s", codeOf(err))
	}
	if _, err := refund("rf_2", 7451); codeOf(err) != "failed_precondition/refund_exceeds_payment" {
		t.Errorf("over-refund: %s", codeOf(err))
	}
	if r2, err := refund("rf_2", 7450); err != nil || r2.GetStatus() != "succeeded" {
		t.Fatalf("refund of the rest: %v %v", r2, err)
	}
	if got := e.get(e.a, a.GetId()); got.GetStatus() != paymentsv1.AttemptStatus_ATTEMPT_STATUS_REFUNDED || got.GetRefundedAmount() != 10000 {
		t.Errorf("after full: %v %d", got.GetStatus(), got.GetRefundedAmount())
	}
	if _, err := refund("rf_3", 1); codeOf(err) != "failed_precondition/refund_exceeds_payment" {
		t.Errorf("refund beyond a refunded payment: %s", codeOf(err))
	}
	var devolucoes []string
	for _, r := range e.ledger(e.a).Refunds {
		devolucoes = append(devolucoes, r.Valor+" "+r.Natureza+" "+r.Status)
	}
	slices.Sort(devolucoes)
	if strings.Join(devolucoes, ", ") != "25.50 ORIGINAL DEVOLVIDO, 74.50 ORIGINAL DEVOLVIDO" {
		t.Errorf("PSP devoluções: %v", devolucoes)
	}

	// Card: refund through the processor.
	c := e.start(e.a, startReq(e.a, "chk_card_refund", 5000, cardInstrument(tokenCred("tok_refund_4242"), "visa", "4242")))
	r, err := e.client.RefundPayment(e.a.ctx, connect.NewRequest(&paymentsv1.RefundPaymentRequest{AttemptId: c.GetId(), RefundId: "rf_c", Amount: 5000}))
	if err != nil || r.Msg.GetRefund().GetStatus() != "succeeded" {
		t.Fatalf("card refund: %v %v", r, err)
	}
	if got := e.get(e.a, c.GetId()); got.GetStatus() != paymentsv1.AttemptStatus_ATTEMPT_STATUS_REFUNDED || got.GetRefundedAmount() != 5000 {
		t.Errorf("card after refund: %v %d", got.GetStatus(), got.GetRefundedAmount())
	}
	var processorRefunded int64
	e.superScalar(&processorRefunded, `SELECT amount_refunded FROM pspsim.card_intents WHERE idempotency_key = $1`, c.GetId())
	if processorRefunded != 5000 {
		t.Errorf("processor refunded %d", processorRefunded)
	}
	// Unpaid attempts cannot be refunded.
	p := e.start(e.a, startReq(e.a, "chk_unpaid", 5000, pixInstrument))
	if _, err := e.client.RefundPayment(e.a.ctx, connect.NewRequest(&paymentsv1.RefundPaymentRequest{AttemptId: p.GetId(), RefundId: "rf_u", Amount: 1})); codeOf(err) != "failed_precondition/not_refundable" {
		t.Errorf("refund of a pending attempt: %s", codeOf(err))
	}
}

// A write from a stale copy of an attempt (the one-statement path of a
// charge's answer) never overwrites a change that came in between: the
// version guard sends it to the locked path, which sees the current
// status and decides on it.
func TestStaleKnownTransitionDefersToTheCurrentRow(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_stale", 5000, pixInstrument))
	if a.GetStatus() != statusPending {
		t.Fatalf("start: %v", a.GetStatus())
	}
	got, err := e.svc.StaleKnownTransition(e.a.ctx, a.GetId())
	if err != nil || got != "canceled" {
		t.Fatalf("after a concurrent cancel: %q, %v; want canceled", got, err)
	}
	if now := e.get(e.a, a.GetId()); now.GetStatus() != statusCanceled {
		t.Fatalf("stored status %v, want canceled", now.GetStatus())
	}
}

// 3-D Secure end to end: the charge asks for a challenge, the buyer is
// sent to the processor's page and confirms, the processor tells nobody,
// and the resolve sweep asks it until the attempt succeeds (announced to
// the checkout); a challenge the buyer refuses fails the attempt.
func TestThreeDSecureIsAskedAboutUntilAnswered(t *testing.T) {
	e := newEnv(t)
	answer := func(actionURL, outcome string) {
		t.Helper()
		u, err := url.Parse(actionURL)
		if err != nil {
			t.Fatal(err)
		}
		form := url.Values{"client_secret": {u.Query().Get("client_secret")}, "outcome": {outcome}}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.sim.DevCA.Pool()}},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := hc.PostForm(u.Scheme+"://"+u.Host+u.Path, form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), e.a.baseURL+"/checkout/") {
			t.Fatalf("challenge %s: %d → %q", outcome, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, c := range []struct {
		outcome string
		want    paymentsv1.AttemptStatus
	}{{"approve", statusSucceeded}, {"deny", statusFailed}} {
		a := e.start(e.a, startReq(e.a, "chk_3ds_"+c.outcome, 12990, cardInstrument(tokenCred("tok_3ds_"+c.outcome+"_3220"), "visa", "3220")))
		if a.GetStatus() != statusRequiresAction {
			t.Fatalf("%s: %v %q", c.outcome, a.GetStatus(), a.GetFailureMessage())
		}
		if got := e.resolveAfter(e.a, a.GetId()); got == nil || got.Sub(e.clock.Now().Add(20*time.Second)).Abs() > time.Second {
			t.Fatalf("%s: resolve_after %v, want in 20 s", c.outcome, got)
		}
		// Before the buyer answers, the sweep asks and comes back later.
		e.clock.Add(21 * time.Second)
		if n := e.sweep(e.svc.SweepResolves); n != 0 || e.get(e.a, a.GetId()).GetStatus() != statusRequiresAction {
			t.Fatalf("%s: sweep before the answer settled %d", c.outcome, n)
		}
		answer(a.GetActionUrl(), c.outcome)
		e.clock.Add(31 * time.Second)
		if n := e.sweep(e.svc.SweepResolves); n != 1 {
			t.Fatalf("%s: sweep after the answer settled %d, want 1", c.outcome, n)
		}
		got := e.get(e.a, a.GetId())
		if got.GetStatus() != c.want {
			t.Fatalf("%s: attempt %v %q", c.outcome, got.GetStatus(), got.GetFailureMessage())
		}
		e.eventually(10*time.Second, "announced to checkout", func() bool { return len(e.settled(a.GetId())) == 1 })
	}
}
