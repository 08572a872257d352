package stripecard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/stripemock"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
)

// exchange is one HTTP request the processor made and Stripe's answer.
type exchange struct {
	Method, Path string
	Header       http.Header
	Form         url.Values // the form body (POST) or the query (GET)
	Status       int
	Body         []byte
}

// recorder wraps the real transport and keeps every exchange.
type recorder struct {
	mu sync.Mutex
	ex []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(rb))
	form := req.URL.Query()
	if req.Method == http.MethodPost {
		if form, err = url.ParseQuery(string(body)); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.ex = append(r.ex, exchange{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Form: form, Status: res.StatusCode, Body: rb})
	r.mu.Unlock()
	return res, nil
}

func (r *recorder) all() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ex)
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.ex = nil
	r.mu.Unlock()
}

// calls lists the exchanges as "METHOD path" lines.
func (r *recorder) calls() []string {
	var out []string
	for _, e := range r.all() {
		out = append(out, e.Method+" "+e.Path)
	}
	return out
}

func newProcessor(t *testing.T, base, key string) (*stripecard.Processor, *recorder) {
	t.Helper()
	rec := &recorder{}
	p, err := stripecard.New(stripecard.Config{SecretKey: key, BaseURL: base, HTTPClient: &http.Client{Transport: rec, Timeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// wantForm checks a request's parameters, all of them.
func wantForm(t *testing.T, what string, got url.Values, want map[string]string) {
	t.Helper()
	flat := map[string]string{}
	for k, v := range got {
		if len(v) != 1 {
			t.Errorf("%s: parameter %s sent %d times: %q", what, k, len(v), v)
		}
		flat[k] = v[0]
	}
	if !maps.Equal(flat, want) {
		t.Errorf("%s: parameters\n got %v\nwant %v", what, flat, want)
	}
}

func idOf(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.ID == "" {
		t.Fatalf("no id in %s: %v", body, err)
	}
	return v.ID
}

// TestAgainstStripeMock sends every kind of request to the official
// stripe-mock, which validates parameters against Stripe's OpenAPI
// description (a wrong or unknown parameter is a 400 there) and answers
// from fixtures.
func TestAgainstStripeMock(t *testing.T) {
	base := stripemock.Start(t)
	ctx := context.Background()
	const returnURL = "https://loja.example/checkout/chk_1/continue"

	t.Run("charge with a PaymentMethod", func(t *testing.T) {
		p, rec := newProcessor(t, base, stripemock.TestKey)
		key := ids.New("pay")
		ch, err := p.Charge(ctx, card.ChargeRequest{IdempotencyKey: key, Token: "pm_card_visa", Amount: 1990, Currency: "BRL", ReturnURL: returnURL, CheckoutID: "chk_1"})
		if err != nil {
			t.Fatal(err)
		}
		ex := rec.all()
		if got := rec.calls(); !slices.Equal(got, []string{"POST /v1/payment_intents"}) {
			t.Fatalf("calls %v", got)
		}
		e := ex[0]
		if e.Status != http.StatusOK {
			t.Fatalf("stripe-mock refused the charge: %d %s", e.Status, e.Body)
		}
		if e.Header.Get("Idempotency-Key") != key || e.Header.Get("Stripe-Version") != stripe.APIVersion || e.Header.Get("Authorization") != "Bearer "+stripemock.TestKey {
			t.Fatalf("headers %v", e.Header)
		}
		wantForm(t, "charge", e.Form, map[string]string{
			"amount": "1990", "currency": "brl", "confirm": "true", "capture_method": "automatic",
			"payment_method": "pm_card_visa", "payment_method_types[0]": "card", "return_url": returnURL,
			"metadata[bcp_attempt_id]": key, "metadata[bcp_checkout_id]": "chk_1",
		})
		// stripe-mock answers its fixture intent, in requires_payment_method:
		// the state of an intent whose confirmation failed, so declined.
		want := card.Charge{ID: idOf(t, e.Body), Status: card.StatusDeclined, DeclineCode: card.DeclineCardDeclined, Amount: 1990}
		if ch != want {
			t.Fatalf("charge %+v, want %+v", ch, want)
		}
	})

	t.Run("charge with a card token", func(t *testing.T) {
		p, rec := newProcessor(t, base, stripemock.TestKey)
		key := ids.New("pay")
		ch, err := p.Charge(ctx, card.ChargeRequest{IdempotencyKey: key, Token: "tok_visa", Amount: 25990, Currency: "BRL", ReturnURL: returnURL})
		if err != nil {
			t.Fatal(err)
		}
		ex := rec.all()
		if got := rec.calls(); !slices.Equal(got, []string{"POST /v1/payment_methods", "POST /v1/payment_intents"}) {
			t.Fatalf("calls %v", got)
		}
		if ex[0].Status != http.StatusOK || ex[1].Status != http.StatusOK {
			t.Fatalf("stripe-mock refused: %d %s / %d %s", ex[0].Status, ex[0].Body, ex[1].Status, ex[1].Body)
		}
		if ex[0].Header.Get("Idempotency-Key") != "pm:"+key || ex[1].Header.Get("Idempotency-Key") != key {
			t.Fatalf("idempotency keys %q, %q", ex[0].Header.Get("Idempotency-Key"), ex[1].Header.Get("Idempotency-Key"))
		}
		wantForm(t, "payment method", ex[0].Form, map[string]string{"type": "card", "card[token]": "tok_visa", "metadata[bcp_attempt_id]": key})
		pm := idOf(t, ex[0].Body)
		if !strings.HasPrefix(pm, "pm_") {
			t.Fatalf("payment method id %q", pm)
		}
		wantForm(t, "charge", ex[1].Form, map[string]string{
			"amount": "25990", "currency": "brl", "confirm": "true", "capture_method": "automatic",
			"payment_method": pm, "payment_method_types[0]": "card", "return_url": returnURL,
			"metadata[bcp_attempt_id]": key,
		})
		if ch.ID != idOf(t, ex[1].Body) || ch.Amount != 25990 {
			t.Fatalf("charge %+v", ch)
		}
	})

	t.Run("refund", func(t *testing.T) {
		p, rec := newProcessor(t, base, stripemock.TestKey)
		r, err := p.Refund(ctx, "pi_3Charged", "ref_1", 500)
		if err != nil {
			t.Fatal(err)
		}
		ex := rec.all()
		if got := rec.calls(); !slices.Equal(got, []string{"POST /v1/refunds"}) || ex[0].Status != http.StatusOK {
			t.Fatalf("calls %v: %s", got, ex[0].Body)
		}
		if ex[0].Header.Get("Idempotency-Key") != "ref_1" {
			t.Fatalf("Idempotency-Key %q", ex[0].Header.Get("Idempotency-Key"))
		}
		wantForm(t, "refund", ex[0].Form, map[string]string{"payment_intent": "pi_3Charged", "amount": "500", "metadata[bcp_refund_id]": "ref_1"})
		if want := (card.Refund{ID: idOf(t, ex[0].Body), Amount: 500}); r != want {
			t.Fatalf("refund %+v, want %+v", r, want)
		}
	})

	t.Run("cancel claims the key", func(t *testing.T) {
		p, rec := newProcessor(t, base, stripemock.TestKey)
		key := ids.New("pay")
		ch, err := p.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
		if err != nil {
			t.Fatal(err)
		}
		ex := rec.all()
		if len(ex) != 2 || ex[0].Status != http.StatusOK || ex[1].Status != http.StatusOK {
			t.Fatalf("calls %v", rec.calls())
		}
		claim := idOf(t, ex[0].Body)
		if got := rec.calls(); !slices.Equal(got, []string{"POST /v1/payment_intents", "POST /v1/payment_intents/" + claim + "/cancel"}) {
			t.Fatalf("calls %v", got)
		}
		if ex[0].Header.Get("Idempotency-Key") != key {
			t.Fatalf("claim Idempotency-Key %q", ex[0].Header.Get("Idempotency-Key"))
		}
		if k := ex[1].Header.Get("Idempotency-Key"); k == "" || k == key {
			t.Fatalf("cancel Idempotency-Key %q: must be its own", k)
		}
		wantForm(t, "claim", ex[0].Form, map[string]string{
			"amount": "1990", "currency": "brl", "confirm": "false", "payment_method_types[0]": "card",
			"description": "Voided by its checkout before any charge", "metadata[bcp_attempt_id]": key, "metadata[bcp_voided]": "true",
		})
		wantForm(t, "cancel", ex[1].Form, map[string]string{"cancellation_reason": "abandoned"})
		if want := (card.Charge{ID: claim, Status: card.StatusVoided, Amount: 1990}); ch != want {
			t.Fatalf("cancel %+v, want %+v", ch, want)
		}
	})

	t.Run("lookup searches, then lists", func(t *testing.T) {
		p, rec := newProcessor(t, base, stripemock.TestKey)
		key := ids.New("pay")
		_, err := p.Lookup(ctx, key)
		// stripe-mock's fixture intents carry no metadata: nothing matches.
		if !errors.Is(err, card.ErrNotFound) {
			t.Fatalf("lookup: %v", err)
		}
		ex := rec.all()
		if got := rec.calls(); !slices.Equal(got, []string{"GET /v1/payment_intents/search", "GET /v1/payment_intents"}) || ex[0].Status != 200 || ex[1].Status != 200 {
			t.Fatalf("calls %v: %s %s", got, ex[0].Body, ex[1].Body)
		}
		wantForm(t, "search", ex[0].Form, map[string]string{"query": "metadata['bcp_attempt_id']:'" + key + "'", "limit": "10"})
		lo := ex[1].Form.Get("created[gte]")
		wantForm(t, "list", ex[1].Form, map[string]string{"created[gte]": lo, "limit": "100"})
		// The key was made just now: the list starts 5 minutes before it.
		if n, err := strconv.ParseInt(lo, 10, 64); err != nil || n > time.Now().Unix()-299 || n < time.Now().Unix()-330 {
			t.Fatalf("created[gte]=%s, want the key's time minus 5 minutes", lo)
		}
	})

	t.Run("a refused key is ErrCredentials and never quoted", func(t *testing.T) {
		const live = "sk_live_SECRETabc123"
		p, rec := newProcessor(t, base, live)
		_, err := p.Charge(ctx, card.ChargeRequest{IdempotencyKey: ids.New("pay"), Token: "pm_card_visa", Amount: 100, Currency: "BRL"})
		if !errors.Is(err, card.ErrCredentials) {
			t.Fatalf("err %v", err)
		}
		ex := rec.all()
		if len(ex) != 1 || ex[0].Status != http.StatusUnauthorized {
			t.Fatalf("calls %v (stripe-go must not retry)", rec.calls())
		}
		// stripe-mock quotes the whole Authorization header back; the error must not.
		if !bytes.Contains(ex[0].Body, []byte(live)) {
			t.Fatalf("stripe-mock's answer no longer quotes the key: %s", ex[0].Body)
		}
		var se *stripecard.Error
		if !errors.As(err, &se) || se.HTTPStatus != 401 || se.Type != "invalid_request_error" || se.Op != "charge" {
			t.Fatalf("err %#v", err)
		}
		if strings.Contains(err.Error(), "SECRETabc123") || strings.Contains(se.Message, "SECRETabc123") || !strings.Contains(se.Message, "[redacted]") {
			t.Fatalf("the key leaks: %v", err)
		}
	})

	t.Run("the connection test reads the balance", func(t *testing.T) {
		p, rec := newProcessor(t, base, stripemock.TestKey)
		if err := p.CheckCredentials(ctx); err != nil {
			t.Fatal(err)
		}
		if got := rec.calls(); !slices.Equal(got, []string{"GET /v1/balance"}) {
			t.Fatalf("calls %v", got)
		}
		bad, _ := newProcessor(t, base, "sk_live_SECRETabc123")
		if err := bad.CheckCredentials(ctx); !errors.Is(err, card.ErrCredentials) || strings.Contains(err.Error(), "SECRETabc123") {
			t.Fatalf("a refused key: %v", err)
		}
	})
}

// fake stands in for Stripe where stripe-mock cannot (declines, 3-D
// Secure, idempotency conflicts, refund limits, key errors): it answers
// with the JSON shapes of Stripe's API reference (the PaymentIntent and
// Refund objects as in docs.stripe.com/api and stripe-mock's
// fixtures3.json, generated from Stripe's OpenAPI description; error
// objects as in docs.stripe.com/api/errors: type, code, decline_code,
// param, message, payment_intent).
type fake struct {
	mu    sync.Mutex
	route func(r *http.Request, form url.Values) (status int, body string)
	hits  int
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

const fakeKey = "sk_test_fakeStripeKey"

func startFake(t *testing.T, route func(r *http.Request, form url.Values) (int, string)) (*stripecard.Processor, *recorder, *fake) {
	t.Helper()
	f := &fake{route: route}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_fake1")
		if r.Header.Get("Authorization") != "Bearer "+fakeKey {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Invalid API Key provided: sk_test_****************Key2","type":"invalid_request_error"}}`)
			return
		}
		form := r.URL.Query()
		if r.Method == http.MethodPost {
			_ = r.ParseForm()
			form = r.PostForm
		}
		status, body := route(r, form)
		if status == 0 {
			t.Errorf("unexpected request %s %s %v", r.Method, r.URL.Path, form)
			status, body = http.StatusNotFound, `{"error":{"message":"Unrecognized request URL","type":"invalid_request_error"}}`
		}
		if strings.HasPrefix(body, "REPLAY ") {
			w.Header().Set("Idempotent-Replayed", "true")
			body = strings.TrimPrefix(body, "REPLAY ")
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	p, rec := newProcessor(t, srv.URL, fakeKey)
	return p, rec, f
}

// intent renders a PaymentIntent.
func intent(id, status string, amount int64, key string, extra map[string]any) string {
	m := map[string]any{
		"id": id, "object": "payment_intent", "amount": amount, "amount_capturable": 0, "amount_received": 0,
		"capture_method": "automatic", "client_secret": id + "_secret_fAkEsEcReT", "confirmation_method": "automatic",
		"created": 1767225600, "currency": "brl", "last_payment_error": nil, "latest_charge": nil, "livemode": false,
		"metadata": map[string]string{"bcp_attempt_id": key}, "next_action": nil, "payment_method": "pm_1FakeCard",
		"payment_method_types": []string{"card"}, "status": status,
	}
	if status == "succeeded" {
		m["amount_received"], m["latest_charge"] = amount, "ch_"+strings.TrimPrefix(id, "pi_")
	}
	maps.Copy(m, extra)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func searchResult(objs ...string) string {
	return `{"object":"search_result","url":"/v1/payment_intents/search","has_more":false,"next_page":null,"data":[` + strings.Join(objs, ",") + `]}`
}

func listResult(objs ...string) string {
	return `{"object":"list","url":"/v1/payment_intents","has_more":false,"data":[` + strings.Join(objs, ",") + `]}`
}

// cardError is Stripe's 402 answer to a declined confirmation.
func cardError(code, declineCode, message, piID, key string, amount int64) string {
	lpe := map[string]any{"code": code, "decline_code": declineCode, "message": message, "type": "card_error", "charge": "ch_" + strings.TrimPrefix(piID, "pi_")}
	return `{"error":{"charge":"ch_` + strings.TrimPrefix(piID, "pi_") + `","code":"` + code + `","decline_code":"` + declineCode +
		`","doc_url":"https://stripe.com/docs/error-codes/` + strings.ReplaceAll(code, "_", "-") + `","message":"` + message +
		`","payment_intent":` + intent(piID, "requires_payment_method", amount, key, map[string]any{"last_payment_error": lpe}) +
		`,"request_log_url":"https://dashboard.stripe.com/test/logs/req_fake1?t=1767225600","type":"card_error"}}`
}

const idempotencyError = `{"error":{"message":"Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '%s' if you meant to execute a different request.","type":"idempotency_error"}}`

func chargeReq(key, token string) card.ChargeRequest {
	return card.ChargeRequest{IdempotencyKey: key, Token: token, TokenHash: card.TokenHash(token), Amount: 1990, Currency: "BRL", ReturnURL: "https://loja.example/checkout/chk_1", CheckoutID: "chk_1"}
}

func TestChargeDeclines(t *testing.T) {
	for _, c := range []struct {
		code, declineCode, message string
		want                       string
	}{
		{"card_declined", "insufficient_funds", "Your card has insufficient funds.", card.DeclineInsufficientFunds},
		{"card_declined", "generic_decline", "Your card was declined.", card.DeclineCardDeclined},
		{"card_declined", "do_not_honor", "Your card was declined.", card.DeclineCardDeclined},
		{"expired_card", "expired_card", "Your card has expired.", card.DeclineExpiredCard},
		{"incorrect_cvc", "incorrect_cvc", "Your card's security code is incorrect.", card.DeclineCardDeclined},
	} {
		t.Run(c.declineCode, func(t *testing.T) {
			p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
				if r.Method == "POST" && r.URL.Path == "/v1/payment_intents" {
					return http.StatusPaymentRequired, cardError(c.code, c.declineCode, c.message, "pi_3Declined", f.Get("metadata[bcp_attempt_id]"), 1990)
				}
				return 0, ""
			})
			ch, err := p.Charge(context.Background(), chargeReq("pay_declined", "pm_card_chargeDeclined"))
			want := card.Charge{ID: "pi_3Declined", Status: card.StatusDeclined, DeclineCode: c.want, Amount: 1990}
			if err != nil || ch != want {
				t.Fatalf("charge %+v %v, want %+v", ch, err, want)
			}
		})
	}
}

func TestChargeApprovedAndRequiresAction(t *testing.T) {
	const threeDS = "https://hooks.stripe.com/3d_secure_2/hosted?merchant=acct_1Fake&payment_intent=pi_3DS&payment_intent_client_secret=pi_3DS_secret_fAkE&publishable_key=pk_test_fAkE&source=payatt_3DS"
	for _, c := range []struct {
		name, status string
		extra        map[string]any
		want         card.Charge
	}{
		{"succeeded", "succeeded", nil, card.Charge{ID: "pi_3Paid", Status: card.StatusApproved, Amount: 1990}},
		{"3-D Secure by redirect", "requires_action", map[string]any{"next_action": map[string]any{
			"type": "redirect_to_url", "redirect_to_url": map[string]any{"return_url": "https://loja.example/checkout/chk_1", "url": threeDS}}},
			card.Charge{ID: "pi_3Paid", Status: card.StatusRequiresAction, Amount: 1990, ActionURL: threeDS}},
		// Without a return_url Stripe asks for Stripe.js: no page to send the buyer to.
		{"3-D Secure by Stripe.js", "requires_action", map[string]any{"next_action": map[string]any{
			"type": "use_stripe_sdk", "use_stripe_sdk": map[string]any{"type": "three_d_secure_redirect", "stripe_js": "https://hooks.stripe.com/redirect/authenticate/src_1Fake"}}},
			card.Charge{ID: "pi_3Paid", Status: card.StatusRequiresAction, Amount: 1990}},
		{"canceled", "canceled", nil, card.Charge{ID: "pi_3Paid", Status: card.StatusVoided, Amount: 1990}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
				if r.Method == "POST" && r.URL.Path == "/v1/payment_intents" {
					return 200, intent("pi_3Paid", c.status, 1990, f.Get("metadata[bcp_attempt_id]"), c.extra)
				}
				return 0, ""
			})
			ch, err := p.Charge(context.Background(), chargeReq("pay_1", "pm_card_visa"))
			if err != nil || ch != c.want {
				t.Fatalf("charge %+v %v, want %+v", ch, err, c.want)
			}
			if e := rec.all(); len(e) != 1 || e[0].Header.Get("Idempotency-Key") != "pay_1" {
				t.Fatalf("calls %v", rec.calls())
			}
		})
	}
}

// A retried charge gets Stripe's first answer again; one that was not
// final is read afresh (the buyer may have passed 3-D Secure since).
func TestChargeReplayIsRefreshed(t *testing.T) {
	p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/payment_intents":
			return 200, "REPLAY " + intent("pi_3Later", "requires_action", 1990, "pay_1", map[string]any{"next_action": map[string]any{
				"type": "redirect_to_url", "redirect_to_url": map[string]any{"return_url": "https://x", "url": "https://hooks.stripe.com/x"}}})
		case "GET /v1/payment_intents/pi_3Later":
			return 200, intent("pi_3Later", "succeeded", 1990, "pay_1", nil)
		}
		return 0, ""
	})
	ch, err := p.Charge(context.Background(), chargeReq("pay_1", "pm_card_visa"))
	if want := (card.Charge{ID: "pi_3Later", Status: card.StatusApproved, Amount: 1990}); err != nil || ch != want {
		t.Fatalf("charge %+v %v, want %+v", ch, err, want)
	}
	if got := rec.calls(); !slices.Equal(got, []string{"POST /v1/payment_intents", "GET /v1/payment_intents/pi_3Later"}) {
		t.Fatalf("calls %v", got)
	}
}

