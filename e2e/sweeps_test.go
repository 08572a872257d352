package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// Open checkouts past their expiry are closed by the periodic sweep, for
// every merchant, without anyone reading them; a checkout not yet due
// stays open, and no job is inserted per checkout. The sweep's
// cross-tenant scope can read sessions but not change them.
func TestCheckoutExpirySweep(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment")))
	}))
	t.Cleanup(profiles.Close)
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	newAgent := func(host string) *agent {
		return &agent{t: t, s: agentSession(t, r, host, profiles.URL+"/agent.json"), profile: profiles.URL + "/agent.json", v: v}
	}
	setupMerchant(t, r, "Loja Expira", "expira.localhost", 0)
	setupMerchant(t, r, "Outra Expira", "outra-expira.localhost", 0)
	a, b := newAgent("expira.localhost"), newAgent("outra-expira.localhost")
	args := map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}}}}
	_, due := a.call("create_checkout", args)
	_, open := a.call("create_checkout", args)
	_, otherDue := b.call("create_checkout", args)
	if due.ExpiresAt.Sub(time.Now()) < 5*time.Hour {
		t.Fatalf("default lifetime: expires_at %s is not ~6 h ahead", due.ExpiresAt)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var perCheckoutJobs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind = 'checkout_expire'`).Scan(&perCheckoutJobs); err != nil || perCheckoutJobs != 0 {
		t.Fatalf("checkout_expire jobs = %d, %v; want none", perCheckoutJobs, err)
	}
	// Move the clock of two sessions, one per merchant, into the past.
	tag, err := conn.Exec(ctx, `UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`, []string{due.ID, otherDue.ID})
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("backdate: %v, %d rows", err, tag.RowsAffected())
	}
	status := func(id string) string {
		var s string
		_ = conn.QueryRow(ctx, `SELECT status FROM checkout.sessions WHERE id = $1`, id).Scan(&s)
		return s
	}
	eventually(t, 30*time.Second, "the sweep cancels both merchants' due sessions", func() bool {
		return status(due.ID) == bcp.StatusCanceled && status(otherDue.ID) == bcp.StatusCanceled
	})
	if got := status(open.ID); got != bcp.StatusIncomplete {
		t.Fatalf("a session not yet due is %s, want incomplete", got)
	}
	_, got := a.call("get_checkout", map[string]any{"id": due.ID})
	if got.Status != bcp.StatusCanceled || got.ContinueURL != "" || len(got.Messages) != 1 || got.Messages[0].Code != "expired" {
		t.Fatalf("after expiry: %s, continue_url %q, messages %+v", got.Status, got.ContinueURL, got.Messages)
	}

	// The sweep's scope reads every tenant's sessions and changes none.
	var seen int
	var changed int64
	err = pgstore.InCheckoutSweep(ctx, r.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM checkout.sessions`).Scan(&seen); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE checkout.sessions SET total = 0`)
		changed = tag.RowsAffected()
		return err
	})
	if err != nil || seen != 3 || changed != 0 {
		t.Fatalf("in the expiry scope: saw %d sessions (want 3), changed %d (want 0), %v", seen, changed, err)
	}
}

// A completion nothing settled (the process died between charging and
// recording the order) is settled by the sweep once its settle_after has
// passed: the charge's order is found or created and the checkout
// completes. A Pix still awaiting payment is looked at and looked at
// again a minute later, until it is decided: when the payments service's
// call after deciding it is lost, the sweep finds it paid and places the
// order.
func TestCheckoutSettleSweep(t *testing.T) {
	s := newShopper(t, 0, "sweep.localhost")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.db.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	// A card purchase that completed; then put it back where a crash
	// after the charge would have left it.
	c := s.ready("sweep.localhost")
	done := s.complete("sweep.localhost", c.ID, uuid.NewString(), cardInstrument("tok_sweep_4242"))
	if done.Status != bcp.StatusCompleted || done.Order == nil {
		t.Fatalf("card completion: %s %+v", done.Status, done.Messages)
	}
	var orders int
	tag, err := conn.Exec(ctx, `UPDATE checkout.sessions SET status = 'complete_in_progress', order_id = NULL,
		settle_after = now() - interval '1 second' WHERE id = $1`, c.ID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("rewind: %v, %d rows", err, tag.RowsAffected())
	}
	// A Pix awaiting payment, due as well.
	p := s.ready("sweep.localhost")
	pending := s.complete("sweep.localhost", p.ID, uuid.NewString(), s.pixInstrument("sweep.localhost"))
	if pending.Status != bcp.StatusCompleteInProgress {
		t.Fatalf("pix completion: %s", pending.Status)
	}
	if _, err := conn.Exec(ctx, `UPDATE checkout.sessions SET settle_after = now() - interval '1 second' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}

	type row struct {
		status      string
		orderID     *string
		settleAfter *time.Time
	}
	get := func(id string) row {
		var r row
		_ = conn.QueryRow(ctx, `SELECT status, order_id, settle_after FROM checkout.sessions WHERE id = $1`, id).Scan(&r.status, &r.orderID, &r.settleAfter)
		return r
	}
	eventually(t, 30*time.Second, "the sweep settles the card completion", func() bool {
		r := get(c.ID)
		return r.status == bcp.StatusCompleted && r.orderID != nil
	})
	if r := get(c.ID); *r.orderID != done.Order.ID {
		t.Fatalf("settled with order %s, want the charge's order %s", *r.orderID, done.Order.ID)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, c.ID).Scan(&orders); err != nil || orders != 1 {
		t.Fatalf("orders for the checkout = %d, %v; want exactly 1", orders, err)
	}
	eventually(t, 30*time.Second, "the sweep looks at the pending Pix and again later", func() bool {
		r := get(p.ID)
		return r.settleAfter != nil && r.settleAfter.After(time.Now().Add(30*time.Second))
	})
	if r := get(p.ID); r.status != bcp.StatusCompleteInProgress || r.orderID != nil {
		t.Fatalf("pending Pix after the sweep: %s, order %v; want complete_in_progress without one", r.status, r.orderID)
	}
	// The Pix is paid and decided, and the call telling checkout is lost
	// (written here as the decision would, without the call): at the next
	// look the sweep finds it paid and places the order.
	tag, err = conn.Exec(ctx, `UPDATE payments.attempts SET status = 'succeeded', version = version + 1 WHERE checkout_id = $1 AND status = 'pending'`, p.ID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("decide the Pix: %v, %d rows", err, tag.RowsAffected())
	}
	if _, err := conn.Exec(ctx, `UPDATE checkout.sessions SET settle_after = now() - interval '1 second' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the sweep settles the paid Pix", func() bool {
		r := get(p.ID)
		return r.status == bcp.StatusCompleted && r.orderID != nil
	})
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, p.ID).Scan(&orders); err != nil || orders != 1 {
		t.Fatalf("orders for the Pix checkout = %d, %v; want exactly 1", orders, err)
	}
	var perCompletionJobs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind = 'checkout_settle'`).Scan(&perCompletionJobs); err != nil || perCompletionJobs != 0 {
		t.Fatalf("checkout_settle jobs = %d, %v; want none", perCompletionJobs, err)
	}
}

