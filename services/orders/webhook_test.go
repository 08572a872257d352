package orders_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/httpsig"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/orders"
)

// waitFor bounds waits for background delivery (never a speed assertion).
const waitFor = 30 * time.Second

// merchantKeys is the merchant's published signing keys, as
// /.well-known/bcp serves them (signing_keys).
func (e *env) merchantKeys(tn *tenantsv1.Tenant) *httpsig.KeySet {
	e.t.Helper()
	r, err := e.tenants.GetDiscovery(context.Background(), connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tn.GetId()}))
	if err != nil {
		e.t.Fatal(err)
	}
	var jwks []httpsig.JWK
	for _, raw := range r.Msg.GetSigningKeysJson() {
		j, err := httpsig.ParseJWK([]byte(raw))
		if err != nil {
			e.t.Fatal(err)
		}
		jwks = append(jwks, j)
	}
	ks, err := httpsig.NewKeySet(jwks)
	if err != nil {
		e.t.Fatal(err)
	}
	return ks
}

// A receiver that fails three times gets the message on the fourth try,
// with the same Webhook-Id, the full order and a signature that verifies
// with the merchant's published key.
func TestWebhookRetriedUntilDelivered(t *testing.T) {
	e := start(t)
	ctx, tn := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	rc := newReceiver(t, 3)
	created := e.create(ctx, "chk_1", rc.url())
	eventually(t, waitFor, "four delivery attempts", func() bool { return len(rc.got()) >= 4 })
	time.Sleep(300 * time.Millisecond) // a fifth attempt would come within the backoff
	got := rc.got()
	if len(got) != 4 {
		t.Fatalf("%d attempts, want 4 (3 failures, then delivered)", len(got))
	}

	verifier := &httpsig.Verifier{
		Keys: e.merchantKeys(tn).Resolve, Algorithms: []httpsig.Algorithm{httpsig.ES256}, RejectAlgParameter: true,
		Requirements: append(httpsig.RequestRequirements("bcp-agent"), httpsig.Require("webhook-id", "webhook-timestamp")),
	}
	webhookID := got[0].req.Header.Get("Webhook-Id")
	if _, err := uuid.Parse(webhookID); err != nil {
		t.Fatalf("Webhook-Id %q is not a uuid", webhookID)
	}
	wantAgent := `profile="https://loja.example.com.br/.well-known/bcp"`
	for i, g := range got {
		h := g.req.Header
		if g.req.Method != "POST" || g.req.URL.Path != "/webhooks/bcp/pedidos" || h.Get("Content-Type") != "application/json" ||
			h.Get("Webhook-Id") != webhookID || h.Get("BCP-Agent") != wantAgent {
			t.Fatalf("attempt %d: %s %s %v", i+1, g.req.Method, g.req.URL, h)
		}
		ts, err := strconv.ParseInt(h.Get("Webhook-Timestamp"), 10, 64)
		if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
			t.Fatalf("attempt %d: Webhook-Timestamp %q", i+1, h.Get("Webhook-Timestamp"))
		}
		if h.Get("Content-Digest") != httpsig.ContentDigest(g.body) {
			t.Fatalf("attempt %d: Content-Digest %q", i+1, h.Get("Content-Digest"))
		}
		res, err := verifier.VerifyRequest(context.Background(), g.req, g.body)
		if err != nil {
			t.Fatalf("attempt %d: signature: %v\nSignature-Input: %s", i+1, err, h.Get("Signature-Input"))
		}
		wantComps := []string{`"@method"`, `"@authority"`, `"@path"`, `"content-digest"`, `"content-type"`, `"bcp-agent"`, `"webhook-id"`, `"webhook-timestamp"`}
		if !slices.Equal(res.Components, wantComps) && !slices.Equal(res.Components, unquote(wantComps)) {
			t.Fatalf("attempt %d: covered %v", i+1, res.Components)
		}
		if res.KeyID == "" || !strings.Contains(h.Get("Signature-Input"), `keyid="`+res.KeyID+`"`) {
			t.Fatalf("attempt %d: keyid %q in %s", i+1, res.KeyID, h.Get("Signature-Input"))
		}
		// The body is the full order, with the order capability's envelope.
		validateOrderDoc(t, g.body)
		var body struct {
			UCP struct {
				Version      string                       `json:"version"`
				Capabilities map[string][]json.RawMessage `json:"capabilities"`
			} `json:"ucp"`
		}
		_ = json.Unmarshal(g.body, &body)
		if body.UCP.Version != "2026-07-28" || len(body.UCP.Capabilities["br.dev.bcp.shopping.order"]) != 1 {
			t.Fatalf("attempt %d: ucp %+v", i+1, body.UCP)
		}
		o := decode(t, g.body)
		if o.ID != created.GetOrderId() || o.CheckoutID != "chk_1" || len(o.LineItems) != 2 || len(o.Fulfillment.Expectations) != 1 || len(o.Totals) != 4 {
			t.Fatalf("attempt %d: not the full order: %s", i+1, g.body)
		}
	}
	// The bad key is not accepted: a receiver that trusts another merchant's
	// key rejects the message.
	_, other := e.tenant("Loja B", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	wrong := &httpsig.Verifier{Keys: e.merchantKeys(other).Resolve}
	if _, err := wrong.VerifyRequest(context.Background(), got[3].req, got[3].body); err == nil {
		t.Fatal("verified with another merchant's keys")
	}

	eventually(t, waitFor, "the delivery recorded", func() bool {
		d := e.deliveries(ctx, created.GetOrderId())
		return len(d) == 1 && d[0].GetDeliveredTimeUnix() != 0
	})
	d := e.deliveries(ctx, created.GetOrderId())[0]
	if d.GetId() != webhookID || d.GetAttempts() != 4 || d.GetLastStatus() != 200 || d.GetLastError() != "" || d.GetOrderVersion() != 1 {
		t.Fatalf("delivery record %+v", d)
	}

	// A change is a new message (new Webhook-Id) carrying the new state.
	if _, err := e.client.AddFulfillmentEvent(ctx, connect.NewRequest(&ordersv1.AddFulfillmentEventRequest{
		OrderId: created.GetOrderId(), Type: bcp.EventShipped, TrackingNumber: "BR1", TrackingUrl: "https://rastreio.example/BR1",
	})); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "the shipped webhook", func() bool { return len(rc.got()) == 5 })
	last := rc.got()[4]
	if last.req.Header.Get("Webhook-Id") == webhookID {
		t.Fatal("a new message reused the Webhook-Id")
	}
	if _, err := verifier.VerifyRequest(context.Background(), last.req, last.body); err != nil {
		t.Fatal(err)
	}
	validateOrderDoc(t, last.body)
	if o := decode(t, last.body); o.LineItems[0].Status != bcp.LineFulfilled || len(o.Fulfillment.Events) != 1 {
		t.Fatalf("shipped webhook body: %s", last.body)
	}
}