func TestChargeProcessingIsNotAnOutcome(t *testing.T) {
	p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
		return 200, intent("pi_3Slow", "processing", 1990, "pay_1", nil)
	})
	ch, err := p.Charge(context.Background(), chargeReq("pay_1", "pm_card_visa"))
	if err == nil || !strings.Contains(err.Error(), "pi_3Slow is processing") || ch != (card.Charge{}) {
		t.Fatalf("charge %+v %v", ch, err)
	}
	if errors.Is(err, card.ErrNotFound) || errors.Is(err, card.ErrConflict) {
		t.Fatalf("processing must be a plain error: %v", err)
	}
}

// A key Cancel claimed answers voided: Charge repeats the claim and Stripe
// replays it. A key held by another charge request is ErrConflict.
func TestChargeOnAClaimedKey(t *testing.T) {
	for _, c := range []struct {
		name    string
		claimed bool
	}{{"claimed by Cancel", true}, {"held by another charge", false}} {
		t.Run(c.name, func(t *testing.T) {
			p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
				claim := map[string]any{"metadata": map[string]string{"bcp_attempt_id": "pay_1", "bcp_voided": "true"}}
				switch {
				case r.Method == "POST" && r.URL.Path == "/v1/payment_intents" && f.Get("confirm") == "false" && c.claimed:
					// Stripe replays the claim as it was created.
					return 200, "REPLAY " + intent("pi_3Claim", "requires_payment_method", 1990, "pay_1", claim)
				case r.Method == "POST" && r.URL.Path == "/v1/payment_intents":
					return 400, fmt.Sprintf(idempotencyError, "pay_1")
				case r.URL.Path == "/v1/payment_intents/pi_3Claim/cancel":
					return 400, `{"error":{"code":"payment_intent_unexpected_state","doc_url":"https://stripe.com/docs/error-codes/payment-intent-unexpected-state","message":"You cannot cancel this PaymentIntent because it has a status of canceled. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.","type":"invalid_request_error"}}`
				case r.Method == "GET" && r.URL.Path == "/v1/payment_intents/pi_3Claim":
					return 200, intent("pi_3Claim", "canceled", 1990, "pay_1", claim)
				}
				return 0, ""
			})
			ch, err := p.Charge(context.Background(), chargeReq("pay_1", "pm_card_visa"))
			ex := rec.all()
			if len(ex) < 2 || ex[0].Form.Get("confirm") != "true" || ex[1].Form.Get("confirm") != "false" ||
				ex[1].Form.Get("metadata[bcp_voided]") != "true" || ex[1].Header.Get("Idempotency-Key") != "pay_1" {
				t.Fatalf("calls %v", rec.calls())
			}
			if c.claimed {
				if want := (card.Charge{ID: "pi_3Claim", Status: card.StatusVoided, Amount: 1990}); err != nil || ch != want {
					t.Fatalf("charge %+v %v, want %+v", ch, err, want)
				}
				want := []string{"POST /v1/payment_intents", "POST /v1/payment_intents", "POST /v1/payment_intents/pi_3Claim/cancel", "GET /v1/payment_intents/pi_3Claim"}
				if got := rec.calls(); !slices.Equal(got, want) {
					t.Fatalf("calls %v, want %v", got, want)
				}
				return
			}
			if len(ex) != 2 {
				t.Fatalf("calls %v", rec.calls())
			}
			if !errors.Is(err, card.ErrConflict) || ch != (card.Charge{}) {
				t.Fatalf("charge %+v %v", ch, err)
			}
		})
	}
}

