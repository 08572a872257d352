package cardsim_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
)

// Every path below drives the simulator through the real Stripe adapter.

func TestApprove(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	t.Run("card token", func(t *testing.T) {
		key, tok := newKey(), newToken("4242")
		ch, err := e.proc.Charge(ctx, chargeReq(key, tok, 1990))
		if err != nil {
			t.Fatal(err)
		}
		ex := e.rec.take()
		wantCalls(t, ex, "POST /v1/payment_methods 200", "POST /v1/payment_intents 200")
		r := e.intent(key)
		if want := (card.Charge{ID: r.ID, Status: card.StatusApproved, Amount: 1990}); ch != want || !strings.HasPrefix(ch.ID, "pi_") {
			t.Fatalf("charge %+v, want %+v", ch, want)
		}
		if want := (row{ID: ch.ID, Status: "succeeded", Amount: 1990, Received: 1990}); r != want {
			t.Fatalf("stored %+v, want %+v", r, want)
		}
		if n := scalar[int64](e, `SELECT count(*) FROM pspsim.card_payment_methods WHERE tenant_id = $1 AND token_hash = $2 AND last4 = '4242'`, e.account, tokenHash(tok)); n != 1 {
			t.Fatalf("%d payment methods for the token", n)
		}
		// Tokens are kept only as hashes.
		if n := scalar[int64](e, `SELECT count(*) FROM pspsim.card_payment_methods WHERE position($1 in to_jsonb(card_payment_methods)::text) > 0`, tok); n != 0 {
			t.Fatal("the token is stored in the clear")
		}
		if got := scalar[string](e, `SELECT metadata->>'bcp_attempt_id' || ' ' || (metadata->>'bcp_checkout_id') || ' ' || return_url FROM pspsim.card_intents WHERE id = $1`, ch.ID); got != key+" chk_1 "+returnURL {
			t.Fatalf("metadata and return_url %q", got)
		}
	})
	t.Run("payment method", func(t *testing.T) {
		for _, pm := range []string{"pm_card_visa", "pm_card_mastercard"} {
			key := newKey()
			ch, err := e.proc.Charge(ctx, chargeReq(key, pm, 25990))
			if err != nil {
				t.Fatal(err)
			}
			wantCalls(t, e.rec.take(), "POST /v1/payment_intents 200")
			if want := (card.Charge{ID: e.intent(key).ID, Status: card.StatusApproved, Amount: 25990}); ch != want {
				t.Fatalf("%s: charge %+v, want %+v", pm, ch, want)
			}
		}
		// A PaymentMethod made from a token through the API, then paid.
		status, _, v := e.api("POST", "/v1/payment_methods", e.key, url.Values{"type": {"card"}, "card[token]": {newToken("4242")}})
		pm, _ := v["id"].(string)
		c, _ := v["card"].(map[string]any)
		if status != 200 || !strings.HasPrefix(pm, "pm_") || c["last4"] != "4242" || c["brand"] != "visa" || v["object"] != "payment_method" {
			t.Fatalf("payment method: %d %v", status, v)
		}
		key := newKey()
		ch, err := e.proc.Charge(ctx, chargeReq(key, pm, 500))
		if want := (card.Charge{ID: e.intent(key).ID, Status: card.StatusApproved, Amount: 500}); err != nil || ch != want {
			t.Fatalf("charge %+v %v, want %+v", ch, err, want)
		}
	})
}

