package checkout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/loadkit"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout"
	"github.com/bcpdev/bcp/services/checkout/hooktest"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/sim/pspsim"
)

// The money path on real services: every transition of machine.go, a
// crash between each pair of steps with the sweeps recovering, and the
// interleavings of a cancel with a completion forced with hooks.

const (
	internalToken = "internal-token-for-tests-0123456789"
	operatorToken = "operator-token-for-tests-0123456789"
	profileURL    = "https://agent.example/profile.json"
)

var masterKey = make([]byte, 32)

// testLog is quiet unless CHECKOUT_TEST_LOG is set.
func testLog() *slog.Logger {
	if os.Getenv("CHECKOUT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type env struct {
	port string // the public listener's
	t    *testing.T
	d    *testdb.DB
	r    *platform.Running
	g    *hooktest.Gate
	m    *loadkit.Merchant
	ctx  context.Context
}

// newEnv is every service, the PSP simulator and the edge in one process;
// tweaks adjust the configuration (e.g. the simulator's faults).
func newEnv(t *testing.T, tweaks ...func(*platform.Config)) *env {
	t.Helper()
	d := testdb.New(t)
	g := &hooktest.Gate{}
	cfg := platform.Config{
		// The PSP simulator and the edge too: sandbox handlers pay at the
		// simulator, whose webhooks reach the payments service through
		// the edge's webhook listener.
		Services: platform.DevServices, PublicAddr: "127.0.0.1:0",
		DatabaseURL: d.AppURL, InternalAddr: "127.0.0.1:0", InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: masterKey,
		Edge: edge.Config{PublicScheme: "http"}, SweepEvery: 200 * time.Millisecond, CheckoutHooks: g.Hooks(),
		Logger: testLog(),
	}
	for _, f := range tweaks {
		f(&cfg)
	}
	r, err := platform.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	m, err := loadkit.SeedMerchant(context.Background(), r.ClientsWithToken(operatorToken), "loja-"+uuid.NewString()[:8]+".localhost", profileURL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(r.PublicAddr)
	return &env{t: t, d: d, r: r, g: g, m: m, port: port, ctx: tenancy.With(context.Background(), m.TenantID)}
}

// use points the helpers at a subtest's t until the returned func runs.
func (e *env) use(t *testing.T) func() {
	prev := e.t
	e.t = t
	return func() { e.t = prev }
}

// agent is the checkout's view of the agent; the base URL is the
// merchant's host, where the simulated PSP posts its webhooks.
func (e *env) agent() *checkoutv1.Agent {
	return &checkoutv1.Agent{ProfileUrl: profileURL, BaseUrl: "http://" + e.m.Host + ":" + e.port, Capabilities: []string{bcpnames.Checkout, bcpnames.Fulfillment, bcpnames.Discount}}
}

func decode(t *testing.T, res *checkoutv1.CheckoutResult) *bcp.Checkout {
	t.Helper()
	c := &bcp.Checkout{}
	if err := json.Unmarshal(res.GetCheckoutJson(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// ready creates a checkout of two shirts shipped by PAC: ready_for_complete
// at 2 × 5990 + 1500 = 13480.
func (e *env) ready() *bcp.Checkout {
	e.t.Helper()
	addr := map[string]any{"street_address": "Rua Augusta, 500", "address_locality": "São Paulo", "address_region": "SP", "postal_code": "01305-000", "address_country": "BR"}
	body, _ := json.Marshal(map[string]any{
		"line_items":  []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 2}},
		"buyer":       map[string]any{"email": "rui@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{addr}}}},
	})
	cr, err := e.r.Clients.Checkout.CreateCheckout(e.ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: e.agent(), CheckoutJson: body}))
	if err != nil {
		e.t.Fatal(err)
	}
	c := decode(e.t, cr.Msg.GetResult())
	mth := c.Fulfillment.Methods[0]
	body, _ = json.Marshal(map[string]any{
		"line_items": []any{map[string]any{"id": c.LineItems[0].ID, "item": map[string]any{"id": "var_cam"}, "quantity": 2}},
		"buyer":      map[string]any{"email": "rui@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"id": mth.ID, "type": "shipping", "line_item_ids": []any{c.LineItems[0].ID},
			"selected_destination_id": *mth.SelectedDestinationID,
			"groups":                  []any{map[string]any{"id": mth.Groups[0].ID, "selected_option_id": e.m.PacRate}}}}},
	})
	ur, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: body}))
	if err != nil {
		e.t.Fatal(err)
	}
	c = decode(e.t, ur.Msg.GetResult())
	if c.Status != bcp.StatusReadyForComplete || total(c) != 13480 {
		e.t.Fatalf("not ready: %s %d %+v", c.Status, total(c), c.Messages)
	}
	return c
}