func TestChargeTokens(t *testing.T) {
	ctx := context.Background()
	t.Run("no call for what Stripe cannot charge", func(t *testing.T) {
		p, _, f := startFake(t, func(*http.Request, url.Values) (int, string) { return 0, "" })
		for _, tok := range []string{"", "spt_1FakeShared", "eyJhbGciOi", "4242424242424242"} {
			ch, err := p.Charge(ctx, chargeReq("pay_1", tok))
			if want := (card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineInvalidToken, Amount: 1990}); err != nil || ch != want {
				t.Fatalf("token %q: %+v %v", tok, ch, err)
			}
		}
		if f.count() != 0 {
			t.Fatalf("%d requests", f.count())
		}
	})
	t.Run("a used token", func(t *testing.T) {
		p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			if r.URL.Path == "/v1/payment_methods" {
				return 400, `{"error":{"code":"token_already_used","doc_url":"https://stripe.com/docs/error-codes/token-already-used","message":"You cannot use a Stripe token more than once: tok_1UsedOnce.","type":"invalid_request_error"}}`
			}
			return 0, ""
		})
		ch, err := p.Charge(ctx, chargeReq("pay_1", "tok_1UsedOnce"))
		if want := (card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineTokenUsed, Amount: 1990}); err != nil || ch != want {
			t.Fatalf("charge %+v %v", ch, err)
		}
	})
	t.Run("an unknown token", func(t *testing.T) {
		p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			if r.URL.Path == "/v1/payment_methods" {
				return 400, `{"error":{"code":"resource_missing","doc_url":"https://stripe.com/docs/error-codes/resource-missing","message":"No such token: 'tok_1Nobody'","param":"card[token]","type":"invalid_request_error"}}`
			}
			return 0, ""
		})
		ch, err := p.Charge(ctx, chargeReq("pay_1", "tok_1Nobody"))
		if want := (card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineInvalidToken, Amount: 1990}); err != nil || ch != want {
			t.Fatalf("charge %+v %v", ch, err)
		}
	})
	t.Run("an unknown payment method", func(t *testing.T) {
		p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			return 400, `{"error":{"code":"resource_missing","doc_url":"https://stripe.com/docs/error-codes/resource-missing","message":"No such PaymentMethod: 'pm_1Nobody'","param":"payment_method","type":"invalid_request_error"}}`
		})
		ch, err := p.Charge(ctx, chargeReq("pay_1", "pm_1Nobody"))
		if want := (card.Charge{Status: card.StatusDeclined, DeclineCode: card.DeclineInvalidToken, Amount: 1990}); err != nil || ch != want {
			t.Fatalf("charge %+v %v", ch, err)
		}
	})
}