func TestDeclines(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name, token        string
		want, storedReason string
	}{
		{"…0002", newToken("0002"), card.DeclineCardDeclined, "generic_decline"},
		{"…9995", newToken("9995"), card.DeclineInsufficientFunds, "insufficient_funds"},
		{"Stripe's tok_chargeDeclined", "tok_chargeDeclined", card.DeclineCardDeclined, "generic_decline"},
		{"Stripe's pm_card_chargeDeclinedInsufficientFunds", "pm_card_chargeDeclinedInsufficientFunds", card.DeclineInsufficientFunds, "insufficient_funds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := newKey()
			ch, err := e.proc.Charge(context.Background(), chargeReq(key, c.token, 1990))
			if err != nil {
				t.Fatal(err)
			}
			ex := e.rec.take()
			if last := ex[len(ex)-1]; last.Path != "/v1/payment_intents" || last.Status != http.StatusPaymentRequired ||
				!strings.Contains(string(last.Body), `"type":"card_error"`) || !strings.Contains(string(last.Body), `"decline_code":"`+c.storedReason+`"`) {
				t.Fatalf("answer %d %s", last.Status, last.Body)
			}
			r := e.intent(key)
			if want := (card.Charge{ID: r.ID, Status: card.StatusDeclined, DeclineCode: c.want, Amount: 1990}); ch != want {
				t.Fatalf("charge %+v, want %+v", ch, want)
			}
			if want := (row{ID: ch.ID, Status: "requires_payment_method", DeclineCode: c.storedReason, Amount: 1990}); r != want {
				t.Fatalf("stored %+v, want %+v", r, want)
			}
			// A retry replays the decline: still one intent, nothing charged.
			again, err := e.proc.Charge(context.Background(), chargeReq(key, c.token, 1990))
			if err != nil || again != ch || e.intents(key) != 1 {
				t.Fatalf("retry %+v %v (%d intents)", again, err, e.intents(key))
			}
		})
	}
	t.Run("unknown token and payment method", func(t *testing.T) {
		for _, tok := range []string{"tok_x", "pm_1Nobody0000000000000000000"} {
			ch, err := e.proc.Charge(context.Background(), chargeReq(newKey(), tok, 1990))
			if want := (card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineInvalidToken, Amount: 1990}); err != nil || ch != want {
				t.Fatalf("%s: %+v %v", tok, ch, err)
			}
		}
		if n := e.intents(""); n != 4 {
			t.Fatalf("%d intents, want the 4 of the declines above", n)
		}
	})
}