func total(c *bcp.Checkout) int64 {
	for _, t := range c.Totals {
		if t.Type == bcp.TotalTotal {
			return t.Amount
		}
	}
	return -1
}

func card(token string) map[string]any {
	return map[string]any{"id": "pi_card", "handler_id": "card", "type": "card", "display": map[string]any{"brand": "visa"},
		"credential": map[string]any{"type": "token", "token": token}}
}

func (e *env) pix() map[string]any {
	return map[string]any{"id": "pi_pix", "handler_id": e.m.Pix, "type": "pix"}
}

func (e *env) complete(id string, inst map[string]any) (*bcp.Checkout, error) {
	body, _ := json.Marshal(map[string]any{"payment": map[string]any{"instruments": []any{inst}}})
	r, err := e.r.Clients.Checkout.CompleteCheckout(e.ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{Agent: e.agent(), Id: id, CheckoutJson: body}))
	if err != nil {
		return nil, err
	}
	return decode(e.t, r.Msg.GetResult()), nil
}

func (e *env) mustComplete(id string, inst map[string]any) *bcp.Checkout {
	e.t.Helper()
	c, err := e.complete(id, inst)
	if err != nil {
		e.t.Fatalf("complete: %v", err)
	}
	return c
}

func (e *env) cancel(id string) (*bcp.Checkout, error) {
	r, err := e.r.Clients.Checkout.CancelCheckout(e.ctx, connect.NewRequest(&checkoutv1.CancelCheckoutRequest{Id: id}))
	if err != nil {
		return nil, err
	}
	return decode(e.t, r.Msg.GetResult()), nil
}

func (e *env) get(id string) *bcp.Checkout {
	e.t.Helper()
	r, err := e.r.Clients.Checkout.GetCheckout(e.ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: id}))
	if err != nil {
		e.t.Fatal(err)
	}
	return decode(e.t, r.Msg.GetResult())
}

