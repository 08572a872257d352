package checkout_test

import (
	"context"
	"net"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/loadkit"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout"
	"github.com/bcpdev/bcp/services/checkout/hooktest"
	"github.com/bcpdev/bcp/services/edge"
)

// quietEnv is newEnv whose periodic sweeps run once at start and then not
// for an hour: the test decides when sessions expire and are swept.
func quietEnv(t *testing.T, tweaks ...func(*platform.Config)) *env {
	t.Helper()
	d := testdb.New(t)
	g := &hooktest.Gate{}
	cfg := platform.Config{
		Services: platform.DevServices, PublicAddr: "127.0.0.1:0",
		DatabaseURL: d.AppURL, InternalAddr: "127.0.0.1:0", InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: masterKey,
		Edge: edge.Config{PublicScheme: "http"}, SweepEvery: time.Hour, CheckoutHooks: g.Hooks(),
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
	e := &env{t: t, d: d, r: r, g: g, m: m, port: port, ctx: tenancy.With(context.Background(), m.TenantID)}
	e.eventually("the start-up sweep ran", func() bool {
		return e.sql(`SELECT count(*) FROM river.river_job WHERE kind = 'checkout_sweep' AND state = 'completed'`) >= 1
	})
	return e
}

func (e *env) settlePayment(id, attemptID string) (string, error) {
	r, err := e.r.Clients.Checkout.SettlePayment(e.ctx, connect.NewRequest(&checkoutv1.SettlePaymentRequest{CheckoutId: id, AttemptId: attemptID}))
	if err != nil {
		return "", err
	}
	return r.Msg.GetStatus(), nil
}

func (e *env) attemptOf(id string) string {
	e.t.Helper()
	return e.str(`SELECT coalesce(payment_attempt_id, '') FROM checkout.sessions WHERE id = $1`, id)
}

// SettlePayment brings a checkout in line with its attempt; and an attempt
// that took money for a checkout that did not keep it (here: forced
// canceled behind the service's back) is refunded in full, automatically,
// once, with an alert to the merchant.
func TestSettlePayment(t *testing.T) {
	e := quietEnv(t)
	tok := func(s string) map[string]any { return card("tok_" + uuid.NewString()[:8] + "_" + s) }

	t.Run("a Pix: awaiting, then paid", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		got := e.mustComplete(c.ID, e.pix())
		a := pixAttempt(t, got)
		if st, err := e.settlePayment(c.ID, a); err != nil || st != bcp.StatusCompleteInProgress {
			t.Fatalf("settle of an unpaid Pix: %s %v", st, err)
		}
		if after := e.get(c.ID); !equalStrings(msgs(after), msgs(got)) || after.Status != bcp.StatusCompleteInProgress {
			t.Errorf("settling an unpaid Pix changed the checkout: %v", msgs(after))
		}
		if err := e.payPix(a); err != nil {
			t.Fatal(err)
		}
		// The PSP's news reaches the payments service asynchronously; once
		// it has, the settle completes the checkout (or finds it completed).
		e.eventually("a settle of the paid Pix completes the checkout", func() bool {
			st, err := e.settlePayment(c.ID, a)
			if err != nil {
				t.Fatal(err)
			}
			return st == bcp.StatusCompleted
		})
		if m := e.settledMoney(c.ID); m.status != bcp.StatusCompleted || m.orders != 1 {
			t.Errorf("ledgers %+v", m)
		}
		// Settled before: the same answer, nothing more.
		if st, err := e.settlePayment(c.ID, a); err != nil || st != bcp.StatusCompleted {
			t.Errorf("settle again: %s %v", st, err)
		}
		if n := e.sql(`SELECT count(*) FROM payments.refunds WHERE attempt_id = $1`, a); n != 0 {
			t.Errorf("%d refunds of a kept payment", n)
		}
	})
	t.Run("an attempt the payments service never saw", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if st, err := e.settlePayment(c.ID, "pay_unknown"); err != nil || st != bcp.StatusReadyForComplete {
			t.Errorf("settle of an unknown attempt: %s %v", st, err)
		}
		if got := e.get(c.ID); got.Status != bcp.StatusReadyForComplete || total(got) != 13480 {
			t.Errorf("checkout %s %d", got.Status, total(got))
		}
	})
	t.Run("unknown checkout", func(t *testing.T) {
		defer e.use(t)()
		_, err := e.settlePayment("chk_nope", "pay_x")
		wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	})
	t.Run("money kept by a canceled checkout goes back", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if got := e.mustComplete(c.ID, tok("4242")); got.Status != bcp.StatusCompleted {
			t.Fatalf("card: %s", got.Status)
		}
		a := e.attemptOf(c.ID)
		e.exec(`UPDATE checkout.sessions SET status = 'canceled', state = jsonb_set(state::jsonb, '{status}', '"canceled"')::json WHERE id = $1`, c.ID)
		for i := 0; i < 2; i++ { // the second settle finds it refunded: nothing more
			if st, err := e.settlePayment(c.ID, a); err != nil || st != bcp.StatusCanceled {
				t.Fatalf("settle %d: %s %v", i, st, err)
			}
		}
		if n := e.sql(`SELECT count(*) FROM payments.refunds WHERE attempt_id = $1 AND kind = 'automatic' AND id = $2 AND amount = 13480`, a, "auto_closed_"+a); n != 1 {
			t.Errorf("%d automatic refunds of 13480 for %s, want 1", n, a)
		}
		if n := e.sql(`SELECT count(*) FROM payments.refunds WHERE attempt_id = $1`, a); n != 1 {
			t.Errorf("%d refunds in all, want 1", n)
		}
		e.eventually("the processor refunds the charge", func() bool {
			return e.sql(`SELECT c.amount_refunded::int FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key WHERE a.id = $1`, a) == 13480
		})
		if n := e.sql(`SELECT count(*) FROM payments.alerts WHERE attempt_id = $1 AND kind = 'checkout_closed'`, a); n != 1 {
			t.Errorf("%d checkout_closed alerts, want 1", n)
		}
		if m := e.money(c.ID); m.keptCharges != 0 || m.status != bcp.StatusCanceled {
			t.Errorf("ledgers %+v", m)
		}
	})
	t.Run("a declined attempt of a checkout that moved on is left alone", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if got := e.mustComplete(c.ID, tok("0002")); got.Status != bcp.StatusReadyForComplete {
			t.Fatalf("declined: %s", got.Status)
		}
		a := e.str(`SELECT id FROM payments.attempts WHERE checkout_id = $1`, c.ID)
		if st, err := e.settlePayment(c.ID, a); err != nil || st != bcp.StatusReadyForComplete {
			t.Errorf("settle of the declined attempt: %s %v", st, err)
		}
		if n := e.sql(`SELECT count(*) FROM payments.refunds WHERE attempt_id = $1`, a); n != 0 {
			t.Errorf("%d refunds of a declined attempt", n)
		}
	})
}

