package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
	"github.com/bcpdev/bcp/services/edge"
)

// Several processes per role, as make ha and bcpchaos --ha run them: two
// edges, each calling its own checkout process (each also hosting
// orders), in front of one process for the registry, catalog, pricing and
// payments; both edges advertise the second edge's port, as edges behind
// one load balancer advertise its. Everything shared lives in PostgreSQL,
// so the platform behaves as one process would:
//
//   - idempotency: one complete_checkout key sent twenty times at once,
//     half through each edge (so through both checkout processes), gives
//     twenty identical answers, one order and one charge; the key with
//     another body is refused at either edge;
//   - the Pix webhook: a Pix started through edge 1 is confirmed by the
//     PSP simulator's webhook (a process of its own, posting over mTLS)
//     at edge 2's webhook listener, and the checkout completes once, by one
//     clean checkout_settle job whichever checkout process took it;
//   - order webhooks: each order's is delivered (its receiver failing
//     twice first), by whichever orders process;
//   - sweeps: a due checkout is expired, and each sweep is inserted once
//     a period (by river's leader) though three processes register it;
//   - remembered sessions: a checkout updated and completed through the
//     two checkout processes in turn ends as its last update said, charged
//     once for that total, each process rereading its stale copy once.
//
// The shared rate-limit buckets have their own test with two edges
// (TestRateLimitAcrossEdges).
func TestTwoEdgesTwoCheckoutProcesses(t *testing.T) {
	d := testdb.New(t)
	base, co1, co2 := freeAddr(t), freeAddr(t), freeAddr(t)
	pub1, pub2 := freeAddr(t), freeAddr(t)
	hooks1, hooks2 := freeAddr(t), freeAddr(t)
	_, lbPort, _ := net.SplitHostPort(pub2)
	_, hookPort, _ := net.SplitHostPort(hooks2)
	// The PSP simulator, the outside world, in a process of its own.
	sim := startPSPSim(t, d.AppURL)
	url := func(a string) string { return "http://" + a }
	services := func(checkout string) map[string]string {
		return map[string]string{platform.Tenants: url(base), platform.Catalog: url(base), platform.Pricing: url(base), platform.Payments: url(base),
			platform.Checkout: url(checkout), platform.Orders: url(checkout), platform.PSPSim: sim.PSPSim.ControlURL()}
	}
	start := func(roles []string, internal, public, webhooks, checkout string) *platform.Running {
		dbURL := d.AppURL
		if public != "" {
			dbURL = ""
		}
		return startPlatformWith(t, roles, dbURL, services(checkout), func(c *platform.Config) {
			c.InternalAddr = internal
			if public != "" {
				c.PublicAddr = public
			}
			// Each edge has a TLS webhook listener; the payments process
			// registers the second edge's port with the PSP, as a load
			// balancer's would be.
			c.WebhookAddr, c.WebhookPort = webhooks, hookPort
			c.Edge = edge.Config{PublicScheme: "http", PublicPort: lbPort}
		})
	}
	registry := start([]string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Payments}, base, "", "", co1)
	cp1 := start([]string{platform.Checkout, platform.Orders}, co1, "", "", co1)
	cp2 := start([]string{platform.Checkout, platform.Orders}, co2, "", "", co2)
	edge1 := start([]string{platform.Edge}, freeAddr(t), pub1, hooks1, co1)
	edge2 := start([]string{platform.Edge}, freeAddr(t), pub2, hooks2, co2)

	hooks, profile := orderAgent(t, 2)
	const host = "duasfilas.localhost"
	m := setupMerchant(t, registry, "Loja Duas Filas", host, 0)
	if _, err := registry.ClientsWithToken(operatorToken).Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: host,
		Handler: &tenantsv1.PaymentHandler{Id: "card", Name: "com.example.vendor.delegate_payment", Position: 1,
			AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`}})); err != nil {
		t.Fatal(err)
	}
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	s := &shopper{t: t, r: edge1, db: d, v: v, profile: profile, hooks: hooks, merchant: map[string]merchant{host: m}, agents: map[string]*agent{}}
	s.agents[host] = &agent{t: t, s: agentSession(t, edge1, host, profile), profile: profile, v: v}
	other := &agent{t: t, s: agentSession(t, edge2, host, profile), profile: profile, v: v}

	// Idempotency across edges and checkout processes.
	c := s.ready(host)
	key := uuid.NewString()
	args := completeArgs(c.ID, key, cardInstrument("tok_duas_4242"))
	args["meta"].(map[string]any)["ucp-agent"] = map[string]any{"profile": profile}
	body, _ := json.Marshal(args)
	const n = 20
	results, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a map[string]any
			_ = json.Unmarshal(body, &a)
			via := s.agents[host]
			if i%2 == 1 {
				via = other
			}
			res, err := via.callErr("complete_checkout", a)
			// Told the first request with the key is still running (the
			// edge waits under a second for it): again, after Retry-After.
			for try := 0; err != nil && try < 30; try++ {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || !strings.Contains(string(je.Data), `"request_in_flight"`) {
					break
				}
				time.Sleep(time.Second)
				res, err = via.callErr("complete_checkout", a)
			}
			if err != nil {
				errs[i] = err
				return
			}
			b, _ := json.Marshal(res)
			results[i] = string(b)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("complete %d (edge %d): %v", i, i%2+1, errs[i])
		}
		if results[i] != results[0] {
			t.Fatalf("answer %d (edge %d) differs from answer 0:\n%s\n%s", i, i%2+1, results[i], results[0])
		}
	}
	if !strings.Contains(results[0], `"status":"completed"`) {
		t.Fatalf("answer: %s", results[0])
	}
	if got := s.sql(`SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, c.ID); got != 1 {
		t.Fatalf("%d orders for one key sent %d times over two edges", got, n)
	}
	if got := s.sql(`SELECT count(*) FROM pspsim.card_intents ch JOIN payments.attempts a ON a.id = ch.idempotency_key
		WHERE a.checkout_id = $1`, c.ID); got != 1 {
		t.Fatalf("%d card charges for one key sent %d times over two edges", got, n)
	}
	changed := completeArgs(c.ID, key, cardInstrument("tok_duas_5555"))
	changed["meta"].(map[string]any)["ucp-agent"] = map[string]any{"profile": profile}
	if _, err := other.callErr("complete_checkout", changed); err == nil {
		t.Fatal("the key with another body was accepted at edge 2")
	} else if code, data := rpcError(t, err); code != -32000 || data["code"] != "idempotency_conflict" {
		t.Fatalf("the key with another body at edge 2: %d %v", code, data)
	}

	// The PSP's webhook reaches the other edge (its webhook listener: PSPs
	// post over mTLS, not to the public listener).
	pixWebhooks := func(r *platform.Running) int {
		resp, err := http.Get("http://" + r.InternalAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		sum := 0
		for _, m := range regexp.MustCompile(`(?m)^bcp_http_requests_total\{listener="webhooks",outcome="2xx",route="POST /webhooks/pix/[^"]*"\} (\d+)$`).FindAllSubmatch(b, -1) {
			n, _ := strconv.Atoi(string(m[1]))
			sum += n
		}
		return sum
	}
	c = s.ready(host)
	pix := pixOf(t, s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host)))
	s.pay(host, pix.Pix.AttemptID)
	s.waitStatus(host, c.ID, bcp.StatusCompleted)
	if w1, w2 := pixWebhooks(edge1), pixWebhooks(edge2); w1 != 0 || w2 != 1 {
		t.Fatalf("PSP webhooks accepted: %d at edge 1, %d at edge 2; want 0 and 1", w1, w2)
	}
	eventually(t, 10*time.Second, "one clean checkout_settle job for the paid Pix", func() bool {
		return s.sql(`SELECT count(*) FROM river.river_job WHERE kind = 'checkout_settle' AND args->>'attempt_id' = $1
			AND state = 'completed' AND attempt = 1 AND coalesce(array_length(errors, 1), 0) = 0`, pix.Pix.AttemptID) == 1
	})
	if got := s.sql(`SELECT count(*) FROM river.river_job WHERE kind = 'checkout_settle' AND args->>'attempt_id' = $1`, pix.Pix.AttemptID); got != 1 {
		t.Fatalf("%d checkout_settle jobs for one paid Pix", got)
	}
	if got := s.sql(`SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, c.ID); got != 1 {
		t.Fatalf("%d orders for the Pix checkout", got)
	}

	// Order webhooks: both orders', each delivered once, after the
	// receiver refused the first two deliveries.
	eventually(t, 30*time.Second, "both orders' webhooks delivered", func() bool { return len(hooks.delivered()) == 2 })
	if got := s.sql(`SELECT count(*) FROM orders.webhook_deliveries WHERE delivered_at IS NOT NULL`); got != 2 {
		t.Fatalf("%d deliveries recorded delivered, want 2", got)
	}
	if got := s.sql(`SELECT count(*) FROM orders.webhook_deliveries WHERE delivered_at IS NULL`); got != 0 {
		t.Fatalf("%d deliveries not delivered", got)
	}
	orders := map[string]bool{}
	for _, b := range hooks.delivered() {
		var o struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &o); err != nil || o.ID == "" {
			t.Fatalf("webhook body %s: %v", b, err)
		}
		orders[o.ID] = true
	}
	if len(orders) != 2 {
		t.Fatalf("webhooks delivered for orders %v, want two orders once each", orders)
	}

	// Sweeps: a due checkout is expired; the sweep goes in once a period.
	_, due := other.call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}})
	s.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, due.ID)
	eventually(t, 30*time.Second, "the due checkout expired", func() bool {
		return s.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND status = 'canceled'`, due.ID) == 1
	})
	eventually(t, 30*time.Second, "five checkout sweeps inserted", func() bool {
		return s.sql(`SELECT count(*) FROM river.river_job WHERE kind = 'checkout_sweep'`) >= 5
	})
	// One a second (SweepEvery) from one leader: at most one more than
	// the seconds between the first and the last, where three processes
	// inserting each would have made three times as many.
	for _, kind := range []string{"checkout_sweep", "payments_resolve_sweep"} {
		if over := s.sql(`SELECT count(*) - ceil(extract(epoch FROM max(created_at) - min(created_at)))::int - 1 FROM river.river_job WHERE kind = $1`, kind); over > 0 {
			t.Fatalf("%s inserted %d times more than once a second: more than the leader inserts it", kind, over)
		}
	}
	if n := s.sql(`SELECT count(*) FROM river.river_job WHERE coalesce(array_length(errors, 1), 0) > 0 AND errors::text LIKE '%not registered%'`); n != 0 {
		t.Fatalf("%d jobs fetched by a process without their worker", n)
	}

	// Remembered sessions across checkout processes: each starts an update
	// or completion from the session as it last wrote it, fenced on the
	// row's xmin (services/checkout/seen.go). Alternated, each finds its
	// entry stale, reads the row again and answers from it: the checkout
	// ends as its last update said, charged once, for that total.
	remembered := func(r *platform.Running, outcome string) int {
		n, _ := strconv.Atoi(metric(t, r, `bcp_checkout_remembered_sessions_total{outcome="`+outcome+`"}`))
		return n
	}
	reread1, reread2 := remembered(cp1, "reread"), remembered(cp2, "reread")
	alt := s.ready(host) // edge 1: checkout 1 creates it and remembers it
	quantity := func(via *agent, q int) *bcp.Checkout {
		mth := alt.Fulfillment.Methods[0]
		_, c := via.call("update_checkout", map[string]any{"id": alt.ID, "checkout": map[string]any{
			"line_items": []any{map[string]any{"id": alt.LineItems[0].ID, "item": map[string]any{"id": "var_cam"}, "quantity": q}},
			"buyer":      map[string]any{"email": "rui@example.com"},
			"fulfillment": map[string]any{"methods": []any{map[string]any{"id": mth.ID, "type": "shipping", "line_item_ids": []any{alt.LineItems[0].ID},
				"selected_destination_id": *mth.SelectedDestinationID,
				"groups":                  []any{map[string]any{"id": mth.Groups[0].ID, "selected_option_id": s.merchant[host].rates["PAC"]}}}}},
		}})
		if c.Status != bcp.StatusReadyForComplete || c.LineItems[0].Quantity != int64(q) {
			t.Fatalf("update to %d via the other process: %s, quantity %d", q, c.Status, c.LineItems[0].Quantity)
		}
		return c
	}
	quantity(other, 3)                  // checkout 2 reads it; checkout 1's entry is now stale
	last := quantity(s.agents[host], 1) // checkout 1: refused on the xmin, reread
	altArgs := completeArgs(alt.ID, uuid.NewString(), cardInstrument("tok_alt_4242"))
	altArgs["meta"].(map[string]any)["ucp-agent"] = map[string]any{"profile": profile}
	_, done := other.call("complete_checkout", altArgs) // checkout 2: stale too, reread
	want := totalOf(last.Totals, bcp.TotalTotal)
	if done.Status != bcp.StatusCompleted || done.LineItems[0].Quantity != 1 || totalOf(done.Totals, bcp.TotalTotal) != want {
		t.Fatalf("completed across processes: %s, quantity %d, total %d (want 1, %d)", done.Status, done.LineItems[0].Quantity, totalOf(done.Totals, bcp.TotalTotal), want)
	}
	if got := s.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1 AND status = 'succeeded' AND amount = $2`, alt.ID, want); got != 1 {
		t.Fatalf("%d succeeded attempts of %d for the checkout updated across processes, want 1", got, want)
	}
	if d1, d2 := remembered(cp1, "reread")-reread1, remembered(cp2, "reread")-reread2; d1 != 1 || d2 != 1 {
		t.Errorf("rereads: checkout 1 %d, checkout 2 %d; want 1 each", d1, d2)
	}
}