// Stripe's refusals map to the card package's errors, in one request
// (stripe-go's retries are off), with no key, token or client secret in
// the error.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		is     error
	}{
		{"wrong key", 401, `{"error":{"message":"Invalid API Key provided: sk_test_********************Key2","type":"invalid_request_error"}}`, card.ErrCredentials},
		{"restricted key without the permission", 403, `{"error":{"message":"The provided key 'rk_test_*********************Fake' does not have the required permissions for this endpoint on account 'acct_1Fake'. Having the 'rak_payment_intent_write' permission would allow this request to continue.","type":"invalid_request_error"}}`, card.ErrCredentials},
		{"rate limit", 429, `{"error":{"code":"rate_limit","doc_url":"https://stripe.com/docs/error-codes/rate-limit","message":"Request rate limit exceeded. You can learn more about rate limits here https://stripe.com/docs/rate-limits.","type":"invalid_request_error"}}`, nil},
		{"same key running", 409, `{"error":{"code":"idempotency_key_in_use","doc_url":"https://stripe.com/docs/error-codes/idempotency-key-in-use","message":"There is currently another in-progress request using this Stripe-Idempotency-Key (that probably means you submitted twice, and the other request is still going through): pay_1. Please try again later.","type":"invalid_request_error"}}`, nil},
		{"Stripe failed", 500, `{"error":{"message":"An unknown error occurred","type":"api_error"}}`, nil},
		{"bad request", 400, `{"error":{"code":"amount_too_small","doc_url":"https://stripe.com/docs/error-codes/amount-too-small","message":"Amount must be at least R$0.50 brl","param":"amount","type":"invalid_request_error"}}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _, f := startFake(t, func(*http.Request, url.Values) (int, string) { return c.status, c.body })
			_, err := p.Charge(context.Background(), chargeReq("pay_1", "pm_1Secretish"))
			var se *stripecard.Error
			if !errors.As(err, &se) || se.HTTPStatus != c.status || se.Op != "charge" || se.RequestID != "req_fake1" {
				t.Fatalf("err %v", err)
			}
			for _, e := range []error{card.ErrCredentials, card.ErrConflict, card.ErrRefundExceeds, card.ErrNotFound} {
				if errors.Is(err, e) != (e == c.is) {
					t.Fatalf("errors.Is(%v, %v) = %v", err, e, !(e == c.is))
				}
			}
			if n := f.count(); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			for _, secret := range []string{fakeKey, "sk_test_", "rk_test_", "pm_1Secretish"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error quotes %q: %v", secret, err)
				}
			}
		})
	}
	// stripe-go retries only what never got an answer (its own retries
	// would hide the failure from the payments service): a connection
	// dropped without an answer is tried once.
	t.Run("network", func(t *testing.T) {
		var mu sync.Mutex
		conns := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			conns++
			mu.Unlock()
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = c.Close()
			}
		}))
		t.Cleanup(srv.Close)
		p, _ := newProcessor(t, srv.URL, fakeKey)
		_, err := p.Charge(context.Background(), chargeReq("pay_1", "pm_card_visa"))
		var se *stripecard.Error
		if err == nil || errors.As(err, &se) || errors.Is(err, card.ErrCredentials) || !strings.HasPrefix(err.Error(), "stripecard: charge: ") {
			t.Fatalf("err %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if conns != 1 {
			t.Fatalf("%d requests, want 1", conns)
		}
	})
}

func TestRefund(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		status int
		body   string
		is     error
	}{
		{"more than is left", 400, `{"error":{"message":"Refund amount (R$20.00) is greater than unrefunded amount on charge (R$10.00)","param":"amount","type":"invalid_request_error"}}`, card.ErrRefundExceeds},
		{"nothing left", 400, `{"error":{"code":"charge_already_refunded","doc_url":"https://stripe.com/docs/error-codes/charge-already-refunded","message":"Charge ch_3Paid has already been refunded.","type":"invalid_request_error"}}`, card.ErrRefundExceeds},
		{"amount too large", 400, `{"error":{"code":"amount_too_large","doc_url":"https://stripe.com/docs/error-codes/amount-too-large","message":"Amount must be no more than R$10.00","param":"amount","type":"invalid_request_error"}}`, card.ErrRefundExceeds},
		{"refund id reused", 400, fmt.Sprintf(idempotencyError, "ref_1"), card.ErrConflict},
		{"not refundable", 400, `{"error":{"code":"charge_not_refundable","doc_url":"https://stripe.com/docs/error-codes/charge-not-refundable","message":"This PaymentIntent does not have a successful charge to refund.","type":"invalid_request_error"}}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) { return c.status, c.body })
			_, err := p.Refund(ctx, "pi_3Paid", "ref_1", 2000)
			var se *stripecard.Error
			if !errors.As(err, &se) || se.Op != "refund" || se.HTTPStatus != c.status {
				t.Fatalf("err %v", err)
			}
			for _, e := range []error{card.ErrConflict, card.ErrRefundExceeds, card.ErrCredentials} {
				if errors.Is(err, e) != (e == c.is) {
					t.Fatalf("errors.Is(%v, %v) wrong", err, e)
				}
			}
		})
	}
	t.Run("done", func(t *testing.T) {
		p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			return 200, `{"id":"re_3Back","object":"refund","amount":` + f.Get("amount") + `,"balance_transaction":"txn_1Fake","charge":"ch_3Paid","created":1767225600,"currency":"brl","metadata":{"bcp_refund_id":"ref_1"},"payment_intent":"pi_3Paid","reason":null,"receipt_number":null,"status":"succeeded"}`
		})
		r, err := p.Refund(ctx, "pi_3Paid", "ref_1", 750)
		if want := (card.Refund{ID: "re_3Back", Amount: 750}); err != nil || r != want {
			t.Fatalf("refund %+v %v", r, err)
		}
		if e := rec.all(); len(e) != 1 || e[0].Header.Get("Idempotency-Key") != "ref_1" || e[0].Form.Get("payment_intent") != "pi_3Paid" {
			t.Fatalf("calls %v", rec.calls())
		}
	})
	t.Run("bad input", func(t *testing.T) {
		p, _, f := startFake(t, func(*http.Request, url.Values) (int, string) { return 0, "" })
		for _, c := range []struct {
			charge string
			cents  int64
		}{{"", 100}, {"ch_3Paid", 100}, {"pi_3Paid", 0}, {"pi_3Paid", -5}} {
			if _, err := p.Refund(ctx, c.charge, "ref_1", c.cents); err == nil {
				t.Fatalf("refund %q %d: no error", c.charge, c.cents)
			}
		}
		if f.count() != 0 {
			t.Fatalf("%d requests", f.count())
		}
	})
}