func TestThreeDSecure(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	start := func(t *testing.T) (string, string, card.Charge) {
		key, tok := newKey(), newToken("3220")
		ch, err := e.proc.Charge(ctx, chargeReq(key, tok, 123456))
		if err != nil {
			t.Fatal(err)
		}
		e.rec.take()
		prefix := e.srv.URL + "/sim/3ds/" + ch.ID + "?client_secret=" + ch.ID + "_secret_"
		if ch.Status != card.StatusRequiresAction || ch.Amount != 123456 || !strings.HasPrefix(ch.ActionURL, prefix) || ch.DeclineCode != "" {
			t.Fatalf("charge %+v", ch)
		}
		if r := e.intent(key); r.Status != "requires_action" || r.ID != ch.ID || r.Received != 0 {
			t.Fatalf("stored %+v", r)
		}
		return key, tok, ch
	}
	t.Run("approved", func(t *testing.T) {
		key, tok, ch := start(t)
		status, page := get(e, ch.ActionURL)
		for _, s := range []string{"Confirmar compra", "Recusar", "R$ 1.234,56", "Visa final 3220", `name="outcome" value="approve"`, `name="outcome" value="deny"`} {
			if !strings.Contains(page, s) {
				t.Fatalf("page (%d) lacks %q:\n%s", status, s, page)
			}
		}
		if status != 200 || strings.Contains(strings.ToLower(page), "<script") {
			t.Fatalf("page %d:\n%s", status, page)
		}
		code, loc := e.challenge(ch.ActionURL, "approve")
		if code != http.StatusSeeOther || loc != returnURL+"?payment_intent="+ch.ID+"&redirect_status=succeeded" {
			t.Fatalf("answer: %d %q", code, loc)
		}
		if r := e.intent(key); r.Status != "succeeded" || r.Received != 123456 {
			t.Fatalf("stored %+v", r)
		}
		// The payments service asks again with the same key: Stripe replays
		// requires_action, the adapter reads the intent afresh.
		again, err := e.proc.Charge(ctx, chargeReq(key, tok, 123456))
		if want := (card.Charge{ID: ch.ID, Status: card.StatusApproved, Amount: 123456}); err != nil || again != want {
			t.Fatalf("retry %+v %v, want %+v", again, err, want)
		}
		ex := e.rec.take()
		wantCalls(t, ex, "POST /v1/payment_methods 200", "POST /v1/payment_intents 200", "GET /v1/payment_intents/"+ch.ID+" 200")
		if ex[1].Header.Get("Idempotent-Replayed") != "true" || ex[0].Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("not replayed: %v / %v", ex[0].Header, ex[1].Header)
		}
		// The page now only says it is done; answering again changes nothing.
		if status, page := get(e, ch.ActionURL); status != 200 || !strings.Contains(page, "Esta compra já foi confirmada.") || strings.Contains(page, "<form") {
			t.Fatalf("page after: %d\n%s", status, page)
		}
		if code, _ := e.challenge(ch.ActionURL, "deny"); code != http.StatusSeeOther || e.intent(key).Status != "succeeded" {
			t.Fatalf("a late deny moved the intent: %d %+v", code, e.intent(key))
		}
		if e.intents(key) != 1 {
			t.Fatalf("%d intents", e.intents(key))
		}
	})
	t.Run("denied", func(t *testing.T) {
		key, tok, ch := start(t)
		code, loc := e.challenge(ch.ActionURL, "deny")
		if code != http.StatusSeeOther || loc != returnURL+"?payment_intent="+ch.ID+"&redirect_status=failed" {
			t.Fatalf("answer: %d %q", code, loc)
		}
		if want := (row{ID: ch.ID, Status: "requires_payment_method", DeclineCode: "authentication_required", Amount: 123456}); e.intent(key) != want {
			t.Fatalf("stored %+v, want %+v", e.intent(key), want)
		}
		again, err := e.proc.Charge(ctx, chargeReq(key, tok, 123456))
		if want := (card.Charge{ID: ch.ID, Status: card.StatusDeclined, DeclineCode: card.DeclineCardDeclined, Amount: 123456}); err != nil || again != want {
			t.Fatalf("retry %+v %v, want %+v", again, err, want)
		}
		// The token paid nothing: another attempt may use it.
		other, err := e.proc.Charge(ctx, chargeReq(newKey(), tok, 123456))
		if err != nil || other.Status != card.StatusRequiresAction {
			t.Fatalf("the token after a denied challenge: %+v %v", other, err)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		key, _, ch := start(t)
		bad := strings.Replace(ch.ActionURL, "_secret_", "_secret_x", 1)
		if status, page := get(e, bad); status != http.StatusNotFound || strings.Contains(page, "<form") {
			t.Fatalf("page with a wrong secret: %d", status)
		}
		if code, _ := e.challenge(bad, "approve"); code != http.StatusNotFound || e.intent(key).Status != "requires_action" {
			t.Fatalf("answer with a wrong secret: %d %+v", code, e.intent(key))
		}
	})
}

func TestIdempotentRetry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	key, tok := newKey(), newToken("4242")
	first, err := e.proc.Charge(ctx, chargeReq(key, tok, 1990))
	if err != nil {
		t.Fatal(err)
	}
	e.rec.take()
	second, err := e.proc.Charge(ctx, chargeReq(key, tok, 1990))
	if err != nil || second != first || first.Status != card.StatusApproved {
		t.Fatalf("retry %+v %v, first %+v", second, err, first)
	}
	ex := e.rec.take()
	wantCalls(t, ex, "POST /v1/payment_methods 200", "POST /v1/payment_intents 200")
	for _, x := range ex {
		if x.Header.Get("Idempotent-Replayed") != "true" || x.Header.Get("Original-Request") == "" || x.Header.Get("Original-Request") == x.Header.Get("Request-Id") {
			t.Fatalf("%s %s not replayed: %v", x.Method, x.Path, x.Header)
		}
	}
	if n := e.intents(""); n != 1 {
		t.Fatalf("%d intents, want 1", n)
	}
	if n := scalar[int64](e, `SELECT count(*) FROM pspsim.card_payment_methods`); n != 1 {
		t.Fatalf("%d payment methods, want 1", n)
	}
	if got := scalar[int64](e, `SELECT sum(amount_received) FROM pspsim.card_intents WHERE status = 'succeeded'`); got != 1990 {
		t.Fatalf("received %d", got)
	}
}