// ExpireCheckouts closes the tenant's open sessions past their expiry and
// counts them; a completion in flight and a completed checkout are left to
// their payment; SweepExpired does the same for every tenant.
func TestExpiry(t *testing.T) {
	e := quietEnv(t)
	past := func(id string) {
		e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	}
	var due []string
	for i := 0; i < 3; i++ {
		c := e.ready()
		past(c.ID)
		due = append(due, c.ID)
	}
	incomplete := e.mustCreate(e.agent(), map[string]any{"line_items": shirts(1)})
	past(incomplete.ID)
	due = append(due, incomplete.ID)
	fresh := e.ready()
	paying := e.ready()
	a := pixAttempt(t, e.mustComplete(paying.ID, e.pix()))
	past(paying.ID)
	done := e.ready()
	e.mustComplete(done.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
	past(done.ID)

	r, err := e.r.Clients.Checkout.ExpireCheckouts(e.ctx, connect.NewRequest(&checkoutv1.ExpireCheckoutsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Msg.GetExpired() != 4 {
		t.Errorf("expired %d, want 4", r.Msg.GetExpired())
	}
	for _, id := range due {
		if m := e.settledMoney(id); m.status != bcp.StatusCanceled {
			t.Errorf("%s: %+v", id, m)
		}
		if got := e.get(id); !equalStrings(msgs(got), []string{"info expired"}) || got.ContinueURL != "" {
			t.Errorf("%s: %v %q", id, msgs(got), got.ContinueURL)
		}
	}
	for id, want := range map[string]string{fresh.ID: bcp.StatusReadyForComplete, paying.ID: bcp.StatusCompleteInProgress, done.ID: bcp.StatusCompleted} {
		if m := e.money(id); m.status != want {
			t.Errorf("%s: %s, want %s", id, m.status, want)
		}
	}
	if r, err := e.r.Clients.Checkout.ExpireCheckouts(e.ctx, connect.NewRequest(&checkoutv1.ExpireCheckoutsRequest{})); err != nil || r.Msg.GetExpired() != 0 {
		t.Errorf("a second run: %v %v", r, err)
	}
	// The Pix is still payable past the checkout's expiry.
	if err := e.payPix(a); err != nil {
		t.Fatal(err)
	}
	e.eventually("the paid Pix completes", func() bool { return e.get(paying.ID).Status == bcp.StatusCompleted })

	// The sweep: every tenant's, one service for all.
	m2, err := loadkit.SeedMerchant(context.Background(), e.r.ClientsWithToken(operatorToken), "loja-"+uuid.NewString()[:8]+".localhost", profileURL)
	if err != nil {
		t.Fatal(err)
	}
	e2 := *e
	e2.m, e2.ctx = m2, tenancy.With(context.Background(), m2.TenantID)
	var swept []string
	for _, x := range []*env{e, e, &e2} {
		c := x.ready()
		past(c.ID)
		swept = append(swept, c.ID)
	}
	other := e2.ready() // not due
	svc := checkout.New(e.r.Pool, checkout.Clients{Catalog: e.r.Clients.Catalog, Pricing: e.r.Clients.Pricing, Tenants: e.r.Clients.Tenants,
		Payments: e.r.Clients.Payments, Orders: e.r.Clients.Orders})
	n, err := svc.SweepExpired(context.Background())
	if err != nil || n != 3 {
		t.Errorf("SweepExpired = %d, %v; want 3", n, err)
	}
	for i, id := range swept {
		x := e
		if i == 2 {
			x = &e2
		}
		if m := x.settledMoney(id); m.status != bcp.StatusCanceled {
			t.Errorf("%s: %+v", id, m)
		}
	}
	if m := e2.money(other.ID); m.status != bcp.StatusReadyForComplete {
		t.Errorf("the other tenant's fresh checkout: %s", m.status)
	}
	if n, err := svc.SweepExpired(context.Background()); err != nil || n != 0 {
		t.Errorf("a second sweep: %d %v", n, err)
	}
}

// complete_checkout finds the pricing changed since the last update (the
// PAC rate went up): nothing is charged or reserved, the checkout comes
// back incomplete at the new total and says so; confirmed with an update,
// it completes at that total.
func TestCompleteRefreshesChangedPricing(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	ops := e.r.ClientsWithToken(operatorToken)
	setPAC := func(price int64) {
		t.Helper()
		if _, err := ops.Pricing.SetShippingRate(e.ctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{
			Id: e.m.PacRate, Title: "PAC", Price: price, MinDays: 5, MaxDays: 9, Active: true, Carrier: "Correios"}})); err != nil {
			t.Fatal(err)
		}
	}
	setPAC(1800)
	got := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
	if got.Status != bcp.StatusIncomplete || total(got) != 2*5990+1800 {
		t.Fatalf("refresh: %s %d %v", got.Status, total(got), msgs(got))
	}
	// The refresh's warning first, pricing's own, then what blocks completion.
	if want := []string{"warning checkout_changed $.totals", "warning fulfillment_changed $.fulfillment.methods[0].groups[0].selected_option_id",
		"error checkout_changed recoverable $.totals"}; !equalStrings(msgs(got), want) {
		t.Errorf("messages %v, want %v", msgs(got), want)
	}
	if got.Payment != nil && len(got.Payment.Instruments) > 0 {
		t.Errorf("a refreshed checkout shows a payment: %+v", got.Payment)
	}
	m := e.money(c.ID)
	if m.status != bcp.StatusIncomplete || m.sessionAttmpt != "" || m.reserved != 0 || m.orders != 0 {
		t.Errorf("ledgers %+v", m)
	}
	if n := e.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, c.ID); n != 0 {
		t.Errorf("%d payment attempts, want none", n)
	}
	if stored := e.get(c.ID); stored.Status != bcp.StatusIncomplete || total(stored) != 13780 {
		t.Errorf("stored %s %d", stored.Status, total(stored))
	}
	// The agent confirms the new total; the completion charges it.
	up, err := e.update(c.ID, e.readyBody(c, 2))
	if err != nil || up.Status != bcp.StatusReadyForComplete || total(up) != 13780 {
		t.Fatalf("confirm: %v %+v", err, up)
	}
	if done := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242")); done.Status != bcp.StatusCompleted {
		t.Fatalf("complete: %s %v", done.Status, msgs(done))
	}
	if n := e.sql(`SELECT c.amount::int FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
		WHERE a.checkout_id = $1 AND c.status = 'succeeded'`, c.ID); n != 13780 {
		t.Errorf("charged %d, want 13780", n)
	}
	e.settledMoney(c.ID)
}