// When a charge holds the key, Cancel finds and stops it.
func TestCancelStopsTheChargeHoldingTheKey(t *testing.T) {
	ctx := context.Background()
	key := ids.New("pay")
	claimRefused := func(r *http.Request, f url.Values) bool {
		return r.Method == "POST" && r.URL.Path == "/v1/payment_intents" && f.Get("confirm") == "false" && f.Get("metadata[bcp_voided]") == "true"
	}
	waiting := intent("pi_3Wait", "requires_action", 1990, key, map[string]any{"next_action": map[string]any{"type": "redirect_to_url", "redirect_to_url": map[string]any{"return_url": "https://x", "url": "https://hooks.stripe.com/x"}}})
	for _, c := range []struct {
		name   string
		search string
		list   string
		cancel func() (int, string)
		calls  []string
		want   card.Charge
	}{
		{
			name: "waiting for 3-D Secure: canceled", search: searchResult(waiting),
			cancel: func() (int, string) {
				return 200, intent("pi_3Wait", "canceled", 1990, key, map[string]any{"cancellation_reason": "abandoned", "canceled_at": 1767225700})
			},
			calls: []string{"POST /v1/payment_intents", "GET /v1/payment_intents/search", "POST /v1/payment_intents/pi_3Wait/cancel"},
			want:  card.Charge{ID: "pi_3Wait", Status: card.StatusVoided, Amount: 1990},
		},
		{
			name: "the buyer finished 3-D Secure first: approved", search: searchResult(waiting),
			cancel: func() (int, string) {
				return 400, `{"error":{"code":"payment_intent_unexpected_state","doc_url":"https://stripe.com/docs/error-codes/payment-intent-unexpected-state","message":"You cannot cancel this PaymentIntent because it has a status of succeeded. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.","type":"invalid_request_error"}}`
			},
			calls: []string{"POST /v1/payment_intents", "GET /v1/payment_intents/search", "POST /v1/payment_intents/pi_3Wait/cancel", "GET /v1/payment_intents/pi_3Wait"},
			want:  card.Charge{ID: "pi_3Wait", Status: card.StatusApproved, Amount: 1990},
		},
		{
			name: "already paid: approved, nothing canceled", search: searchResult(intent("pi_3Paid", "succeeded", 1990, key, nil)),
			calls: []string{"POST /v1/payment_intents", "GET /v1/payment_intents/search"},
			want:  card.Charge{ID: "pi_3Paid", Status: card.StatusApproved, Amount: 1990},
		},
		{
			name: "declined: returned as it is", search: searchResult(intent("pi_3No", "requires_payment_method", 1990, key, map[string]any{"last_payment_error": map[string]any{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "message": "Your card has insufficient funds."}})),
			calls: []string{"POST /v1/payment_intents", "GET /v1/payment_intents/search"},
			want:  card.Charge{ID: "pi_3No", Status: card.StatusDeclined, DeclineCode: card.DeclineInsufficientFunds, Amount: 1990},
		},
		{
			name: "not searchable yet, but listed", search: searchResult(intent("pi_Other", "succeeded", 500, "pay_someoneElse", nil)), list: listResult(intent("pi_3Paid", "succeeded", 1990, key, nil)),
			calls: []string{"POST /v1/payment_intents", "GET /v1/payment_intents/search", "GET /v1/payment_intents"},
			want:  card.Charge{ID: "pi_3Paid", Status: card.StatusApproved, Amount: 1990},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
				switch {
				case claimRefused(r, f):
					return 400, fmt.Sprintf(idempotencyError, key)
				case r.URL.Path == "/v1/payment_intents/search":
					return 200, c.search
				case r.Method == "GET" && r.URL.Path == "/v1/payment_intents" && c.list != "":
					return 200, c.list
				case r.URL.Path == "/v1/payment_intents/pi_3Wait/cancel" && c.cancel != nil:
					return c.cancel()
				case r.Method == "GET" && r.URL.Path == "/v1/payment_intents/pi_3Wait":
					return 200, intent("pi_3Wait", "succeeded", 1990, key, nil)
				}
				return 0, ""
			})
			ch, err := p.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
			if err != nil || ch != c.want {
				t.Fatalf("cancel %+v %v, want %+v", ch, err, c.want)
			}
			if got := rec.calls(); !slices.Equal(got, c.calls) {
				t.Fatalf("calls %v, want %v", got, c.calls)
			}
		})
	}
	t.Run("nowhere to be found: an error, never a guess", func(t *testing.T) {
		p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			switch {
			case claimRefused(r, f):
				return 400, fmt.Sprintf(idempotencyError, key)
			case r.URL.Path == "/v1/payment_intents/search":
				return 200, searchResult()
			case r.Method == "GET" && r.URL.Path == "/v1/payment_intents":
				return 200, listResult()
			}
			return 0, ""
		})
		ch, err := p.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
		if err == nil || errors.Is(err, card.ErrNotFound) || ch != (card.Charge{}) || !strings.Contains(err.Error(), "try again later") {
			t.Fatalf("cancel %+v %v", ch, err)
		}
	})
	t.Run("the charge is running right now", func(t *testing.T) {
		p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			return 409, `{"error":{"code":"idempotency_key_in_use","message":"There is currently another in-progress request using this Stripe-Idempotency-Key. Please try again later.","type":"invalid_request_error"}}`
		})
		ch, err := p.Cancel(ctx, card.CancelRequest{IdempotencyKey: key, Amount: 1990, Currency: "BRL"})
		if err == nil || errors.Is(err, card.ErrConflict) || ch != (card.Charge{}) {
			t.Fatalf("cancel %+v %v", ch, err)
		}
	})
}