// A card attempt left pending (the process died after the processor
// charged, before the answer was recorded) is resolved from the
// processor's record by the resolve sweep once its resolve_after has
// passed; card attempts get no per-attempt job any more.
func TestCardResolveSweep(t *testing.T) {
	s := newShopper(t, 0, "resolve.localhost")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.db.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	c := s.ready("resolve.localhost")
	done := s.complete("resolve.localhost", c.ID, uuid.NewString(), cardInstrument("tok_resolve_4242"))
	if done.Status != bcp.StatusCompleted {
		t.Fatalf("card completion: %s %+v", done.Status, done.Messages)
	}
	var attemptID string
	var resolveAfter *time.Time
	if err := conn.QueryRow(ctx, `SELECT id, resolve_after FROM payments.attempts WHERE checkout_id = $1`, c.ID).Scan(&attemptID, &resolveAfter); err != nil {
		t.Fatal(err)
	}
	if resolveAfter == nil || resolveAfter.Before(time.Now().Add(time.Minute)) {
		t.Fatalf("resolve_after = %v, want about 2 min after the start", resolveAfter)
	}
	tag, err := conn.Exec(ctx, `UPDATE payments.attempts SET status = 'pending', resolve_after = now() - interval '1 second' WHERE id = $1`, attemptID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("rewind: %v", err)
	}
	eventually(t, 30*time.Second, "the sweep resolves the attempt from the processor's record", func() bool {
		var status string
		var after *time.Time
		_ = conn.QueryRow(ctx, `SELECT status, resolve_after FROM payments.attempts WHERE id = $1`, attemptID).Scan(&status, &after)
		return status == "succeeded" && after == nil
	})
	var jobs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind = 'payments_card_resolve'`).Scan(&jobs); err != nil || jobs != 0 {
		t.Fatalf("payments_card_resolve jobs = %d, %v; want none", jobs, err)
	}
	var charges int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pspsim.card_intents WHERE idempotency_key = $1`, attemptID).Scan(&charges); err != nil || charges != 1 {
		t.Fatalf("processor charges for the attempt = %d, %v; want exactly 1", charges, err)
	}
}
