package stripecard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
)

// sent is what a server saw of one request.
type sent struct {
	Method, Path, Proto string
	Header              http.Header
	ContentLength       int64
	TransferEncoding    []string
	Body                string
}

// TestPosterIsStripeGos: a Charge's POST through poster is what stripe-go's
// backend sends for it (CallRaw, as Charge sent it before): the same
// method, path, headers, length and body, and the same answers back: the
// decoded object and its LastResponse, stripe-go's *stripe.Error for a
// refusal, its words for an answer that is not JSON, the client's error
// when there is no answer.
func TestPosterIsStripeGos(t *testing.T) {
	var (
		mu     sync.Mutex
		got    []sent
		status int
		answer string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, sent{r.Method, r.URL.Path, r.Proto, r.Header, r.ContentLength, r.TransferEncoding, string(b)})
		st, a := status, answer
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_1Fake")
		w.Header().Set("Idempotency-Key", r.Header.Get("Idempotency-Key"))
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(st)
		fmt.Fprint(w, a)
	}))
	defer srv.Close()
	p, err := New(Config{SecretKey: "sk_test_fakeStripeKey", BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const key = "pay_06bz8x7d3y2k4m5n6p7q8r9s0t"
	body := chargeForm(12345, "brl", "pm_1PqRsT", "https://loja.example/checkout/chk_1", key, "chk_1")
	both := func() (mine, theirs intentReply, errMine, errTheirs error) {
		mu.Lock()
		got = nil
		mu.Unlock()
		errMine = p.charge.post(ctx, p.charge.intents, key, body, &mine)
		errTheirs = p.charge.be.CallRaw(http.MethodPost, "/v1/payment_intents", p.key, body,
			&stripe.Params{Context: ctx, IdempotencyKey: stripe.String(key)}, &theirs)
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("%d requests, want 2", len(got))
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("poster sent\n%+v\nstripe-go sent\n%+v", got[0], got[1])
		}
		if g := got[0]; g.ContentLength != int64(len(body)) || g.Body != string(body) || g.Header.Get("Idempotency-Key") != key {
			t.Errorf("sent %+v", g)
		}
		return mine, theirs, errMine, errTheirs
	}
	sameResponse := func(a, b *stripe.APIResponse) {
		t.Helper()
		if a == nil || b == nil {
			t.Fatalf("LastResponse %v %v", a, b)
		}
		// The exported fields (stripe-go's unexported duration is for
		// its telemetry, which is off).
		a.Header.Del("Date")
		b.Header.Del("Date")
		if !reflect.DeepEqual(a.Header, b.Header) || a.IdempotencyKey != b.IdempotencyKey || string(a.RawJSON) != string(b.RawJSON) ||
			a.RequestID != b.RequestID || a.Status != b.Status || a.StatusCode != b.StatusCode || a.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("LastResponse\n%+v\n%+v", a, b)
		}
	}

	status, answer = http.StatusOK, `{"id":"pi_1Fake","object":"payment_intent","amount":12345,"created":1767225600,"status":"requires_action",`+
		`"metadata":{"bcp_attempt_id":"`+key+`"},"next_action":{"type":"redirect_to_url","redirect_to_url":{"url":"https://hooks.example/3ds"}},"last_payment_error":null}`
	mine, theirs, e1, e2 := both()
	if e1 != nil || e2 != nil {
		t.Fatalf("errors %v %v", e1, e2)
	}
	sameResponse(mine.LastResponse, theirs.LastResponse)
	mine.APIResource, theirs.APIResource = stripe.APIResource{}, stripe.APIResource{}
	if !reflect.DeepEqual(mine, theirs) || mine.NextAction == nil || mine.Status != "requires_action" {
		t.Errorf("decoded\n%+v\n%+v", mine, theirs)
	}

	status, answer = http.StatusPaymentRequired, `{"error":{"code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds.",`+
		`"type":"card_error","payment_intent":{"id":"pi_1Fake","object":"payment_intent","amount":12345,"status":"requires_payment_method"}}}`
	_, _, e1, e2 = both()
	se1, ok1 := e1.(*stripe.Error)
	se2, ok2 := e2.(*stripe.Error)
	if !ok1 || !ok2 {
		t.Fatalf("errors %T %T", e1, e2)
	}
	sameResponse(se1.LastResponse, se2.LastResponse)
	if e1.Error() != e2.Error() || se1.HTTPStatusCode != 402 || se1.RequestID != "req_1Fake" || se1.DeclineCode != se2.DeclineCode ||
		se1.PaymentIntent == nil || se1.PaymentIntent.ID != se2.PaymentIntent.ID || reflect.TypeOf(se1.Err) != reflect.TypeOf(se2.Err) {
		t.Errorf("errors\n%+v\n%+v", se1, se2)
	}

	status, answer = http.StatusOK, "<html>\nnot JSON</html>"
	_, _, e1, e2 = both()
	if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
		t.Errorf("errors\n%v\n%v", e1, e2)
	}

	srv.Close()
	var r1, r2 intentReply
	e1 = p.charge.post(ctx, p.charge.intents, key, body, &r1)
	e2 = p.charge.be.CallRaw(http.MethodPost, "/v1/payment_intents", p.key, body, &stripe.Params{Context: ctx, IdempotencyKey: stripe.String(key)}, &r2)
	if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
		t.Errorf("errors without a server\n%v\n%v", e1, e2)
	}
}
