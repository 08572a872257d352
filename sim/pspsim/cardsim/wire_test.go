package cardsim_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/sim/pspsim/cardsim"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// What stripe-go does not show: the wire itself.

func claimForm(amount string) url.Values {
	return url.Values{"amount": {amount}, "currency": {"brl"}, "confirm": {"false"}, "payment_method_types[0]": {"card"}, "metadata[bcp_attempt_id]": {"pay_x"}}
}

func TestIdempotencyOnTheWire(t *testing.T) {
	e := newEnv(t)
	key := newKey()
	status, h, first := e.api("POST", "/v1/payment_intents", e.key, claimForm("1990"), "Idempotency-Key", key)
	if status != 200 || first["status"] != "requires_payment_method" || h.Get("Idempotent-Replayed") != "" || h.Get("Idempotency-Key") != key ||
		!strings.HasPrefix(h.Get("Request-Id"), "req_") || h.Get("Stripe-Version") == "" {
		t.Fatalf("first: %d %v %v", status, h, first)
	}
	t.Run("same request: the saved answer", func(t *testing.T) {
		status, h, again := e.api("POST", "/v1/payment_intents", e.key, claimForm("1990"), "Idempotency-Key", key)
		if status != 200 || again["id"] != first["id"] || again["client_secret"] != first["client_secret"] ||
			h.Get("Idempotent-Replayed") != "true" || h.Get("Original-Request") == h.Get("Request-Id") {
			t.Fatalf("replay: %d %v %v", status, h, again)
		}
	})
	t.Run("other parameters", func(t *testing.T) {
		status, h, v := e.api("POST", "/v1/payment_intents", e.key, claimForm("2990"), "Idempotency-Key", key)
		want := "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '" + key + "' if you meant to execute a different request."
		if err := errorOf(v); status != 400 || err["type"] != "idempotency_error" || err["message"] != want || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%d %v", status, v)
		}
	})
	t.Run("another endpoint", func(t *testing.T) {
		status, _, v := e.api("POST", "/v1/refunds", e.key, url.Values{"payment_intent": {first["id"].(string)}}, "Idempotency-Key", key)
		if err := errorOf(v); status != 400 || err["type"] != "idempotency_error" ||
			!strings.HasPrefix(err["message"].(string), "Keys for idempotent requests can only be used for the same endpoint they were first used for ('POST /v1/payment_intents' vs 'POST /v1/refunds')") {
			t.Fatalf("%d %v", status, v)
		}
	})
	t.Run("in use by a running request", func(t *testing.T) {
		key := newKey()
		ctx := context.Background()
		// Hold the key as the transaction serving it does.
		tx, err := e.db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SELECT set_config('app.tenant_id', $1, true)`, e.account.String()); err != nil {
			t.Fatal(err)
		}
		if held, err := pspsimdb.New(tx).CardTryLockKey(ctx, pspsimdb.CardTryLockKeyParams{TenantID: e.account, Key: key}); err != nil || !held {
			t.Fatalf("lock %v %v", held, err)
		}
		status, _, v := e.api("POST", "/v1/payment_intents", e.key, claimForm("1990"), "Idempotency-Key", key)
		if err := errorOf(v); status != 409 || err["type"] != "invalid_request_error" || err["code"] != "idempotency_key_in_use" {
			t.Fatalf("%d %v", status, v)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		// The 409 was not saved: the retry runs.
		status, h, v := e.api("POST", "/v1/payment_intents", e.key, claimForm("1990"), "Idempotency-Key", key)
		if status != 200 || h.Get("Idempotent-Replayed") != "" || e.intents(key) != 1 {
			t.Fatalf("after: %d %v", status, v)
		}
	})
	t.Run("invalid parameters are not saved", func(t *testing.T) {
		key := newKey()
		bad := claimForm("1990")
		bad.Set("colour", "blue")
		status, _, v := e.api("POST", "/v1/payment_intents", e.key, bad, "Idempotency-Key", key)
		if err := errorOf(v); status != 400 || err["code"] != "parameter_unknown" || err["param"] != "colour" || err["message"] != "Received unknown parameter: colour" {
			t.Fatalf("%d %v", status, v)
		}
		if status, h, _ := e.api("POST", "/v1/payment_intents", e.key, claimForm("1990"), "Idempotency-Key", key); status != 200 || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("after: %d", status)
		}
	})
}

func TestParameters(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name        string
		form        url.Values
		param, code string
	}{
		{"no amount", url.Values{"currency": {"brl"}}, "amount", "parameter_missing"},
		{"amount not a number", url.Values{"amount": {"19.90"}, "currency": {"brl"}}, "amount", "parameter_invalid_integer"},
		{"amount zero", url.Values{"amount": {"0"}, "currency": {"brl"}}, "amount", "parameter_invalid_integer"},
		{"amount too large", url.Values{"amount": {"100000000"}, "currency": {"brl"}}, "amount", "amount_too_large"},
		{"confirm without a payment method", url.Values{"amount": {"100"}, "currency": {"brl"}, "confirm": {"true"}, "payment_method_types[0]": {"card"}}, "payment_method", "payment_intent_unexpected_state"},
		{"both kinds of methods", url.Values{"amount": {"100"}, "currency": {"brl"}, "payment_method_types[0]": {"card"}, "automatic_payment_methods[enabled]": {"true"}}, "automatic_payment_methods", ""},
		{"automatic methods need a return_url", url.Values{"amount": {"100"}, "currency": {"brl"}, "confirm": {"true"}, "payment_method": {"pm_card_visa"}}, "return_url", ""},
		{"return_url without confirm", url.Values{"amount": {"100"}, "currency": {"brl"}, "return_url": {returnURL}}, "return_url", ""},
		{"manual capture", url.Values{"amount": {"100"}, "currency": {"brl"}, "capture_method": {"manual"}}, "capture_method", ""},
		{"boleto", url.Values{"amount": {"100"}, "currency": {"brl"}, "payment_method_types[0]": {"boleto"}}, "payment_method_types", ""},
	} {
		status, _, v := e.api("POST", "/v1/payment_intents", e.key, c.form)
		if err := errorOf(v); status != 400 || err["type"] != "invalid_request_error" || err["param"] != c.param || (err["code"] != nil) != (c.code != "") || c.code != "" && err["code"] != c.code {
			t.Errorf("%s: %d %v", c.name, status, v)
		}
	}
	if n := e.intents(""); n != 0 {
		t.Fatalf("%d intents", n)
	}
	// Without a return_url, 3-D Secure is for Stripe.js (as at Stripe).
	status, _, v := e.api("POST", "/v1/payment_intents", e.key, url.Values{"amount": {"100"}, "currency": {"BRL"}, "confirm": {"true"},
		"payment_method": {"pm_card_threeDSecure2Required"}, "payment_method_types[0]": {"card"}})
	na, _ := v["next_action"].(map[string]any)
	sdk, _ := na["use_stripe_sdk"].(map[string]any)
	if status != 200 || v["status"] != "requires_action" || v["currency"] != "brl" || na["type"] != "use_stripe_sdk" ||
		!strings.HasPrefix(sdk["stripe_js"].(string), e.srv.URL+"/sim/3ds/"+v["id"].(string)+"?client_secret=") {
		t.Fatalf("%d %v", status, v)
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	status, h, v := e.api("GET", "/v1/balance", "", nil)
	if err := errorOf(v); status != 401 || err["type"] != "invalid_request_error" || !strings.HasPrefix(err["message"].(string), "You did not provide an API key.") || h.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: %d %v", status, v)
	}
	for _, bad := range []string{"sk_test_short", "pk_test_" + strings.Repeat("x", 30), "whatever-this-is"} {
		status, _, v := e.api("GET", "/v1/balance", bad, nil)
		msg, _ := errorOf(v)["message"].(string)
		if status != 401 || !strings.HasPrefix(msg, "Invalid API Key provided: ") || strings.Contains(msg, bad) || strings.Contains(msg, "short") {
			t.Fatalf("key %q: %d %v", bad, status, v)
		}
	}
	// Basic, with the key as the user name (curl -u sk_test_…:).
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/balance", nil)
	req.SetBasicAuth(e.key, "")
	res, err := e.srv.Client().Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("basic: %v %v", res, err)
	}
	res.Body.Close()
	// Another account sees nothing of this one.
	ch, err := e.proc.Charge(context.Background(), chargeReq(newKey(), "pm_card_visa", 1990))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := e.newAccount()
	status, _, v = e.api("GET", "/v1/payment_intents/"+ch.ID, other, nil)
	if err := errorOf(v); status != 404 || err["code"] != "resource_missing" || err["message"] != "No such payment_intent: '"+ch.ID+"'" {
		t.Fatalf("another account: %d %v", status, v)
	}
	if status, _, v := e.api("GET", "/v1/payment_intents/"+ch.ID, e.key, nil); status != 200 || v["id"] != ch.ID || v["status"] != "succeeded" {
		t.Fatalf("own: %d %v", status, v)
	}
	// Provisioning rotates the key (scope pspsim, as the application role).
	newKey, hash := cardsim.NewKey()
	err = pgstore.InPSPSim(context.Background(), e.db.Pool, func(tx pgx.Tx) error {
		n, err := pspsimdb.New(tx).SetCardKey(context.Background(), pspsimdb.SetCardKeyParams{TenantID: e.account, StripeKeyHash: hash, Now: time.Now()})
		if err == nil && n != 1 {
			err = fmt.Errorf("%d accounts updated", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, _ := e.api("GET", "/v1/balance", e.key, nil); status != 401 {
		t.Fatalf("the old key: %d", status)
	}
	if status, _, _ := e.api("GET", "/v1/balance", newKey, nil); status != 200 {
		t.Fatalf("the new key: %d", status)
	}
	status, _, v = e.api("GET", "/v1/customers", newKey, nil)
	if status != 404 || errorOf(v)["type"] != "invalid_request_error" {
		t.Fatalf("unrecognized: %d %v", status, v)
	}
	if status, _, _ := e.api("DELETE", "/v1/payment_intents/"+ch.ID, newKey, nil); status != 404 {
		t.Fatalf("DELETE: %d", status)
	}
}

func TestListSearchAndBalance(t *testing.T) {
	e := newEnv(t)
	var made []string // oldest first
	for i := range 4 {
		f := claimForm(strconv.Itoa(100 + i))
		f.Set("metadata[group]", map[bool]string{true: "a", false: "b"}[i < 3])
		status, _, v := e.api("POST", "/v1/payment_intents", e.key, f)
		if status != 200 {
			t.Fatalf("%d %v", status, v)
		}
		made = append(made, v["id"].(string))
	}
	ids := func(v map[string]any) []string {
		var out []string
		for _, d := range v["data"].([]any) {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		return out
	}
	q := url.Values{"query": {"metadata['group']:'a'"}, "limit": {"2"}}
	status, _, v := e.api("GET", "/v1/payment_intents/search", e.key, q)
	page, _ := v["next_page"].(string)
	if got := ids(v); status != 200 || v["object"] != "search_result" || v["has_more"] != true || page == "" || strings.Join(got, ",") != made[2]+","+made[1] {
		t.Fatalf("search: %d %v", status, v)
	}
	q.Set("page", page)
	status, _, v = e.api("GET", "/v1/payment_intents/search", e.key, q)
	if got := ids(v); status != 200 || v["has_more"] != false || v["next_page"] != nil || strings.Join(got, ",") != made[0] {
		t.Fatalf("search page 2: %d %v", status, v)
	}
	if status, _, v := e.api("GET", "/v1/payment_intents/search", e.key, url.Values{"query": {"status:'succeeded'"}}); status != 400 || errorOf(v)["param"] != "query" {
		t.Fatalf("other search: %d %v", status, v)
	}
	l := url.Values{"limit": {"3"}, "created[gte]": {strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)}}
	status, _, v = e.api("GET", "/v1/payment_intents", e.key, l)
	if got := ids(v); status != 200 || v["object"] != "list" || v["has_more"] != true || strings.Join(got, ",") != made[3]+","+made[2]+","+made[1] {
		t.Fatalf("list: %d %v", status, v)
	}
	l.Set("starting_after", made[1])
	status, _, v = e.api("GET", "/v1/payment_intents", e.key, l)
	if got := ids(v); status != 200 || v["has_more"] != false || strings.Join(got, ",") != made[0] {
		t.Fatalf("list page 2: %d %v", status, v)
	}
	status, _, v = e.api("GET", "/v1/payment_intents", e.key, url.Values{"created[gte]": {strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}})
	if status != 200 || len(v["data"].([]any)) != 0 {
		t.Fatalf("list of the future: %d %v", status, v)
	}
	if status, _, _ := e.api("GET", "/v1/payment_intents", e.key, url.Values{"ending_before": {made[0]}}); status != 400 {
		t.Fatalf("ending_before: %d", status)
	}

	// The balance: what succeeded, less refunds.
	status, _, v = e.api("GET", "/v1/balance", e.key, nil)
	if status != 200 || v["object"] != "balance" || v["available"].([]any)[0].(map[string]any)["amount"] != 0.0 {
		t.Fatalf("empty balance: %d %v", status, v)
	}
	ch, err := e.proc.Charge(context.Background(), chargeReq(newKey(), "pm_card_visa", 1990))
	if err != nil || ch.Status != card.StatusApproved {
		t.Fatal(ch, err)
	}
	if _, err := e.proc.Refund(context.Background(), ch.ID, "ref_1", 500); err != nil {
		t.Fatal(err)
	}
	status, _, v = e.api("GET", "/v1/balance", e.key, nil)
	if a := v["available"].([]any)[0].(map[string]any); status != 200 || a["amount"] != 1490.0 || a["currency"] != "brl" {
		t.Fatalf("balance: %d %v", status, v)
	}
}

func TestNewKey(t *testing.T) {
	k1, h1 := cardsim.NewKey()
	k2, _ := cardsim.NewKey()
	sum := sha256.Sum256([]byte(k1))
	if !regexp.MustCompile(`^sk_test_[0-9A-Za-z]{48}$`).MatchString(k1) || k1 == k2 || string(h1) != string(sum[:]) {
		t.Fatalf("keys %q %q, hash %x", k1, k2, h1)
	}
}

// Wrap (the simulator's fault injection) covers the API, not the buyer's
// 3-D Secure page.
func TestWrapCoversTheAPIOnly(t *testing.T) {
	var down atomic.Bool
	e := newEnv(t, func(c *cardsim.Config) {
		c.Wrap = func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if down.Load() {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"error":{"message":"simulated outage","type":"api_error"}}`)
					return
				}
				next.ServeHTTP(w, r)
			})
		}
	})
	ch, err := e.proc.Charge(context.Background(), chargeReq(newKey(), "pm_card_threeDSecure2Required", 1990))
	if err != nil || ch.Status != card.StatusRequiresAction {
		t.Fatalf("charge %+v %v", ch, err)
	}
	down.Store(true)
	if status, _, v := e.api("GET", "/v1/payment_intents/"+ch.ID, e.key, nil); status != 503 || errorOf(v)["message"] != "simulated outage" {
		t.Fatalf("API while down: %d %v", status, v)
	}
	if status, page := get(e, ch.ActionURL); status != 200 || !strings.Contains(page, "Confirmar compra") {
		t.Fatalf("3-D Secure page while the API is down: %d", status)
	}
}