func unquote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.Trim(s, `"`)
	}
	return out
}

// Webhook-Timestamp is the event's time (UCP), the same on every retry of
// one message; retries more than a second apart would show a re-stamp.
func TestWebhookTimestampKeptAcrossRetries(t *testing.T) {
	e := startWithBackoff(t, 1100*time.Millisecond)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	rc := newReceiver(t, 2)
	before := time.Now().Add(-time.Second).Truncate(time.Second)
	e.create(ctx, "chk_ts", rc.url())
	after := time.Now()
	eventually(t, waitFor, "three delivery attempts", func() bool { return len(rc.got()) >= 3 })
	got := rc.got()
	first := got[0].req.Header.Get("Webhook-Timestamp")
	ts, err := strconv.ParseInt(first, 10, 64)
	if err != nil || time.Unix(ts, 0).Before(before) || time.Unix(ts, 0).After(after) {
		t.Fatalf("Webhook-Timestamp %q is not the order's creation time (between %s and %s)", first, before, after)
	}
	for i, g := range got[1:3] {
		if h := g.req.Header.Get("Webhook-Timestamp"); h != first {
			t.Fatalf("attempt %d: Webhook-Timestamp %s, first attempt sent %s", i+2, h, first)
		}
	}
}

func TestNoWebhookWithoutURL(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	id := e.create(ctx, "chk_1", "").GetOrderId()
	if _, err := e.client.AddFulfillmentEvent(ctx, connect.NewRequest(&ordersv1.AddFulfillmentEventRequest{OrderId: id, Type: bcp.EventShipped})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 100})); err != nil {
		t.Fatal(err)
	}
	if d := e.deliveries(ctx, id); len(d) != 0 {
		t.Fatalf("deliveries without a webhook URL: %+v", d)
	}
	if n := e.superCount(`SELECT count(*) FROM river.river_job WHERE kind = 'order_webhook'`); n != 0 {
		t.Fatalf("%d webhook jobs without a webhook URL", n)
	}
}