func TestSameKeyAnotherAmount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	key := newKey()
	if ch, err := e.proc.Charge(ctx, chargeReq(key, "pm_card_visa", 1990)); err != nil || ch.Status != card.StatusApproved {
		t.Fatalf("charge %+v %v", ch, err)
	}
	e.rec.take()
	ch, err := e.proc.Charge(ctx, chargeReq(key, "pm_card_visa", 2990))
	if !errors.Is(err, card.ErrConflict) || ch != (card.Charge{}) {
		t.Fatalf("charge %+v %v, want ErrConflict", ch, err)
	}
	// The charge, then the adapter's check whether Cancel claimed the key.
	ex := e.rec.take()
	wantCalls(t, ex, "POST /v1/payment_intents 400", "POST /v1/payment_intents 400")
	if !strings.Contains(string(ex[0].Body), `"type":"idempotency_error"`) {
		t.Fatalf("answer %s", ex[0].Body)
	}
	if want := (row{ID: e.intent(key).ID, Status: "succeeded", Amount: 1990, Received: 1990}); e.intent(key) != want || e.intents("") != 1 {
		t.Fatalf("stored %+v (%d intents)", e.intent(key), e.intents(""))
	}
}

func TestTokenSingleUse(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tok := newToken("4242")
	k1 := newKey()
	first, err := e.proc.Charge(ctx, chargeReq(k1, tok, 1990))
	if err != nil || first.Status != card.StatusApproved {
		t.Fatalf("first %+v %v", first, err)
	}
	e.rec.take()
	// The same token under another key: refused when made into a PaymentMethod.
	k2 := newKey()
	ch, err := e.proc.Charge(ctx, chargeReq(k2, tok, 1990))
	if want := (card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineTokenUsed, Amount: 1990}); err != nil || ch != want {
		t.Fatalf("second %+v %v, want %+v", ch, err, want)
	}
	ex := e.rec.take()
	wantCalls(t, ex, "POST /v1/payment_methods 400")
	if !strings.Contains(string(ex[0].Body), `"code":"token_already_used"`) || strings.Contains(string(ex[0].Body), tok) {
		t.Fatalf("answer %s", ex[0].Body)
	}
	// The PaymentMethod the first charge made, paid again under a third key.
	pm := scalar[string](e, `SELECT payment_method FROM pspsim.card_intents WHERE id = $1`, first.ID)
	k3 := newKey()
	ch, err = e.proc.Charge(ctx, chargeReq(k3, pm, 1990))
	if want := (card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineTokenUsed, Amount: 1990}); err != nil || ch != want {
		t.Fatalf("third %+v %v, want %+v", ch, err, want)
	}
	if n := e.intents(""); n != 1 {
		t.Fatalf("%d intents, want 1", n)
	}
	// Stripe's named test tokens stand for a new token each time.
	for range 2 {
		if ch, err := e.proc.Charge(ctx, chargeReq(newKey(), "tok_visa", 1990)); err != nil || ch.Status != card.StatusApproved {
			t.Fatalf("tok_visa %+v %v", ch, err)
		}
	}
	// A token waiting for 3-D Secure is taken too.
	tds := newToken("3220")
	if ch, err := e.proc.Charge(ctx, chargeReq(newKey(), tds, 1990)); err != nil || ch.Status != card.StatusRequiresAction {
		t.Fatalf("3-D Secure %+v %v", ch, err)
	}
	if ch, err := e.proc.Charge(ctx, chargeReq(newKey(), tds, 1990)); err != nil || ch.DeclineCode != card.DeclineTokenUsed {
		t.Fatalf("3-D Secure token again %+v %v", ch, err)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	t.Run("before the charge", func(t *testing.T) {
		key, tok := newKey(), newToken("4242")
		v, err := e.proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
		if err != nil {
			t.Fatal(err)
		}
		r := e.intent(key)
		if want := (card.Charge{ID: r.ID, Status: card.StatusVoided, Amount: 1990}); v != want {
			t.Fatalf("cancel %+v, want %+v", v, want)
		}
		wantCalls(t, e.rec.take(), "POST /v1/payment_intents 200", "POST /v1/payment_intents/"+r.ID+"/cancel 200")
		// The charge arrives late: voided, and nothing is charged.
		ch, err := e.proc.Charge(ctx, chargeReq(key, tok, 1990))
		if want := (card.Charge{ID: r.ID, Status: card.StatusVoided, Amount: 1990}); err != nil || ch != want {
			t.Fatalf("late charge %+v %v, want %+v", ch, err, want)
		}
		wantCalls(t, e.rec.take(), "POST /v1/payment_methods 200", "POST /v1/payment_intents 400", "POST /v1/payment_intents 200",
			"POST /v1/payment_intents/"+r.ID+"/cancel 400", "GET /v1/payment_intents/"+r.ID+" 200")
		if want := (row{ID: r.ID, Status: "canceled", Amount: 1990, Voided: true}); e.intent(key) != want || e.intents(key) != 1 {
			t.Fatalf("stored %+v (%d intents), want %+v", e.intent(key), e.intents(key), want)
		}
		// Cancel again: the same answer.
		if again, err := e.proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"}); err != nil || again != v {
			t.Fatalf("cancel again %+v %v", again, err)
		}
	})
	t.Run("after approval", func(t *testing.T) {
		key := newKey()
		ch, err := e.proc.Charge(ctx, chargeReq(key, newToken("4242"), 1990))
		if err != nil || ch.Status != card.StatusApproved {
			t.Fatalf("charge %+v %v", ch, err)
		}
		e.rec.take()
		v, err := e.proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
		if err != nil || v != ch {
			t.Fatalf("cancel %+v %v, want %+v", v, err, ch)
		}
		wantCalls(t, e.rec.take(), "POST /v1/payment_intents 400", "GET /v1/payment_intents/search 200")
		if r := e.intent(key); r.Status != "succeeded" || e.intents(key) != 1 {
			t.Fatalf("stored %+v", r)
		}
	})
	t.Run("waiting for 3-D Secure", func(t *testing.T) {
		key, tok := newKey(), newToken("3220")
		ch, err := e.proc.Charge(ctx, chargeReq(key, tok, 1990))
		if err != nil || ch.Status != card.StatusRequiresAction {
			t.Fatalf("charge %+v %v", ch, err)
		}
		e.rec.take()
		v, err := e.proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
		if want := (card.Charge{ID: ch.ID, Status: card.StatusVoided, Amount: 1990}); err != nil || v != want {
			t.Fatalf("cancel %+v %v, want %+v", v, err, want)
		}
		wantCalls(t, e.rec.take(), "POST /v1/payment_intents 400", "GET /v1/payment_intents/search 200", "POST /v1/payment_intents/"+ch.ID+"/cancel 200")
		// The buyer approves too late: nothing moves.
		if code, loc := e.challenge(ch.ActionURL, "approve"); code != http.StatusSeeOther || !strings.HasSuffix(loc, "redirect_status=failed") {
			t.Fatalf("late approval %d %q", code, loc)
		}
		if want := (row{ID: ch.ID, Status: "canceled", Amount: 1990}); e.intent(key) != want {
			t.Fatalf("stored %+v, want %+v", e.intent(key), want)
		}
		if again, err := e.proc.Charge(ctx, chargeReq(key, tok, 1990)); err != nil || again != v {
			t.Fatalf("charge again %+v %v, want %+v", again, err, v)
		}
	})
}

