package checkout_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"connectrpc.com/connect"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// remembered reads bcp_checkout_remembered_sessions_total{outcome} from
// the platform's /metrics.
func (e *env) remembered(outcome string) int {
	e.t.Helper()
	resp, err := http.Get("http://" + e.r.InternalAddr + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^bcp_checkout_remembered_sessions_total\{outcome="` + outcome + `"\} (\S+)$`).FindSubmatch(b)
	if m == nil {
		e.t.Fatalf("no bcp_checkout_remembered_sessions_total{outcome=%q} in /metrics", outcome)
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

type rememberedCounts struct{ hit, miss, reread int }

func (e *env) rememberedNow() rememberedCounts {
	return rememberedCounts{e.remembered("hit"), e.remembered("miss"), e.remembered("reread")}
}

func (e *env) wantRemembered(t *testing.T, before rememberedCounts, hit, miss, reread int) {
	t.Helper()
	now := e.rememberedNow()
	if got := (rememberedCounts{now.hit - before.hit, now.miss - before.miss, now.reread - before.reread}); got != (rememberedCounts{hit, miss, reread}) {
		t.Errorf("remembered sessions: %+v, want {hit:%d miss:%d reread:%d}", got, hit, miss, reread)
	}
}

// A purchase's update and completion start from the session as this
// process wrote it (seen.go): one read saved per call, and every one
// checked against its row (hooktest's CheckSeen: same xmin, same columns).
// A row changed behind the process's back (an operator's SQL, a sweep, or
// another checkout process) refuses the fenced write, and the call is
// answered from a fresh read, as if nothing had been remembered.
func TestRememberedSessions(t *testing.T) {
	e := newEnv(t)

	t.Run("create, two updates and a completion read the session never", func(t *testing.T) {
		defer e.use(t)()
		before := e.rememberedNow()
		c := e.ready() // create, update
		got, err := e.update(c.ID, e.readyBody(c, 3))
		if err != nil || got.Status != bcp.StatusReadyForComplete || totals(got)[bcp.TotalTotal] != 19470 {
			t.Fatalf("update: %v %v", got, err)
		}
		done := e.mustComplete(c.ID, card("tok_seen_4242"))
		if done.Status != bcp.StatusCompleted || done.Order == nil || totals(done)[bcp.TotalTotal] != 19470 {
			t.Fatalf("complete: %s %+v %v", done.Status, done.Order, totals(done))
		}
		if n := e.sql(`SELECT amount::int FROM payments.attempts WHERE checkout_id = $1 AND status = 'succeeded'`, c.ID); n != 19470 {
			t.Errorf("charged %d, want 19470", n)
		}
		e.wantRemembered(t, before, 3, 0, 0)
	})

	t.Run("a status changed by SQL: the completion charges nothing", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		e.exec(`UPDATE checkout.sessions SET status = 'canceled', state = jsonb_set(state::jsonb, '{status}', '"canceled"')::json WHERE id = $1`, c.ID)
		before := e.rememberedNow()
		got := e.mustComplete(c.ID, card("tok_seen_4242"))
		if got.Status != bcp.StatusCanceled || !equalStrings(msgs(got), []string{"error checkout_not_modifiable recoverable $.status"}) {
			t.Errorf("complete of a canceled checkout: %s %v", got.Status, msgs(got))
		}
		if n := e.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, c.ID); n != 0 {
			t.Errorf("%d payment attempts for a canceled checkout", n)
		}
		e.wantRemembered(t, before, 1, 0, 1)
	})

	t.Run("an expiry set by SQL: the update answers what the row holds", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		// The version stays: only the row's xmin tells this change.
		e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, c.ID)
		before := e.rememberedNow()
		got, err := e.update(c.ID, e.readyBody(c, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != bcp.StatusCanceled || got.LineItems[0].Quantity != 2 {
			t.Errorf("update of a checkout expired by SQL: %s, quantity %d", got.Status, got.LineItems[0].Quantity)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND status = 'canceled' AND total = 13480`, c.ID); n != 1 {
			t.Errorf("the row was rewritten from the remembered session")
		}
		e.wantRemembered(t, before, 1, 0, 1)
	})

	t.Run("another agent's id is not found, remembered or not", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		before := e.rememberedNow()
		other := e.agent()
		other.ProfileUrl = "https://outro-agente.example/profile.json"
		_, err := e.r.Clients.Checkout.UpdateCheckout(e.ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: other, Id: c.ID, CheckoutJson: jsonBody(e.readyBody(c, 1))}))
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
		e.wantRemembered(t, before, 0, 1, 0)
		// The entry was spent on the refused call: the owner's next call
		// reads the row, and is served.
		got, err := e.update(c.ID, e.readyBody(c, 1))
		if err != nil || got.Status != bcp.StatusReadyForComplete {
			t.Fatalf("owner's update: %v %v", got, err)
		}
		e.wantRemembered(t, before, 0, 2, 0)
	})
}