// A discount code: priced exactly, charged at the discounted total and
// redeemed once when the money moves.
func TestDiscountRedeemedOnCompletion(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	body := e.readyBody(c, 2)
	body["discounts"] = map[string]any{"codes": []any{"BEMVINDO10"}}
	got, err := e.update(c.ID, body)
	if err != nil {
		t.Fatal(err)
	}
	// 10% of 2 × 5990, across the items; shipping is not discounted.
	want := map[string]int64{bcp.TotalSubtotal: 11980, bcp.TotalItemsDiscount: -1198, bcp.TotalFulfillment: 1500, bcp.TotalTotal: 12282}
	if got.Status != bcp.StatusReadyForComplete || len(got.Messages) != 0 || len(totals(got)) != len(want) {
		t.Fatalf("with the code: %s %v %v", got.Status, msgs(got), totals(got))
	}
	for k, v := range want {
		if totals(got)[k] != v {
			t.Errorf("total %s = %d, want %d", k, totals(got)[k], v)
		}
	}
	if d := got.Discounts; d == nil || len(d.Applied) != 1 || d.Applied[0].Code != "BEMVINDO10" || d.Applied[0].Amount != 1198 {
		t.Errorf("applied %+v", d)
	}
	if n := e.sql(`SELECT count(*) FROM pricing.discount_redemptions WHERE checkout_id = $1`, c.ID); n != 0 {
		t.Errorf("%d redemptions before completion", n)
	}
	done := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
	if done.Status != bcp.StatusCompleted {
		t.Fatalf("complete: %s", done.Status)
	}
	e.settledMoney(c.ID)
	if n := e.sql(`SELECT c.amount::int FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
		WHERE a.checkout_id = $1 AND c.status = 'succeeded'`, c.ID); n != 12282 {
		t.Errorf("charged %d, want 12282", n)
	}
	if n := e.sql(`SELECT count(*) FROM pricing.discount_redemptions WHERE checkout_id = $1 AND buyer_email = 'rui@example.com'`, c.ID); n != 1 {
		t.Errorf("%d redemptions, want 1", n)
	}
	if n := e.sql(`SELECT count(*) FROM pricing.discount_redemptions WHERE tenant_id = $1`, e.m.TenantID); n != 1 {
		t.Errorf("%d redemptions for the tenant, want 1", n)
	}
}

