package checkout_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Idempotency keys are kept by the statement that writes a request's
// outcome (idempotency.go): these tests drive the keyed operations through
// the connect API and read the keys' table.

func idemOf(op, key string, body []byte) *checkoutv1.Idempotency {
	sum := sha256.Sum256(append([]byte(op+"\n"), body...))
	return &checkoutv1.Idempotency{Scope: "mcp " + profileURL + " " + op, Key: key, RequestHash: sum[:]}
}

func (e *env) keyedComplete(id, key string, inst map[string]any) (*checkoutv1.CheckoutResult, error) {
	body, _ := json.Marshal(map[string]any{"payment": map[string]any{"instruments": []any{inst}}})
	r, err := e.r.Clients.Checkout.CompleteCheckout(e.ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{
		Agent: e.agent(), Id: id, CheckoutJson: body, Idempotency: idemOf("complete_checkout", key, body)}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetResult(), nil
}

// keyRow is a key's state as stored ("" when there is none).
func (e *env) keyRow(key string) string {
	e.t.Helper()
	if e.sql(`SELECT count(*) FROM checkout.idempotency_keys WHERE tenant_id = $1 AND key = $2`, e.m.TenantID, key) == 0 {
		return ""
	}
	return e.str(`SELECT state FROM checkout.idempotency_keys WHERE tenant_id = $1 AND key = $2`, e.m.TenantID, key)
}

func wantCode(t *testing.T, err error, code connect.Code, appCode string) {
	t.Helper()
	if connect.CodeOf(err) != code || apperr.As(err).Code != appCode {
		t.Fatalf("got %v (%s), want %v %s", err, apperr.As(err).Code, code, appCode)
	}
}

// A keyed completion: its key is claimed with the payment and answered
// with the settle (no commit of its own); the same request again gets the
// same answer without a second charge; another request under the key is
// refused; the key is the tenant's own.
func TestKeyedCompletion(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	token := tok("4242")
	first, err := e.keyedComplete(c.ID, "k-complete", card(token))
	if err != nil {
		t.Fatal(err)
	}
	done := decode(t, first)
	if done.Status != bcp.StatusCompleted || done.Order == nil {
		t.Fatalf("first complete: %s %+v", done.Status, done.Messages)
	}
	if got := e.keyRow("k-complete"); got != "answered" {
		t.Errorf("key after the completion: %q, want answered (by the completed checkout)", got)
	}
	// The answer of a completed checkout is the session itself (migration
	// 00053): the key names it instead of keeping a copy of its state.
	stored := e.str(`SELECT coalesce(encode(k.response, 'hex'), '') || '|' || coalesce(k.answer_checkout, '') FROM checkout.idempotency_keys k
		WHERE tenant_id = $1 AND key = 'k-complete'`, e.m.TenantID)
	if stored != "|"+c.ID {
		t.Fatalf("stored answer %q, want no copy and the checkout %s", stored, c.ID)
	}
	again, err := e.keyedComplete(c.ID, "k-complete", card(token))
	if err != nil {
		t.Fatal(err)
	}
	if string(again.GetCheckoutJson()) != string(first.GetCheckoutJson()) || again.GetStatus() != bcp.StatusCompleted {
		t.Errorf("the repeat answered\n%s\nnot the first answer\n%s", again.GetCheckoutJson(), first.GetCheckoutJson())
	}
	if n := e.charges(c.ID); n != 1 {
		t.Errorf("%d charges, want 1", n)
	}
	_, err = e.keyedComplete(c.ID, "k-complete", card(tok("4242")))
	wantCode(t, err, connect.CodeAlreadyExists, "idempotency_conflict")
	if n := e.sql(`SELECT count(*) FROM checkout.idempotency_keys WHERE tenant_id = $1`, e.m.TenantID); n != 1 {
		t.Errorf("%d keys, want 1", n)
	}

	// Another tenant's k-complete is its own: it executes (and is refused
	// as not found there, which stores nothing).
	other := tenancy.With(context.Background(), uuid.New())
	body, _ := json.Marshal(map[string]any{"payment": map[string]any{"instruments": []any{card(token)}}})
	_, err = e.r.Clients.Checkout.CompleteCheckout(other, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{
		Agent: e.agent(), Id: c.ID, CheckoutJson: body, Idempotency: idemOf("complete_checkout", "k-complete", body)}))
	wantCode(t, err, connect.CodeNotFound, bcp.CodeNotFound)
}