func TestLookup(t *testing.T) {
	ctx := context.Background()
	key := ids.New("pay")
	t.Run("found by search", func(t *testing.T) {
		p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			if r.URL.Path == "/v1/payment_intents/search" && f.Get("query") == "metadata['bcp_attempt_id']:'"+key+"'" {
				return 200, searchResult(intent("pi_3Paid", "succeeded", 1990, key, nil))
			}
			return 0, ""
		})
		ch, err := p.Lookup(ctx, key)
		if want := (card.Charge{ID: "pi_3Paid", Status: card.StatusApproved, Amount: 1990}); err != nil || ch != want {
			t.Fatalf("lookup %+v %v", ch, err)
		}
		if len(rec.all()) != 1 {
			t.Fatalf("calls %v", rec.calls())
		}
	})
	t.Run("Cancel's claim is voided", func(t *testing.T) {
		p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			return 200, searchResult(intent("pi_3Claim", "canceled", 1990, key, map[string]any{"metadata": map[string]string{"bcp_attempt_id": key, "bcp_voided": "true"}}))
		})
		ch, err := p.Lookup(ctx, key)
		if want := (card.Charge{ID: "pi_3Claim", Status: card.StatusVoided, Amount: 1990}); err != nil || ch != want {
			t.Fatalf("lookup %+v %v", ch, err)
		}
	})
	t.Run("processing is an error", func(t *testing.T) {
		p, _, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			return 200, searchResult(intent("pi_3Slow", "processing", 1990, key, nil))
		})
		if ch, err := p.Lookup(ctx, key); err == nil || errors.Is(err, card.ErrNotFound) {
			t.Fatalf("lookup %+v %v", ch, err)
		}
	})
	t.Run("a key without a time rests on the search", func(t *testing.T) {
		p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			if r.URL.Path == "/v1/payment_intents/search" {
				return 200, searchResult()
			}
			return 0, ""
		})
		// Not a platform id; and one whose UUID is not version 7.
		for _, k := range []string{"att_1", key[:14] + "0" + key[15:]} {
			rec.reset()
			if _, err := p.Lookup(ctx, k); !errors.Is(err, card.ErrNotFound) {
				t.Fatalf("lookup %s: %v", k, err)
			}
			if got := rec.calls(); !slices.Equal(got, []string{"GET /v1/payment_intents/search"}) {
				t.Fatalf("lookup %s: calls %v", k, got)
			}
		}
	})
	t.Run("the list is read to its end", func(t *testing.T) {
		p, rec, _ := startFake(t, func(r *http.Request, f url.Values) (int, string) {
			switch {
			case r.URL.Path == "/v1/payment_intents/search":
				return 200, searchResult()
			case r.URL.Path == "/v1/payment_intents" && f.Get("starting_after") == "":
				return 200, `{"object":"list","url":"/v1/payment_intents","has_more":true,"data":[` + intent("pi_A", "succeeded", 10, "pay_a", nil) + `]}`
			case r.URL.Path == "/v1/payment_intents" && f.Get("starting_after") == "pi_A":
				return 200, listResult(intent("pi_3Mine", "requires_action", 1990, key, nil))
			}
			return 0, ""
		})
		ch, err := p.Lookup(ctx, key)
		if want := (card.Charge{ID: "pi_3Mine", Status: card.StatusRequiresAction, Amount: 1990}); err != nil || ch != want {
			t.Fatalf("lookup %+v %v", ch, err)
		}
		ex := rec.all()
		if got := rec.calls(); !slices.Equal(got, []string{"GET /v1/payment_intents/search", "GET /v1/payment_intents", "GET /v1/payment_intents"}) || ex[2].Form.Get("starting_after") != "pi_A" {
			t.Fatalf("calls %v", got)
		}
	})
	t.Run("bad key", func(t *testing.T) {
		p, _, f := startFake(t, func(*http.Request, url.Values) (int, string) { return 0, "" })
		for _, k := range []string{"", "pay_1' OR status:'succeeded", strings.Repeat("a", 201)} {
			if _, err := p.Lookup(ctx, k); err == nil || errors.Is(err, card.ErrNotFound) {
				t.Fatalf("key %q: %v", k, err)
			}
		}
		if f.count() != 0 {
			t.Fatalf("%d requests", f.count())
		}
	})
}