// The settle sweep, run by hand: a Pix still unpaid stays in progress and
// is looked at again a minute later; a completion whose process died
// after charging gets its order; a closed checkout whose stock release
// never confirmed gets its stock back. And a checkout_expire job queued by
// an older version still closes its session at its expiry, and only then.
func TestSweepsByHand(t *testing.T) {
	e := quietEnv(t)
	svc := checkout.New(e.r.Pool, checkout.Clients{Catalog: e.r.Clients.Catalog, Pricing: e.r.Clients.Pricing, Tenants: e.r.Clients.Tenants,
		Payments: e.r.Clients.Payments, Orders: e.r.Clients.Orders})
	due := func(id string) {
		e.exec(`UPDATE checkout.sessions SET settle_after = now() - interval '1 second' WHERE id = $1`, id)
	}
	nextLook := func(id string) int { // settle_after in Unix seconds, -1 when none
		return e.sql(`SELECT coalesce(floor(extract(epoch FROM settle_after))::int, -1) FROM checkout.sessions WHERE id = $1`, id)
	}
	clock := func() int { return e.sql(`SELECT floor(extract(epoch FROM now()))::int`) }

	// The process's recovery (a pass every 500 ms) would finish what the
	// crashes below leave before this test's sweep: kept away, the sweep
	// run by hand is what finishes them.
	pix := e.ready()
	e.g.HoldRecovery(pix.ID)
	pixShown := e.mustComplete(pix.ID, e.pix())
	due(pix.ID)
	charged := e.ready()
	e.g.HoldRecovery(charged.ID)
	e.g.Crash(charged.ID, checkout.StepCharged)
	if _, err := e.complete(charged.ID, card("tok_"+uuid.NewString()[:8]+"_4242")); err == nil {
		t.Fatal("the crash did not end the request")
	}
	due(charged.ID)
	closed := e.ready()
	e.g.HoldRecovery(closed.ID)
	a := pixAttempt(t, e.mustComplete(closed.ID, e.pix()))
	e.g.Crash(closed.ID, checkout.StepClosed)
	if _, err := e.cancel(closed.ID); err == nil {
		t.Fatal("the crash did not end the request")
	}
	if m := e.money(closed.ID); m.status != bcp.StatusCanceled || m.reserved != 1 {
		t.Fatalf("closed before its release: %+v", m)
	}
	due(closed.ID)

	swept := clock()
	if _, err := svc.SweepSettles(context.Background()); err != nil {
		t.Fatal(err)
	}
	sweptBy := clock()
	if got := e.get(pix.ID); got.Status != bcp.StatusCompleteInProgress || !equalStrings(msgs(got), msgs(pixShown)) {
		t.Errorf("unpaid Pix: %s %v", got.Status, msgs(got))
	}
	// Looked at again a minute (settleRetry) after the sweep that saw it.
	if s := nextLook(pix.ID); s < swept+60-1 || s > sweptBy+60 {
		t.Errorf("the unpaid Pix is looked at again at %d, want a minute after the sweep (%d..%d)", s, swept, sweptBy)
	}
	if m := e.settledMoney(charged.ID); m.status != bcp.StatusCompleted || m.orders != 1 {
		t.Errorf("charged then crashed: %+v", m)
	}
	if s := nextLook(charged.ID); s != -1 {
		t.Errorf("a completed checkout is due again in %d s", s)
	}
	if m := e.settledMoney(closed.ID); m.status != bcp.StatusCanceled || m.reserved != 0 {
		t.Errorf("closed: %+v", m)
	}
	if s := nextLook(closed.ID); s != -1 {
		t.Errorf("a released checkout is due again in %d s", s)
	}
	if err := e.payPix(a); err == nil {
		t.Error("the closed checkout's Pix accepted a payment")
	}
	// Nothing due now.
	if n, err := svc.SweepSettles(context.Background()); err != nil || n != 0 {
		t.Errorf("a second sweep moved %d (%v)", n, err)
	}

	// The legacy expiry job.
	old := e.ready()
	work := func() {
		t.Helper()
		w := &checkout.ExpireWorker{Service: svc}
		if err := w.Work(context.Background(), &river.Job[checkout.ExpireArgs]{Args: checkout.ExpireArgs{TenantID: e.m.TenantID, CheckoutID: old.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	work()
	if m := e.money(old.ID); m.status != bcp.StatusReadyForComplete {
		t.Errorf("before its expiry the job closed it: %s", m.status)
	}
	e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, old.ID)
	work()
	if got := e.get(old.ID); got.Status != bcp.StatusCanceled || !equalStrings(msgs(got), []string{"info expired"}) {
		t.Errorf("after its expiry: %s %v", got.Status, msgs(got))
	}
	// …and leaves a completed checkout alone.
	paid := e.ready()
	e.mustComplete(paid.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
	e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, paid.ID)
	if err := (&checkout.ExpireWorker{Service: svc}).Work(context.Background(), &river.Job[checkout.ExpireArgs]{Args: checkout.ExpireArgs{TenantID: e.m.TenantID, CheckoutID: paid.ID}}); err != nil {
		t.Fatal(err)
	}
	if m := e.settledMoney(paid.ID); m.status != bcp.StatusCompleted {
		t.Errorf("a completed checkout past its expiry: %+v", m)
	}
	if (checkout.ExpireArgs{}).Kind() != "checkout_expire" || (checkout.SweepArgs{}).Kind() != "checkout_sweep" {
		t.Error("job kinds changed: jobs already queued would not be worked")
	}
}

// A card charge the processor has not confirmed: settling it again, before
// the processor answers, changes nothing (still complete_in_progress with
// payment_processing, no new write).
func TestSettleUnconfirmedCardAgain(t *testing.T) {
	e := quietEnv(t, processorDown)
	c := e.ready()
	got := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
	if got.Status != bcp.StatusCompleteInProgress || !equalStrings(msgs(got), []string{"info payment_processing $.payment.instruments[0]"}) {
		t.Fatalf("complete with the processor down: %s %v", got.Status, msgs(got))
	}
	a := e.attemptOf(c.ID)
	version := e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, c.ID)
	if st, err := e.settlePayment(c.ID, a); err != nil || st != bcp.StatusCompleteInProgress {
		t.Fatalf("settle again: %s %v", st, err)
	}
	if v := e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, c.ID); v != version {
		t.Errorf("version %d → %d", version, v)
	}
	if again := e.get(c.ID); !equalStrings(msgs(again), msgs(got)) {
		t.Errorf("messages %v", msgs(again))
	}
	if m := e.money(c.ID); m.orders != 0 || m.reserved != 1 || m.sessionAttmpt != a {
		t.Errorf("ledgers %+v", m)
	}
}

// A session the expiry sweep cannot close (here its stored state is not a
// checkout) is logged and left for the next sweep; the others are closed
// all the same. The tenant's ExpireCheckouts reports it as an internal
// error rather than skipping it silently.
func TestExpirySweepGoesPastABrokenSession(t *testing.T) {
	e := quietEnv(t)
	broken, a, b := e.ready(), e.ready(), e.ready()
	e.exec(`UPDATE checkout.sessions SET state = '{"line_items": 5}' WHERE id = $1`, broken.ID)
	e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 minute' WHERE id = $1`, broken.ID) // listed first
	e.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`, []string{a.ID, b.ID})
	svc := checkout.New(e.r.Pool, checkout.Clients{Catalog: e.r.Clients.Catalog, Pricing: e.r.Clients.Pricing, Tenants: e.r.Clients.Tenants,
		Payments: e.r.Clients.Payments, Orders: e.r.Clients.Orders})
	n, err := svc.SweepExpired(context.Background())
	if err != nil || n != 2 {
		t.Errorf("SweepExpired = %d, %v; want 2, nil", n, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		if m := e.settledMoney(id); m.status != bcp.StatusCanceled {
			t.Errorf("%s: %s", id, m.status)
		}
	}
	if st := e.str(`SELECT status FROM checkout.sessions WHERE id = $1`, broken.ID); st != bcp.StatusReadyForComplete {
		t.Errorf("the broken session became %s", st)
	}
	_, err = e.r.Clients.Checkout.ExpireCheckouts(e.ctx, connect.NewRequest(&checkoutv1.ExpireCheckoutsRequest{}))
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Errorf("ExpireCheckouts over the broken session: %v, want internal", err)
	}
	// A read or an update that would close it first fails the same way,
	// and changes nothing.
	_, err = e.r.Clients.Checkout.GetCheckout(e.ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: broken.ID}))
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Errorf("get: %v, want internal", err)
	}
	if _, err = e.update(broken.ID, e.readyBody(broken, 1)); connect.CodeOf(err) != connect.CodeInternal {
		t.Errorf("update: %v, want internal", err)
	}
	if st := e.str(`SELECT status FROM checkout.sessions WHERE id = $1`, broken.ID); st != bcp.StatusReadyForComplete {
		t.Errorf("the broken session became %s", st)
	}
}