// A repeat that fails because of what the first request did is answered
// from the key: a canceled cart is not found, but the repeated cancel gets
// the first cancel's answer.
func TestKeyedRepeatOfARemovingRequest(t *testing.T) {
	e := newEnv(t)
	ag := e.cartAgent()
	id := e.mustCart(map[string]any{"line_items": shirts(1)})
	cancel := func(key string) (*checkoutv1.CartResult, error) {
		r, err := e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: ag, Id: id,
			Idempotency: idemOf("cancel_cart", key, []byte(id))}))
		if err != nil {
			return nil, err
		}
		return r.Msg.GetResult(), nil
	}
	first, err := cancel("k-cancel")
	if err != nil {
		t.Fatal(err)
	}
	again, err := cancel("k-cancel")
	if err != nil {
		t.Fatalf("repeated cancel: %v, want the first answer", err)
	}
	if string(again.GetCartJson()) != string(first.GetCartJson()) {
		t.Errorf("repeat answered %s, want %s", again.GetCartJson(), first.GetCartJson())
	}
	// A new key for the same cancel: the cart is gone.
	_, err = cancel("k-other")
	wantCode(t, err, connect.CodeNotFound, bcp.CodeNotFound)
}

// A keyed create and update: one checkout per key, and the update's
// stored answer is replayed even after the checkout changed again.
func TestKeyedCreateAndUpdate(t *testing.T) {
	e := newEnv(t)
	body := jsonBody(map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "ana@example.com"}})
	create := func() *checkoutv1.CheckoutResult {
		t.Helper()
		r, err := e.r.Clients.Checkout.CreateCheckout(e.ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: e.agent(), CheckoutJson: body,
			Idempotency: idemOf("create_checkout", "k-create", body)}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetResult()
	}
	a, b := create(), create()
	if decode(t, a).ID != decode(t, b).ID || string(a.GetCheckoutJson()) != string(b.GetCheckoutJson()) {
		t.Errorf("two creates under one key: %s and %s", decode(t, a).ID, decode(t, b).ID)
	}
	if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE tenant_id = $1`, e.m.TenantID); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
	id := decode(t, a).ID
	upd := func(key string, n int) (*checkoutv1.CheckoutResult, error) {
		body := jsonBody(map[string]any{"line_items": shirts(n), "buyer": map[string]any{"email": "ana@example.com"}})
		r, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: id, CheckoutJson: body,
			Idempotency: idemOf("update_checkout", key, body)}))
		if err != nil {
			return nil, err
		}
		return r.Msg.GetResult(), nil
	}
	two, err := upd("k-two", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := upd("k-three", 3); err != nil {
		t.Fatal(err)
	}
	v := e.version(id)
	replayed, err := upd("k-two", 2)
	if err != nil {
		t.Fatal(err)
	}
	if string(replayed.GetCheckoutJson()) != string(two.GetCheckoutJson()) || total(decode(t, replayed)) != 2*5990 {
		t.Errorf("the repeated update answered %d, want the first answer (%d)", total(decode(t, replayed)), 2*5990)
	}
	if e.version(id) != v || total(e.get(id)) != 3*5990 {
		t.Errorf("the repeat wrote: version %d → %d, total %d", v, e.version(id), total(e.get(id)))
	}
	_, err = upd("k-two", 4)
	wantCode(t, err, connect.CodeAlreadyExists, "idempotency_conflict")
	if total(e.get(id)) != 3*5990 {
		t.Errorf("a conflicting request wrote: total %d", total(e.get(id)))
	}
}

// The key and the outcome are one statement: when the key cannot be
// stored, the update it belongs to is not written either.
func TestKeyAndOutcomeAreOneWrite(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	v := e.version(c.ID)
	restore := e.refuse("checkout.idempotency_keys", "INSERT", is("NEW.key", "k-refused"))
	body := jsonBody(e.readyBody(c, 3))
	_, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: body,
		Idempotency: idemOf("update_checkout", "k-refused", body)}))
	restore()
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("update with a refused key: %v, want internal", err)
	}
	if e.version(c.ID) != v || total(e.get(c.ID)) != 13480 {
		t.Errorf("the update was written without its key: version %d → %d", v, e.version(c.ID))
	}
	if got := e.keyRow("k-refused"); got != "" {
		t.Errorf("key %q stored", got)
	}
	// The same request once the storage answers: executed, key and update.
	r, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: body,
		Idempotency: idemOf("update_checkout", "k-refused", body)}))
	if err != nil {
		t.Fatal(err)
	}
	if e.version(c.ID) != v+1 || e.keyRow("k-refused") != "done" || total(decode(t, r.Msg.GetResult())) != 3*5990+1500 {
		t.Errorf("retry: version %d, key %q, total %d", e.version(c.ID), e.keyRow("k-refused"), total(decode(t, r.Msg.GetResult())))
	}
}

// Concurrent completions under one key: one payment, and every answer is
// the completion's or request_in_flight (the edge waits those out).
func TestConcurrentKeyedCompletions(t *testing.T) {
	e := newEnv(t)
	for round := 0; round < 3; round++ {
		c := e.ready()
		token := tok("4242")
		const n = 6
		var wg sync.WaitGroup
		results := make([]*checkoutv1.CheckoutResult, n)
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i], errs[i] = e.keyedComplete(c.ID, "k-race-"+c.ID, card(token))
			}()
		}
		close(start)
		wg.Wait()
		var answers []string
		for i := range n {
			switch {
			case errs[i] == nil:
				answers = append(answers, string(results[i].GetCheckoutJson()))
			case apperr.As(errs[i]).Code != "request_in_flight":
				t.Errorf("round %d: %v", round, errs[i])
			}
		}
		if e.charges(c.ID) != 1 || e.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, c.ID) != 1 {
			t.Errorf("round %d: %d charges", round, e.charges(c.ID))
		}
		final, err := e.keyedComplete(c.ID, "k-race-"+c.ID, card(token))
		if err != nil {
			t.Fatalf("round %d: after the race: %v", round, err)
		}
		if decode(t, final).Status != bcp.StatusCompleted {
			t.Errorf("round %d: %s", round, decode(t, final).Status)
		}
		for _, a := range answers {
			if a != string(final.GetCheckoutJson()) {
				t.Errorf("round %d: an answer differs from the stored one:\n%s\n%s", round, a, final.GetCheckoutJson())
			}
		}
	}
}

// A key left in flight by a request whose process died: a repeat within
// the 2-minute lease is told to wait; after it, the repeat takes the key
// over and executes; another request under the key is refused either way.
func TestAbandonedKeyIsTakenOver(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	token := tok("4242")
	body, _ := json.Marshal(map[string]any{"payment": map[string]any{"instruments": []any{card(token)}}})
	idem := idemOf("complete_checkout", "k-dead", body)
	e.exec(`INSERT INTO checkout.idempotency_keys (tenant_id, scope, key, request_hash, state, claim_token, created_at, expires_at)
		VALUES ($1, $2, 'k-dead', $3, 'in_flight', 'idk_dead', now() - interval '90 seconds', now() + interval '2 days')`, e.m.TenantID, idem.GetScope(), idem.GetRequestHash())
	_, err := e.keyedComplete(c.ID, "k-dead", card(token))
	wantCode(t, err, connect.CodeAborted, "request_in_flight")
	if e.charges(c.ID) != 0 {
		t.Fatal("charged while the key was held")
	}
	e.exec(`UPDATE checkout.idempotency_keys SET created_at = now() - interval '3 minutes' WHERE tenant_id = $1 AND key = 'k-dead'`, e.m.TenantID)
	_, err = e.keyedComplete(c.ID, "k-dead", card(tok("4242")))
	wantCode(t, err, connect.CodeAlreadyExists, "idempotency_conflict")
	r, err := e.keyedComplete(c.ID, "k-dead", card(token))
	if err != nil {
		t.Fatal(err)
	}
	if decode(t, r).Status != bcp.StatusCompleted || e.charges(c.ID) != 1 || e.keyRow("k-dead") != "answered" {
		t.Errorf("after the lease: %s, %d charges, key %q", decode(t, r).Status, e.charges(c.ID), e.keyRow("k-dead"))
	}
}

// Keys the edge could never send are refused with the field at fault.
func TestKeyArguments(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	good := idemOf("cancel_checkout", "k", nil)
	for _, tc := range []struct {
		idem        *checkoutv1.Idempotency
		code, field string
	}{
		{&checkoutv1.Idempotency{Key: "k", RequestHash: good.RequestHash}, "invalid_scope", "idempotency.scope"},
		{&checkoutv1.Idempotency{Scope: strings.Repeat("s", 2301), Key: "k", RequestHash: good.RequestHash}, "invalid_scope", "idempotency.scope"},
		{&checkoutv1.Idempotency{Scope: good.Scope, RequestHash: good.RequestHash}, "invalid_idempotency_key", "idempotency.key"},
		{&checkoutv1.Idempotency{Scope: good.Scope, Key: strings.Repeat("k", 256), RequestHash: good.RequestHash}, "invalid_idempotency_key", "idempotency.key"},
		{&checkoutv1.Idempotency{Scope: good.Scope, Key: "k", RequestHash: good.RequestHash[:31]}, "invalid_hash", "idempotency.request_hash"},
	} {
		_, err := e.r.Clients.Checkout.CancelCheckout(e.ctx, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Agent: e.agent(), Id: c.ID, Idempotency: tc.idem}))
		wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
	}
	if e.get(c.ID).Status != bcp.StatusReadyForComplete {
		t.Error("a refused cancel canceled")
	}
	if _, err := e.r.Clients.Checkout.CancelCheckout(e.ctx, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Agent: e.agent(), Id: c.ID,
		Idempotency: &checkoutv1.Idempotency{Scope: good.Scope, Key: strings.Repeat("k", 255), RequestHash: good.RequestHash}})); err != nil {
		t.Errorf("a 255-character key: %v", err)
	}
}

// Expired keys are cleared by the tenant's own keyed requests (every
// hundredth, beside it), and only the expired ones.
func TestExpiredKeysAreCleared(t *testing.T) {
	e := newEnv(t)
	idem := idemOf("complete_checkout", "k-old", []byte("{}"))
	for _, k := range []struct{ key, expires string }{{"k-old", "now() - interval '1 minute'"}, {"k-live", "now() + interval '1 day'"}} {
		e.exec(`INSERT INTO checkout.idempotency_keys (tenant_id, scope, key, request_hash, state, response, claim_token, created_at, expires_at)
			VALUES ($1, $2, $3, $4, 'done', '\x00', 'idk_x', now() - interval '3 days', `+k.expires+`)`, e.m.TenantID, idem.GetScope(), k.key, idem.GetRequestHash())
	}
	for i := range 100 {
		_, err := e.keyedComplete("chk_nope", fmt.Sprintf("k-%d", i), card(tok("4242")))
		wantCode(t, err, connect.CodeNotFound, bcp.CodeNotFound)
	}
	e.eventually("the expired key is cleared", func() bool { return e.keyRow("k-old") == "" })
	if got := e.keyRow("k-live"); got != "done" {
		t.Errorf("the live key: %q, want done", got)
	}
}