func TestNew(t *testing.T) {
	for _, c := range []stripecard.Config{
		{SecretKey: ""},
		{SecretKey: "pk_test_publishable"},
		{SecretKey: "sk_test_"},
		{SecretKey: "sk_test_ok", BaseURL: "http://stripe.example.com"},
		{SecretKey: "sk_test_ok", BaseURL: "ftp://127.0.0.1"},
		{SecretKey: "sk_test_ok", BaseURL: "https://user:pass@api.stripe.com"},
	} {
		if _, err := stripecard.New(c); err == nil {
			t.Fatalf("New(%+v): no error", c)
		} else if c.SecretKey != "" && strings.Contains(err.Error(), c.SecretKey) {
			t.Fatalf("New quotes the key: %v", err)
		}
	}
	for _, c := range []stripecard.Config{
		{SecretKey: "sk_live_51Fake"},
		{SecretKey: "rk_test_51Fake", BaseURL: "https://api.stripe.com"},
		{SecretKey: "sk_test_ok", BaseURL: "http://127.0.0.1:12111"},
		{SecretKey: "sk_test_ok", BaseURL: "http://localhost:12111"},
	} {
		if _, err := stripecard.New(c); err != nil {
			t.Fatalf("New(%+v): %v", c, err)
		}
	}
}