// Production tenants deliver only over https and never to special-use
// addresses; such a message is abandoned at once, recorded, not retried.
func TestWebhookURLRulesOutsideDevelopment(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	rc := newReceiver(t, 0)
	for _, c := range []struct{ checkout, url, want string }{
		{"chk_http", rc.url(), "must use https"},
		{"chk_loop", strings.Replace(rc.url(), "http://", "https://", 1), "special-use address"},
		{"chk_meta", "https://169.254.169.254/latest/meta-data", "special-use address"},
	} {
		id := e.create(ctx, c.checkout, c.url).GetOrderId()
		eventually(t, waitFor, c.checkout+" attempt recorded", func() bool {
			d := e.deliveries(ctx, id)
			return len(d) == 1 && d[0].GetAttempts() == 1
		})
		d := e.deliveries(ctx, id)[0]
		if !strings.Contains(d.GetLastError(), c.want) || d.GetDeliveredTimeUnix() != 0 {
			t.Fatalf("%s: %+v", c.checkout, d)
		}
		eventually(t, waitFor, c.checkout+" job canceled", func() bool {
			return e.superCount(`SELECT count(*) FROM river.river_job WHERE kind = 'order_webhook' AND state = 'cancelled' AND args->>'order_id' = $1`, id) == 1
		})
	}
	if len(rc.got()) != 0 {
		t.Fatal("a production tenant's webhook reached a loopback receiver")
	}
}

// A host name that resolves to loopback is refused at dial time for a
// production tenant (DNS rebinding cannot get around the URL check).
func TestWebhookDialGuardRefusesPrivateResolution(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	rc := newReceiver(t, 0)
	port := rc.srv.URL[strings.LastIndex(rc.srv.URL, ":"):]
	id := e.create(ctx, "chk_dns", "https://localhost"+port+"/hook").GetOrderId()
	eventually(t, waitFor, "an attempt recorded", func() bool {
		d := e.deliveries(ctx, id)
		return len(d) == 1 && d[0].GetAttempts() >= 1
	})
	d := e.deliveries(ctx, id)[0]
	if !strings.Contains(d.GetLastError(), "special-use address") || d.GetDeliveredTimeUnix() != 0 {
		t.Fatalf("delivery %+v", d)
	}
	if len(rc.got()) != 0 {
		t.Fatal("reached a loopback receiver")
	}
}

func TestDefaultWebhookBackoffGrowsToSixHours(t *testing.T) {
	prev := time.Duration(0)
	var total time.Duration
	for n := 1; n < orders.WebhookMaxAttempts; n++ {
		d := orders.DefaultWebhookBackoff(n)
		base := min(6*time.Hour, 10*time.Second<<min(n-1, 12))
		if d < base || d > base+base/10 || d+time.Hour < prev {
			t.Fatalf("retry %d waits %s (base %s, previous %s)", n, d, base, prev)
		}
		prev, total = d, total+d
	}
	if total < 72*time.Hour || total > 96*time.Hour {
		t.Fatalf("all retries span %s, want three to four days", total)
	}
}

// A delivery whose attempt cannot be recorded at once (the database
// refuses the write for a few seconds right after the receiver took the
// message) is still recorded as delivered in the end, not left
// "undelivered" with no attempt and no job. Found by cmd/bcpchaos: a
// PostgreSQL restart between the POST and the write.
func TestDeliveryRecordedAfterADatabaseHiccup(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	super, err := pgx.Connect(context.Background(), e.db.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = super.Close(context.Background()) })
	var once sync.Once
	restored := make(chan struct{})
	rc := newReceiver(t, 0)
	rc.onReceive = func() {
		once.Do(func() {
			// While the receiver answers 200, take away the write the
			// service records the attempt with; give it back 3 s later.
			if _, err := super.Exec(context.Background(), `REVOKE UPDATE ON orders.webhook_deliveries FROM bcp_app`); err != nil {
				t.Error(err)
			}
			go func() {
				defer close(restored)
				time.Sleep(3 * time.Second)
				if _, err := super.Exec(context.Background(), `GRANT UPDATE ON orders.webhook_deliveries TO bcp_app`); err != nil {
					t.Error(err)
				}
			}()
		})
	}
	created := e.create(ctx, "chk_hiccup", rc.url())
	<-restored
	eventually(t, waitFor, "the delivery recorded as delivered", func() bool {
		d := e.deliveries(ctx, created.GetOrderId())
		return len(d) == 1 && d[0].GetDeliveredTimeUnix() > 0
	})
	if d := e.deliveries(ctx, created.GetOrderId()); d[0].GetAttempts() < 1 || d[0].GetLastStatus() != 200 {
		t.Fatalf("delivery recorded as %d attempts, last status %d", d[0].GetAttempts(), d[0].GetLastStatus())
	}
	if got := rc.got(); len(got) < 1 || got[0].req.Header.Get("Webhook-Id") != got[len(got)-1].req.Header.Get("Webhook-Id") {
		t.Fatalf("%d messages, all with one Webhook-Id expected", len(got))
	}
}