func TestLookup(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	key := ids.New("pay")
	ch, err := e.proc.Charge(ctx, chargeReq(key, newToken("9995"), 700))
	if err != nil || ch.DeclineCode != card.DeclineInsufficientFunds {
		t.Fatalf("charge %+v %v", ch, err)
	}
	e.rec.take()
	got, err := e.proc.Lookup(ctx, key)
	if err != nil || got != ch {
		t.Fatalf("lookup %+v %v, want %+v", got, err, ch)
	}
	wantCalls(t, e.rec.take(), "GET /v1/payment_intents/search 200")
	// A key nobody used: the search, then the strongly consistent list.
	if _, err := e.proc.Lookup(ctx, ids.New("pay")); !errors.Is(err, card.ErrNotFound) {
		t.Fatalf("lookup of an unused key: %v", err)
	}
	wantCalls(t, e.rec.take(), "GET /v1/payment_intents/search 200", "GET /v1/payment_intents 200")
	// A key Cancel claimed is voided.
	claimed := ids.New("pay")
	if _, err := e.proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: claimed, Amount: 700, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.proc.Lookup(ctx, claimed); err != nil || got.Status != card.StatusVoided || got.ID != e.intent(claimed).ID {
		t.Fatalf("lookup of a claimed key %+v %v", got, err)
	}
}