func (e *env) sql(q string, args ...any) int {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.d.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.d.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not true after 30s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// due makes the settle sweep look at every session with work now (it
// would after settleSafetyNet).
func (e *env) due() {
	e.exec(`UPDATE checkout.sessions SET settle_after = now() WHERE settle_after IS NOT NULL`)
	e.exec(`UPDATE payments.attempts SET resolve_after = now() WHERE status = 'pending' AND resolve_after IS NOT NULL`)
}

// money is what the ledgers hold for one checkout: ours, and the PSP
// simulator's (schema pspsim: card intents under the attempt's id as
// idempotency key, Pix joined to the attempt by txid).
type money struct {
	status        string
	orders        int
	keptCharges   int // succeeded card intents at the processor not refunded in full
	keptPix       int // Pix received at the PSP without a settled devolução
	reserved      int // live stock reservations
	sessionAttmpt string
}

func (e *env) money(id string) money {
	e.t.Helper()
	var m money
	m.orders = e.sql(`SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, id)
	m.keptCharges = e.sql(`SELECT count(*) FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
		WHERE a.checkout_id = $1 AND c.status = 'succeeded' AND c.amount_refunded < c.amount`, id)
	m.keptPix = e.sql(`SELECT count(*) FROM pspsim.pix p JOIN payments.attempts a ON a.txid = p.txid
		WHERE a.checkout_id = $1 AND NOT EXISTS (SELECT 1 FROM pspsim.refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id AND r.status = 'DEVOLVIDO')`, id)
	m.reserved = e.sql(`SELECT count(*) FROM catalog.stock_reservations WHERE checkout_id = $1 AND state = 'reserved'`, id)
	conn, err := pgx.Connect(context.Background(), e.d.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), `SELECT status, coalesce(payment_attempt_id, '') FROM checkout.sessions WHERE id = $1`, id).Scan(&m.status, &m.sessionAttmpt); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// voided counts the checkout's card intents the processor canceled: a
// charge stopped (3-D Secure abandoned) or a cancel's claim on the key.
func (e *env) voided(id string) int {
	e.t.Helper()
	return e.sql(`SELECT count(*) FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
		WHERE a.checkout_id = $1 AND c.status = 'canceled'`, id)
}

// settledMoney checks the invariant of issue 20 for one checkout: completed
// with one order, one kept payment and its stock; or canceled (or open
// again) with no order, no kept money and no stock held.
func (e *env) settledMoney(id string) money {
	e.t.Helper()
	var m money
	e.eventually("checkout "+id+"'s money settles", func() bool {
		m = e.money(id)
		switch m.status {
		case bcp.StatusCompleted:
			return m.orders == 1 && m.keptCharges+m.keptPix == 1 && m.reserved == 1
		case bcp.StatusCanceled, bcp.StatusReadyForComplete, bcp.StatusIncomplete:
			return m.orders == 0 && m.keptCharges+m.keptPix == 0 && m.reserved == 0
		}
		return false
	})
	return m
}

func (e *env) stock() int {
	return e.sql(`SELECT stock::int FROM catalog.variants WHERE tenant_id = $1 AND id = 'var_cam'`, e.m.TenantID)
}

func hasMessage(c *bcp.Checkout, code string) bool {
	return slices.ContainsFunc(c.Messages, func(m bcp.Message) bool { return m.Code == code })
}

func (e *env) payPix(attemptID string) error {
	_, err := e.r.ClientsWithToken(operatorToken).Payments.SimulatePixPayment(e.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: attemptID}))
	return err
}

func pixAttempt(t *testing.T, c *bcp.Checkout) string {
	t.Helper()
	var d struct {
		Pix struct {
			AttemptID string `json:"attempt_id"`
		} `json:"pix"`
	}
	if c.Payment == nil || len(c.Payment.Instruments) != 1 || json.Unmarshal(c.Payment.Instruments[0].Display, &d) != nil || d.Pix.AttemptID == "" {
		t.Fatalf("no Pix display in %+v", c.Payment)
	}
	return d.Pix.AttemptID
}

// Each transition of the table, reached through the service's API.
func TestMoneyPathTransitions(t *testing.T) {
	e := newEnv(t)
	start := e.stock()
	tok := func(suffix string) string { return "tok_" + uuid.NewString()[:8] + "_" + suffix }
	cases := []struct {
		name string
		run  func(t *testing.T) (id string, want string, msg string)
	}{
		{"claim then pay: card approved", func(t *testing.T) (string, string, string) {
			c := e.ready()
			got := e.mustComplete(c.ID, card(tok("4242")))
			if got.Order == nil || got.Order.ID == "" {
				t.Errorf("completed without an order ref: %+v", got)
			}
			return c.ID, got.Status, ""
		}},
		{"reopen: card declined", func(t *testing.T) (string, string, string) {
			c := e.ready()
			got := e.mustComplete(c.ID, card(tok("0002")))
			return c.ID, got.Status, bcp.CodePaymentFailed
		}},
		{"escalate: 3-D Secure, then cancel voids it", func(t *testing.T) (string, string, string) {
			c := e.ready()
			got := e.mustComplete(c.ID, card(tok("3220")))
			if got.Status != bcp.StatusRequiresEscalation || !hasMessage(got, "requires_3ds") {
				t.Fatalf("3DS: %s %+v", got.Status, got.Messages)
			}
			// No update while the bank waits for the buyer.
			body, _ := json.Marshal(map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}})
			ur, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: body}))
			if err != nil || !hasMessage(decode(t, ur.Msg.GetResult()), bcp.CodeCheckoutNotModifiable) {
				t.Fatalf("update during 3DS: %v", err)
			}
			cc, err := e.cancel(c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n := e.voided(c.ID); n != 1 {
				t.Errorf("%d voided charges, want 1", n)
			}
			return c.ID, cc.Status, ""
		}},
		{"await then pay: Pix paid, settled by the payments service's news", func(t *testing.T) (string, string, string) {
			c := e.ready()
			got := e.mustComplete(c.ID, e.pix())
			if got.Status != bcp.StatusCompleteInProgress || !hasMessage(got, "pix_awaiting_payment") {
				t.Fatalf("Pix: %s %+v", got.Status, got.Messages)
			}
			if err := e.payPix(pixAttempt(t, got)); err != nil {
				t.Fatal(err)
			}
			e.eventually("the paid Pix completes the checkout", func() bool { return e.get(c.ID).Status == bcp.StatusCompleted })
			return c.ID, bcp.StatusCompleted, ""
		}},
		{"await then reopen: Pix expired", func(t *testing.T) (string, string, string) {
			c := e.ready()
			a := pixAttempt(t, e.mustComplete(c.ID, e.pix()))
			e.exec(`UPDATE payments.attempts SET expires_at = now() - interval '1 second', resolve_after = now() WHERE id = $1`, a)
			var got *bcp.Checkout
			e.eventually("the expired Pix reopens the checkout", func() bool { got = e.get(c.ID); return got.Status == bcp.StatusReadyForComplete })
			return c.ID, got.Status, bcp.CodePaymentFailed
		}},
		{"refresh: the price changed before complete", func(t *testing.T) (string, string, string) {
			c := e.ready()
			e.exec(`UPDATE catalog.variants SET price = 6990 WHERE tenant_id = $1 AND id = 'var_cam'`, e.m.TenantID)
			defer e.exec(`UPDATE catalog.variants SET price = 5990 WHERE tenant_id = $1 AND id = 'var_cam'`, e.m.TenantID)
			got := e.mustComplete(c.ID, card(tok("4242")))
			return c.ID, got.Status, "checkout_changed"
		}},
		{"cancel: an open checkout, twice", func(t *testing.T) (string, string, string) {
			c := e.ready()
			if _, err := e.cancel(c.ID); err != nil {
				t.Fatal(err)
			}
			got, err := e.cancel(c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if again := e.mustComplete(c.ID, card(tok("4242"))); again.Status != bcp.StatusCanceled || !hasMessage(again, bcp.CodeCheckoutNotModifiable) {
				t.Errorf("complete after cancel: %s %+v", again.Status, again.Messages)
			}
			return c.ID, got.Status, ""
		}},
		{"cancel: a completed checkout is not modifiable", func(t *testing.T) (string, string, string) {
			c := e.ready()
			e.mustComplete(c.ID, card(tok("4242")))
			got, err := e.cancel(c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !hasMessage(got, bcp.CodeCheckoutNotModifiable) {
				t.Errorf("cancel of a completed checkout: %+v", got.Messages)
			}
			return c.ID, got.Status, ""
		}},
		{"cancel: a Pix in progress is stopped at the PSP", func(t *testing.T) (string, string, string) {
			c := e.ready()
			a := pixAttempt(t, e.mustComplete(c.ID, e.pix()))
			got, err := e.cancel(c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.payPix(a); err == nil {
				t.Error("a removed charge accepted a payment")
			}
			return c.ID, got.Status, ""
		}},
		{"expire: an open checkout past its expiry", func(t *testing.T) (string, string, string) {
			c := e.ready()
			e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, c.ID)
			got := e.get(c.ID)
			return c.ID, got.Status, "expired"
		}},
		{"expire: never a completion in flight", func(t *testing.T) (string, string, string) {
			c := e.ready()
			a := pixAttempt(t, e.mustComplete(c.ID, e.pix()))
			e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, c.ID)
			if got := e.get(c.ID); got.Status != bcp.StatusCompleteInProgress {
				t.Fatalf("an expired checkout with a Pix to pay became %s", got.Status)
			}
			if err := e.payPix(a); err != nil {
				t.Fatal(err)
			}
			e.eventually("paid past the checkout's expiry, within the Pix's", func() bool { return e.get(c.ID).Status == bcp.StatusCompleted })
			return c.ID, bcp.StatusCompleted, ""
		}},
	}
	completed := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer e.use(t)()
			id, status, msg := tc.run(t)
			m := e.settledMoney(id)
			if m.status != status && !(status == bcp.StatusCompleted && m.status == bcp.StatusCompleted) {
				t.Errorf("status %s (ledgers %s), want %s", status, m.status, status)
			}
			if msg != "" {
				if c := e.get(id); !hasMessage(c, msg) && status != bcp.StatusCanceled {
					// canceled answers carry their message only in the answer
					t.Errorf("no %s message in %+v", msg, c.Messages)
				}
			}
			if m.status == bcp.StatusCompleted {
				completed++
			}
		})
	}
	if got, want := e.stock(), start-2*completed; got != want {
		t.Errorf("stock %d, want %d (%d orders of 2)", got, want, completed)
	}
}

// A process that dies between any two steps of a completion or a cancel
// leaves work the sweeps finish: never money without an order, never an
// order without its payment, never stock held by a checkout without one.
func TestMoneyPathCrashes(t *testing.T) {
	e := newEnv(t)
	start := e.stock()
	completed := 0
	for _, tc := range []struct {
		step checkout.Step
		pix  bool
		want string // after the sweeps
	}{
		{checkout.StepClaimed, false, bcp.StatusReadyForComplete}, // never charged: the attempt is stopped, the checkout reopens
		{checkout.StepReserved, false, bcp.StatusReadyForComplete},
		{checkout.StepCharged, false, bcp.StatusCompleted}, // charged: the sweep writes the order
		{checkout.StepOrdered, false, bcp.StatusCompleted}, // ordered: the sweep completes the session, one order
		{checkout.StepClaimed, true, bcp.StatusReadyForComplete},
		{checkout.StepCharged, true, bcp.StatusCompleteInProgress}, // a Pix to pay: the sweep shows it
	} {
		t.Run(fmt.Sprintf("complete by %s dies at %s", map[bool]string{true: "Pix", false: "card"}[tc.pix], tc.step), func(t *testing.T) {
			defer e.use(t)()
			c := e.ready()
			inst := card("tok_" + uuid.NewString()[:8] + "_4242")
			if tc.pix {
				inst = e.pix()
			}
			e.g.Crash(c.ID, tc.step)
			if _, err := e.complete(c.ID, inst); err == nil {
				t.Fatal("the crash did not end the request")
			}
			e.due()
			var m money
			e.eventually("the sweeps finish what the crash left", func() bool {
				m = e.money(c.ID)
				return m.status == tc.want
			})
			if tc.want == bcp.StatusCompleteInProgress {
				// The sweep shows the Pix to pay; paid, the payment's news
				// completes it.
				var got *bcp.Checkout
				e.eventually("the sweep shows the Pix", func() bool {
					got = e.get(c.ID)
					return got.Payment != nil && len(got.Payment.Instruments) == 1 && len(got.Payment.Instruments[0].Display) > 0
				})
				if err := e.payPix(pixAttempt(t, got)); err != nil {
					t.Fatal(err)
				}
				e.eventually("paid", func() bool { return e.get(c.ID).Status == bcp.StatusCompleted })
			}
			m = e.settledMoney(c.ID)
			if m.status == bcp.StatusCompleted {
				completed++
			} else {
				// Open again and nothing kept: a new attempt completes it.
				if got := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242")); got.Status != bcp.StatusCompleted {
					t.Fatalf("after recovery: %s %+v", got.Status, got.Messages)
				}
				e.settledMoney(c.ID)
				completed++
			}
		})
	}
	for _, step := range []checkout.Step{checkout.StepStopped, checkout.StepClosed} {
		t.Run("cancel of a Pix in progress dies at "+string(step), func(t *testing.T) {
			defer e.use(t)()
			c := e.ready()
			a := pixAttempt(t, e.mustComplete(c.ID, e.pix()))
			e.g.Crash(c.ID, step)
			if _, err := e.cancel(c.ID); err == nil {
				t.Fatal("the crash did not end the request")
			}
			if err := e.payPix(a); err == nil {
				t.Error("the stopped charge accepted a payment")
			}
			e.due()
			e.eventually("the sweeps finish what the crash left", func() bool {
				m := e.money(c.ID)
				return (m.status == bcp.StatusCanceled || m.status == bcp.StatusReadyForComplete) && m.reserved == 0
			})
			if _, err := e.cancel(c.ID); err != nil {
				t.Fatal(err)
			}
			if m := e.settledMoney(c.ID); m.status != bcp.StatusCanceled {
				t.Errorf("status %s after the retried cancel", m.status)
			}
		})
	}
	if got, want := e.stock(), start-2*completed; got != want {
		t.Errorf("stock %d, want %d (%d orders of 2)", got, want, completed)
	}
}

// A cancel_checkout run to its end while a completion is held between two
// of its steps: whatever the step, the checkout ends canceled with nothing
// kept, or completed with exactly one order and one charge.
func TestCancelBetweenCompletionSteps(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		step checkout.Step
		want string
	}{
		{checkout.StepClaimed, bcp.StatusCanceled},  // the cancel fences the attempt before StartPayment
		{checkout.StepReserved, bcp.StatusCanceled}, // StartPayment then finds it canceled: nothing charged
		{checkout.StepCharged, bcp.StatusCompleted}, // the money moved: completion wins
		{checkout.StepOrdered, bcp.StatusCompleted}, // likewise, with the order written once
	} {
		t.Run(string(tc.step), func(t *testing.T) {
			defer e.use(t)()
			c := e.ready()
			e.g.Hold(c.ID, tc.step)
			done := make(chan *bcp.Checkout, 1)
			go func() {
				got, err := e.complete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
				if err != nil {
					t.Errorf("complete: %v", err)
				}
				done <- got
			}()
			<-e.g.Reached()
			canceled, err := e.cancel(c.ID)
			if err != nil {
				t.Fatal(err)
			}
			e.g.Release()
			completed := <-done
			if canceled.Status != tc.want {
				t.Errorf("cancel answered %s, want %s", canceled.Status, tc.want)
			}
			if tc.want == bcp.StatusCompleted && !hasMessage(canceled, bcp.CodeCheckoutNotModifiable) {
				t.Errorf("a cancel that lost says nothing: %+v", canceled.Messages)
			}
			if completed != nil && completed.Status != tc.want {
				t.Errorf("complete answered %s, want %s", completed.Status, tc.want)
			}
			// The completion's answer says what happened (issue 32): one
			// the cancel overtook says the checkout was canceled; one that
			// completed has no error.
			if completed != nil && tc.want == bcp.StatusCanceled && !slices.Equal(errorsOf(completed), []string{"error " + bcp.CodeCheckoutNotModifiable + " recoverable $.status"}) {
				t.Errorf("a complete that lost to a cancel answered %v", msgs(completed))
			}
			if completed != nil && tc.want == bcp.StatusCompleted && len(errorsOf(completed)) > 0 {
				t.Errorf("a complete that won answered errors %v", errorsOf(completed))
			}
			if m := e.settledMoney(c.ID); m.status != tc.want {
				t.Errorf("ledgers: %+v", m)
			}
			if n := e.sql(`SELECT count(*) FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
				WHERE a.checkout_id = $1 AND c.status = 'succeeded'`, c.ID); (tc.want == bcp.StatusCompleted) != (n == 1) || n > 1 {
				t.Errorf("%d approved charges at the processor", n)
			}
		})
	}
}

// processorDown makes every call to the PSP simulator fail with a 5xx
// before anything is done: a processor that never gives an answer.
func processorDown(c *platform.Config) { c.PSPSimFaults = "error5xx=1" }

// The processor not answering during complete: the checkout waits
// (complete_in_progress, payment_processing), and a cancel that cannot
// stop the sale says so instead of closing it.
func TestProcessorTimeoutDuringComplete(t *testing.T) {
	e := newEnv(t, processorDown)
	c := e.ready()
	got := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
	if got.Status != bcp.StatusCompleteInProgress || !hasMessage(got, "payment_processing") {
		t.Fatalf("complete with the processor down: %s %+v", got.Status, got.Messages)
	}
	canceled, err := e.cancel(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if canceled.Status != bcp.StatusCompleteInProgress || !hasMessage(canceled, "payment_in_progress") {
		t.Fatalf("cancel with the processor down: %s %+v", canceled.Status, canceled.Messages)
	}
	if m := e.money(c.ID); m.status != bcp.StatusCompleteInProgress || m.orders != 0 || m.reserved != 1 {
		t.Fatalf("ledgers: %+v", m)
	}
	// The charge and the void were both refused before the processor did
	// anything: no intent under the attempt's key.
	if n := e.charges(c.ID); n != 0 {
		t.Errorf("%d intents at the processor, want none", n)
	}
	if n := e.injected(pspsim.FaultError5xx); n < 2 {
		t.Errorf("the simulator injected %d 5xx answers, want the charge's and the void's at least", n)
	}
}

// injected is how many faults of kind the hosted PSP simulator injected
// (its counter on the internal listener's /metrics).
func (e *env) injected(kind string) int {
	e.t.Helper()
	resp, err := http.Get("http://" + e.r.InternalAddr + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	prefix := `bcp_pspsim_faults_total{kind="` + kind + `"} `
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				e.t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	e.t.Fatalf("/metrics has no %s", prefix)
	return 0
}