func TestRefunds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	key := newKey()
	ch, err := e.proc.Charge(ctx, chargeReq(key, newToken("4242"), 1990))
	if err != nil || ch.Status != card.StatusApproved {
		t.Fatalf("charge %+v %v", ch, err)
	}
	r1, err := e.proc.Refund(ctx, ch.ID, "ref_1", 500)
	if err != nil || r1.Amount != 500 || !strings.HasPrefix(r1.ID, "re_") {
		t.Fatalf("refund %+v %v", r1, err)
	}
	if again, err := e.proc.Refund(ctx, ch.ID, "ref_1", 500); err != nil || again != r1 {
		t.Fatalf("refund retried %+v %v, want %+v", again, err, r1)
	}
	if _, err := e.proc.Refund(ctx, ch.ID, "ref_1", 600); !errors.Is(err, card.ErrConflict) {
		t.Fatalf("refund id reused for another amount: %v", err)
	}
	_, err = e.proc.Refund(ctx, ch.ID, "ref_2", 1500)
	var se *stripecard.Error
	if !errors.Is(err, card.ErrRefundExceeds) || !errors.As(err, &se) || se.Param != "amount" ||
		se.Message != "Refund amount (R$15.00) is greater than unrefunded amount on charge (R$14.90)" {
		t.Fatalf("refund over what is left: %v", err)
	}
	if r, err := e.proc.Refund(ctx, ch.ID, "ref_3", 1490); err != nil || r.Amount != 1490 {
		t.Fatalf("refund of the rest %+v %v", r, err)
	}
	if _, err := e.proc.Refund(ctx, ch.ID, "ref_4", 1); !errors.Is(err, card.ErrRefundExceeds) || !errors.As(err, &se) || se.Code != "charge_already_refunded" {
		t.Fatalf("refund of a refunded charge: %v", err)
	}
	if r := e.intent(key); r.Refunded != 1990 || r.Received != 1990 || r.Status != "succeeded" {
		t.Fatalf("stored %+v", r)
	}
	if got := scalar[string](e, `SELECT string_agg(amount::text, ',' ORDER BY amount) FROM pspsim.card_refunds WHERE payment_intent = $1`, ch.ID); got != "500,1490" {
		t.Fatalf("refunds %s", got)
	}
	// A declined charge has nothing to refund; an unknown one is unknown.
	declined, _ := e.proc.Charge(ctx, chargeReq(newKey(), newToken("0002"), 1990))
	for _, id := range []string{declined.ID, "pi_000000000000000000000000"} {
		if _, err := e.proc.Refund(ctx, id, "ref_"+id, 100); err == nil || errors.Is(err, card.ErrRefundExceeds) {
			t.Fatalf("refund of %s: %v", id, err)
		}
	}
}

func TestCredentials(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.proc.CheckCredentials(ctx); err != nil {
		t.Fatalf("the account's key: %v", err)
	}
	wrong := "sk_test_" + strings.Repeat("Wr0ng", 8)
	p, rec := e.processor(wrong)
	_, err := p.Charge(ctx, chargeReq(newKey(), "pm_card_visa", 1990))
	if !errors.Is(err, card.ErrCredentials) || strings.Contains(err.Error(), "Wr0ng") {
		t.Fatalf("charge with a wrong key: %v", err)
	}
	if err := p.CheckCredentials(ctx); !errors.Is(err, card.ErrCredentials) {
		t.Fatalf("connection test with a wrong key: %v", err)
	}
	ex := rec.take()
	wantCalls(t, ex, "POST /v1/payment_intents 401", "GET /v1/balance 401")
	want := `{"error":{"message":"Invalid API Key provided: sk_test_` + strings.Repeat("*", 36) + `r0ng","type":"invalid_request_error"}}`
	if got := string(ex[0].Body); got != want {
		t.Fatalf("401 body %s", got)
	}
	if n := e.intents(""); n != 0 {
		t.Fatalf("%d intents", n)
	}
}

// Two charges with one key at once make one intent; both callers see it.
func TestConcurrentChargesOneKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	key, tok := newKey(), newToken("4242")
	const n = 6
	got := make([]card.Charge, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = retry(t, func() (card.Charge, error) { return e.proc.Charge(ctx, chargeReq(key, tok, 1990)) })
		}()
	}
	wg.Wait()
	r := e.intent(key)
	for i := range n {
		if want := (card.Charge{ID: r.ID, Status: card.StatusApproved, Amount: 1990}); errs[i] != nil || got[i] != want {
			t.Fatalf("caller %d: %+v %v, want %+v", i, got[i], errs[i], want)
		}
	}
	if e.intents("") != 1 || scalar[int64](e, `SELECT count(*) FROM pspsim.card_payment_methods`) != 1 {
		t.Fatalf("%d intents", e.intents(""))
	}
}

// Cancel racing the charge of the same key leaves exactly one of them.
func TestCancelRacesCharge(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	won := map[string]int{}
	defer func() { t.Logf("who won the key: %v", won) }()
	for i := range 12 {
		// A token costs the charge a round trip (its PaymentMethod) before
		// it reaches the key; a payment method does not.
		key, tok := ids.New("pay"), newToken("4242")
		if i%2 == 1 {
			tok = "pm_card_visa"
		}
		var ch, v card.Charge
		var chErr, vErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			ch, chErr = retry(t, func() (card.Charge, error) { return e.proc.Charge(ctx, chargeReq(key, tok, 1990)) })
		}()
		go func() {
			defer wg.Done()
			v, vErr = retry(t, func() (card.Charge, error) {
				return e.proc.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
			})
		}()
		wg.Wait()
		if chErr != nil || vErr != nil {
			t.Fatalf("race %d: charge %v, cancel %v", i, chErr, vErr)
		}
		r := e.intent(key)
		won[r.Status]++
		switch r.Status {
		case "succeeded": // the charge won: both say approved
			want := card.Charge{ID: r.ID, Status: card.StatusApproved, Amount: 1990}
			if ch != want || v != want || r.Voided {
				t.Fatalf("race %d: charge %+v, cancel %+v, stored %+v", i, ch, v, r)
			}
		case "canceled": // the claim won: both say voided, nothing received
			want := card.Charge{ID: r.ID, Status: card.StatusVoided, Amount: 1990}
			if ch != want || v != want || !r.Voided || r.Received != 0 {
				t.Fatalf("race %d: charge %+v, cancel %+v, stored %+v", i, ch, v, r)
			}
		default:
			t.Fatalf("race %d: stored %+v", i, r)
		}
		if n := e.intents(key); n != 1 {
			t.Fatalf("race %d: %d intents", i, n)
		}
	}
}
