package checkout_test

import (
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/jobs"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout"
)

// A dependency failing in the middle of a request, for real: PostgreSQL
// refuses one checkout's rows in one table (a trigger, below the service
// that owns the table), so the service that writes them fails as it would
// with its storage broken, and the checkout service has to cope. Each case
// says what the caller gets, that nothing half-done is left and that the
// checkout recovers once the storage answers again.

// refuse makes PostgreSQL refuse the rows of table matching when (a
// condition on NEW, or OLD for DELETE) for ops ("INSERT", "UPDATE", …)
// until the returned func runs.
func (e *env) refuse(table, ops, when string) (restore func()) {
	e.t.Helper()
	e.exec(`CREATE OR REPLACE FUNCTION public.bcp_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test (%)', TG_NAME; END $$`)
	name := "refuse_" + uuid.NewString()[:8]
	e.exec(fmt.Sprintf(`CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW WHEN (%s) EXECUTE FUNCTION public.bcp_test_refuse()`, name, ops, table, when))
	return func() { e.exec(fmt.Sprintf(`DROP TRIGGER %s ON %s`, name, table)) }
}

func is(col, id string) string { return col + " = '" + id + "'" }

// charges counts the card intents at the processor (the PSP simulator)
// under the checkout's attempts, whatever their state.
func (e *env) charges(id string) int {
	return e.sql(`SELECT count(*) FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
		WHERE a.checkout_id = $1`, id)
}

func (e *env) version(id string) int {
	return e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, id)
}

func (e *env) setPAC(price int64) {
	e.t.Helper()
	if _, err := e.r.ClientsWithToken(operatorToken).Pricing.SetShippingRate(e.ctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{
		Id: e.m.PacRate, Title: "PAC", Price: price, MinDays: 5, MaxDays: 9, Active: true, Carrier: "Correios"}})); err != nil {
		e.t.Fatal(err)
	}
}

func tok(suffix string) string { return "tok_" + uuid.NewString()[:8] + "_" + suffix }

func TestDependencyFailures(t *testing.T) {
	e := newEnv(t)

	t.Run("stock reservation fails: reopened, nothing charged, a new completion pays", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		restore := e.refuse("catalog.checkout_stock", "INSERT OR UPDATE", is("NEW.checkout_id", c.ID))
		got := e.mustComplete(c.ID, card(tok("4242")))
		restore()
		want := []string{"error " + bcp.CodePaymentFailed + " " + bcp.SeverityRecoverable + " $.payment.instruments[0]"}
		if got.Status != bcp.StatusReadyForComplete || !equalStrings(msgs(got), want) || got.Payment != nil || total(got) != 13480 {
			t.Fatalf("complete with the catalog failing: %s %v %+v %d", got.Status, msgs(got), got.Payment, total(got))
		}
		if m := e.money(c.ID); m.status != bcp.StatusReadyForComplete || m.sessionAttmpt != "" || m.reserved != 0 || m.orders != 0 || e.charges(c.ID) != 0 {
			t.Fatalf("ledgers: %+v, %d charges", m, e.charges(c.ID))
		}
		if again := e.mustComplete(c.ID, card(tok("4242"))); again.Status != bcp.StatusCompleted {
			t.Fatalf("again: %s %v", again.Status, msgs(again))
		}
		if m := e.settledMoney(c.ID); m.status != bcp.StatusCompleted {
			t.Errorf("ledgers: %+v", m)
		}
	})

	t.Run("stock release after a cancel fails: canceled now, the settle sweep releases it", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		a := pixAttempt(t, e.mustComplete(c.ID, e.pix()))
		restore := e.refuse("catalog.checkout_stock", "INSERT OR UPDATE", is("NEW.checkout_id", c.ID))
		got, err := e.cancel(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != bcp.StatusCanceled {
			t.Fatalf("cancel: %s %v", got.Status, msgs(got))
		}
		if m := e.money(c.ID); m.status != bcp.StatusCanceled || m.reserved != 1 {
			t.Fatalf("before the release: %+v", m)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND settle_after IS NOT NULL`, c.ID); n != 1 {
			t.Fatal("no release due for the settle sweep")
		}
		if err := e.payPix(a); err == nil {
			t.Error("the canceled checkout's Pix accepted a payment")
		}
		restore()
		e.due()
		if m := e.settledMoney(c.ID); m.status != bcp.StatusCanceled {
			t.Errorf("ledgers: %+v", m)
		}
		e.eventually("the release is no longer due", func() bool {
			return e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND settle_after IS NULL`, c.ID) == 1
		})
	})

	t.Run("the order fails after the card was charged: the settle sweep writes it, once", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		restore := e.refuse("orders.orders", "INSERT", is("NEW.checkout_id", c.ID))
		_, err := e.complete(c.ID, card(tok("4242")))
		if connect.CodeOf(err) != connect.CodeInternal {
			t.Fatalf("complete with the orders failing: %v, want internal", err)
		}
		if m := e.money(c.ID); m.status != bcp.StatusCompleteInProgress || m.orders != 0 || m.keptCharges != 1 || m.reserved != 1 {
			t.Fatalf("ledgers: %+v", m)
		}
		// The agent retrying meanwhile is told a payment is in progress.
		if again := e.mustComplete(c.ID, card(tok("4242"))); again.Status != bcp.StatusCompleteInProgress || !hasMessage(again, "payment_in_progress") {
			t.Errorf("retry: %s %v", again.Status, msgs(again))
		}
		restore()
		e.due()
		if m := e.settledMoney(c.ID); m.status != bcp.StatusCompleted || m.orders != 1 || m.keptCharges != 1 {
			t.Errorf("ledgers: %+v", m)
		}
		if n := e.charges(c.ID); n != 1 {
			t.Errorf("%d charges, want 1", n)
		}
	})

	t.Run("redeeming the discount fails: the order is placed all the same", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		body := e.readyBody(c, 2)
		body["discounts"] = map[string]any{"codes": []any{"BEMVINDO10"}}
		if _, err := e.update(c.ID, body); err != nil {
			t.Fatal(err)
		}
		restore := e.refuse("pricing.discount_redemptions", "INSERT", is("NEW.checkout_id", c.ID))
		defer restore()
		got := e.mustComplete(c.ID, card(tok("4242")))
		if got.Status != bcp.StatusCompleted || got.Order == nil || total(got) != 12282 {
			t.Fatalf("complete: %s %+v %d", got.Status, got.Order, total(got))
		}
		if m := e.settledMoney(c.ID); m.orders != 1 {
			t.Errorf("ledgers: %+v", m)
		}
		if n := e.sql(`SELECT count(*) FROM pricing.discount_redemptions WHERE checkout_id = $1`, c.ID); n != 0 {
			t.Errorf("%d redemptions", n)
		}
	})

	t.Run("a Pix expired and its stock release fails: the settle fails until the catalog answers", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		a := pixAttempt(t, e.mustComplete(c.ID, e.pix()))
		restore := e.refuse("catalog.stock_reservations", "UPDATE", is("NEW.checkout_id", c.ID))
		e.exec(`UPDATE payments.attempts SET expires_at = now() - interval '1 second', resolve_after = now() WHERE id = $1`, a)
		e.eventually("the payments service expires the Pix", func() bool {
			return e.sql(`SELECT count(*) FROM payments.attempts WHERE id = $1 AND status = 'expired'`, a) == 1
		})
		if _, err := e.settlePayment(c.ID, a); connect.CodeOf(err) != connect.CodeInternal {
			t.Fatalf("settle with the catalog failing: %v, want internal", err)
		}
		if m := e.money(c.ID); m.status != bcp.StatusCompleteInProgress || m.sessionAttmpt != a || m.reserved != 1 {
			t.Fatalf("ledgers: %+v", m)
		}
		restore()
		if st, err := e.settlePayment(c.ID, a); err != nil || st != bcp.StatusReadyForComplete {
			t.Fatalf("settle: %s %v", st, err)
		}
		if m := e.settledMoney(c.ID); m.status != bcp.StatusReadyForComplete || m.sessionAttmpt != "" {
			t.Errorf("ledgers: %+v", m)
		}
		if got := e.get(c.ID); !hasMessage(got, bcp.CodePaymentFailed) {
			t.Errorf("messages %v", msgs(got))
		}
	})

	t.Run("cancel of a 3-D Secure payment whose void fails: an error, nothing closed; the retry voids it", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		if got := e.mustComplete(c.ID, card(tok("3220"))); got.Status != bcp.StatusRequiresEscalation {
			t.Fatalf("3DS: %s", got.Status)
		}
		restore := e.refuse("payments.attempts", "UPDATE", is("NEW.checkout_id", c.ID))
		_, err := e.cancel(c.ID)
		restore()
		if connect.CodeOf(err) != connect.CodeInternal {
			t.Fatalf("cancel with the payments failing: %v, want internal", err)
		}
		if m := e.money(c.ID); m.status != bcp.StatusRequiresEscalation || m.sessionAttmpt == "" || m.reserved != 1 {
			t.Fatalf("ledgers: %+v", m)
		}
		got, err := e.cancel(c.ID)
		if err != nil || got.Status != bcp.StatusCanceled {
			t.Fatalf("cancel again: %v %v", got, err)
		}
		if n := e.voided(c.ID); n != 1 {
			t.Errorf("%d voided charges, want 1", n)
		}
		e.settledMoney(c.ID)
	})

	// The checkout's own writes failing: an error, and the session as it was.
	t.Run("the session's writes fail", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		restore := e.refuse("checkout.sessions", "UPDATE", is("NEW.id", c.ID))
		if _, err := e.update(c.ID, e.readyBody(c, 1)); connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("update: %v, want internal", err)
		}
		if _, err := e.cancel(c.ID); connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("cancel: %v, want internal", err)
		}
		// complete cannot claim; nor, once the PAC rate changed, save the
		// refreshed checkout.
		if _, err := e.complete(c.ID, card(tok("4242"))); connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("complete: %v, want internal", err)
		}
		e.setPAC(1800)
		if _, err := e.complete(c.ID, card(tok("4242"))); connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("complete with the PAC rate changed: %v, want internal", err)
		}
		e.setPAC(1500)
		restore()
		if m := e.money(c.ID); m.status != bcp.StatusReadyForComplete || m.sessionAttmpt != "" || m.reserved != 0 || e.charges(c.ID) != 0 {
			t.Errorf("ledgers: %+v", m)
		}
		if got := e.get(c.ID); total(got) != 13480 || e.version(c.ID) != 2 {
			t.Errorf("the session changed: %d, version %d", total(got), e.version(c.ID))
		}
		// Its first write, too: nothing is stored.
		restore = e.refuse("checkout.sessions", "INSERT", is("NEW.buyer_email", "recusado@example.com"))
		defer restore()
		_, err := e.createRaw(e.agent(), jsonBody(map[string]any{"line_items": shirts(1), "buyer": map[string]any{"email": "recusado@example.com"}}))
		if connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("create: %v, want internal", err)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE buyer_email = 'recusado@example.com'`); n != 0 {
			t.Errorf("%d sessions stored", n)
		}
	})

	t.Run("the cart's writes fail", func(t *testing.T) {
		defer e.use(t)()
		ag := e.cartAgent()
		id := e.mustCart(map[string]any{"line_items": shirts(1)})
		restore := e.refuse("checkout.carts", "UPDATE", is("NEW.id", id))
		_, err := e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: ag, Id: id, CartJson: jsonBody(map[string]any{"line_items": shirts(2)})}))
		if connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("update: %v, want internal", err)
		}
		_, err = e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: ag, Id: id}))
		if connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("cancel: %v, want internal", err)
		}
		sessions := e.sql(`SELECT count(*) FROM checkout.sessions`)
		if _, err := e.convert(ag, id); connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("convert: %v, want internal", err)
		}
		restore()
		if st := e.str(`SELECT status || ' ' || version FROM checkout.carts WHERE id = $1`, id); st != "active 1" {
			t.Errorf("cart %q, want active 1", st)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != sessions {
			t.Errorf("%d sessions, want %d", n, sessions)
		}
		carts := e.sql(`SELECT count(*) FROM checkout.carts`)
		restore = e.refuse("checkout.carts", "INSERT", "true")
		defer restore()
		if _, err := e.createCart(ag, jsonBody(map[string]any{"line_items": shirts(1)})); connect.CodeOf(err) != connect.CodeInternal {
			t.Errorf("create: %v, want internal", err)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.carts`); n != carts {
			t.Errorf("%d carts, want %d", n, carts)
		}
	})

	t.Run("a declined card whose reopen cannot be written: the settle sweep reopens it", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		restore := e.refuse("checkout.sessions", "UPDATE", is("NEW.id", c.ID)+" AND OLD.status = 'complete_in_progress'")
		_, err := e.complete(c.ID, card(tok("0002")))
		if connect.CodeOf(err) != connect.CodeInternal {
			t.Fatalf("complete: %v, want internal", err)
		}
		// Claimed and declined: the stock is back already, the session is
		// still on its attempt.
		if m := e.money(c.ID); m.status != bcp.StatusCompleteInProgress || m.sessionAttmpt == "" || m.reserved != 0 || m.keptCharges != 0 {
			t.Fatalf("ledgers: %+v", m)
		}
		restore()
		e.due()
		e.eventually("the sweep reopens it", func() bool { return e.money(c.ID).status == bcp.StatusReadyForComplete })
		if got := e.get(c.ID); got.Payment != nil || !hasMessage(got, bcp.CodePaymentFailed) {
			t.Errorf("reopened: %+v %v", got.Payment, msgs(got))
		}
		if again := e.mustComplete(c.ID, card(tok("4242"))); again.Status != bcp.StatusCompleted {
			t.Fatalf("paid again: %s %v", again.Status, msgs(again))
		}
		e.settledMoney(c.ID)
	})

	t.Run("a cart sold out since whose conversion cannot be undone: given back by the next conversion", func(t *testing.T) {
		defer e.use(t)()
		ops := e.r.ClientsWithToken(operatorToken)
		if _, err := ops.Catalog.CreateProduct(e.ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
			Id: "prd_ult", Title: "Boné", Active: true, Variants: []*catalogv1.Variant{{Id: "var_ult", Sku: "ULT", Title: "Boné verde", Price: 3990, Stock: 1, Active: true}}}})); err != nil {
			t.Fatal(err)
		}
		ag := e.cartAgent()
		id := e.mustCart(map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_ult"}, "quantity": 1}}})
		e.exec(`UPDATE catalog.variants SET stock = 0 WHERE tenant_id = $1 AND id = 'var_ult'`, e.m.TenantID)
		restore := e.refuse("checkout.carts", "UPDATE", is("NEW.id", id)+" AND NEW.status = 'active'")
		_, err := e.convert(ag, id)
		restore()
		if connect.CodeOf(err) != connect.CodeInternal {
			t.Fatalf("convert: %v, want internal", err)
		}
		reserved := e.str(`SELECT status || ' ' || checkout_id FROM checkout.carts WHERE id = $1`, id)
		if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1`, reserved[len("converted "):]); reserved[:len("converted ")] != "converted " || n != 0 {
			t.Fatalf("cart %q with %d sessions", reserved, n)
		}
		// The next conversion still has nothing to sell: no checkout, and
		// the cart is given back to its agent, as when the first
		// conversion's undo works.
		if res, err := e.convert(ag, id); err != nil || !res.GetErrorResponse() {
			t.Fatalf("convert again: %v %v", res, err)
		}
		if st := e.str(`SELECT status || ' ' || coalesce(checkout_id, '-') FROM checkout.carts WHERE id = $1`, id); st != "active -" {
			t.Errorf("cart %q after a conversion that opened nothing, want active with no checkout", st)
		}
		if _, err := e.r.Clients.Checkout.GetCart(e.ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: ag, Id: id})); err != nil {
			t.Errorf("get_cart: %v", err)
		}
		// Back in stock: the conversion opens the checkout.
		e.exec(`UPDATE catalog.variants SET stock = 1 WHERE tenant_id = $1 AND id = 'var_ult'`, e.m.TenantID)
		res, err := e.convert(ag, id)
		if err != nil {
			t.Fatal(err)
		}
		c := decode(t, res)
		if st := e.str(`SELECT status || ' ' || checkout_id FROM checkout.carts WHERE id = $1`, id); st != "converted "+c.ID || total(c) != 3990 {
			t.Errorf("opened %s (%d), cart %q", c.ID, total(c), st)
		}
	})
}

// A completion whose process died right after its claim, before the
// payments service heard of the attempt: settling it on the payments
// service's news does not give the attempt up (StartPayment may still
// come); the settle sweep does, and the checkout can be paid again.
func TestSettleOfAClaimThePaymentsServiceNeverSaw(t *testing.T) {
	e := quietEnv(t)
	c := e.ready()
	// The request dies but this process lives on: its recovery would
	// settle the claim as the sweep does on its next pass (every 500 ms),
	// before or between the steps below. Kept away here, the settle and
	// the sweeps this test runs are the only ones to act (the recovery's
	// own outcome: TestRecoveryOfAClaimThePaymentsServiceNeverSaw).
	e.g.HoldRecovery(c.ID)
	e.g.Crash(c.ID, checkout.StepClaimed)
	if _, err := e.complete(c.ID, card(tok("4242"))); err == nil {
		t.Fatal("the crash did not end the request")
	}
	a := e.attemptOf(c.ID)
	if a == "" {
		t.Fatal("no attempt claimed")
	}
	if st, err := e.settlePayment(c.ID, a); err != nil || st != bcp.StatusCompleteInProgress {
		t.Fatalf("settle: %s %v, want complete_in_progress", st, err)
	}
	if m := e.money(c.ID); m.status != bcp.StatusCompleteInProgress || m.sessionAttmpt != a || m.reserved != 0 || e.charges(c.ID) != 0 {
		t.Fatalf("ledgers: %+v", m)
	}
	if n := e.sql(`SELECT count(*) FROM payments.attempts WHERE id = $1`, a); n != 0 {
		t.Fatalf("the payments service has %d records of the attempt", n)
	}
	svc := checkout.New(e.r.Pool, checkout.Clients{Catalog: e.r.Clients.Catalog, Pricing: e.r.Clients.Pricing, Tenants: e.r.Clients.Tenants,
		Payments: e.r.Clients.Payments, Orders: e.r.Clients.Orders})
	// The payments service cannot record the attempt given up: the sweep
	// leaves the session as it is and looks again a minute later.
	e.due()
	restore := e.refuse("payments.attempts", "INSERT", is("NEW.id", a))
	if n, err := svc.SweepSettles(e.ctx); err != nil || n != 0 {
		t.Fatalf("SweepSettles with the payments failing = %d, %v; want 0, nil", n, err)
	}
	restore()
	if m := e.money(c.ID); m.status != bcp.StatusCompleteInProgress || m.sessionAttmpt != a {
		t.Fatalf("after the failed sweep: %+v", m)
	}
	if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND settle_after > now() + interval '50 seconds'`, c.ID); n != 1 {
		t.Error("not looked at again a minute later")
	}
	e.due()
	if n, err := svc.SweepSettles(e.ctx); err != nil || n != 1 {
		t.Fatalf("SweepSettles = %d, %v; want 1", n, err)
	}
	if m := e.money(c.ID); m.status != bcp.StatusReadyForComplete || m.sessionAttmpt != "" {
		t.Fatalf("after the sweep: %+v", m)
	}
	if st := e.str(`SELECT status FROM payments.attempts WHERE id = $1`, a); st != "canceled" {
		t.Errorf("the given-up attempt is %s, want canceled", st)
	}
	if got := e.mustComplete(c.ID, card(tok("4242"))); got.Status != bcp.StatusCompleted {
		t.Fatalf("paid again: %s %v", got.Status, msgs(got))
	}
	e.settledMoney(c.ID)
}

// The same claim left by a request that died in a process that lives on:
// the process's own recovery finishes it (the request is no longer
// working on it) as the settle sweep would: the attempt is stopped for
// good at the payments service (a late StartPayment charges nothing), the
// checkout opens again with nothing charged or held, and a retry under
// the completion's key is answered with that outcome.
func TestRecoveryOfAClaimThePaymentsServiceNeverSaw(t *testing.T) {
	e := quietEnv(t)
	c := e.ready()
	e.g.HoldRecovery(c.ID)
	e.g.Crash(c.ID, checkout.StepClaimed)
	inst := card(tok("4242"))
	if _, err := e.keyedComplete(c.ID, "k-claimed", inst); err == nil {
		t.Fatal("the crash did not end the request")
	}
	a := e.attemptOf(c.ID)
	if a == "" {
		t.Fatal("no attempt claimed")
	}
	// Held: the claim is the process's, unsettled, unknown to the payments
	// service; a retry under the key is told the completion is in flight.
	if n := e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND status = 'complete_in_progress' AND settle_owner IS NOT NULL`, c.ID); n != 1 {
		t.Fatal("the claim is not left owned by the process")
	}
	if n := e.sql(`SELECT count(*) FROM payments.attempts WHERE id = $1`, a); n != 0 {
		t.Fatalf("the payments service has %d records of the attempt", n)
	}
	_, err := e.keyedComplete(c.ID, "k-claimed", inst)
	wantCode(t, err, connect.CodeAborted, "request_in_flight")

	e.g.ReleaseRecovery(c.ID)
	// The recovery's next pass (asynchronous: polled, not timed).
	e.eventually("the recovery finishes the claim", func() bool {
		return e.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND settle_owner IS NULL`, c.ID) == 1
	})
	if m := e.money(c.ID); m.status != bcp.StatusReadyForComplete || m.sessionAttmpt != "" || m.reserved != 0 || m.orders != 0 || e.charges(c.ID) != 0 {
		t.Fatalf("after the recovery: %+v, %d charges", m, e.charges(c.ID))
	}
	if st := e.str(`SELECT status FROM payments.attempts WHERE id = $1`, a); st != "canceled" {
		t.Errorf("the given-up attempt is %s, want canceled", st)
	}
	if got := e.keyRow("k-claimed"); got != "done" {
		t.Errorf("key after the recovery: %q, want done", got)
	}
	again, err := e.keyedComplete(c.ID, "k-claimed", inst)
	if err != nil {
		t.Fatalf("same-key retry after the recovery: %v, want its outcome", err)
	}
	if got := decode(t, again); got.Status != bcp.StatusReadyForComplete || total(got) != 13480 {
		t.Errorf("same-key retry answered %s %v (%d)", got.Status, msgs(got), total(got))
	}
	if e.charges(c.ID) != 0 {
		t.Error("the retry charged")
	}
	if got := e.mustComplete(c.ID, card(tok("4242"))); got.Status != bcp.StatusCompleted {
		t.Fatalf("paid again: %s %v", got.Status, msgs(got))
	}
	e.settledMoney(c.ID)
}

// A checkout is its agent's: another agent of the same merchant gets
// not_found on a read, as on every other call.
func TestAnotherAgentsCheckoutIsNotFound(t *testing.T) {
	e := newEnv(t)
	c := e.ready()
	_, err := e.r.Clients.Checkout.GetCheckout(e.ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: c.ID,
		Agent: &checkoutv1.Agent{ProfileUrl: "https://outra.example/profile.json"}}))
	wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	r, err := e.r.Clients.Checkout.GetCheckout(e.ctx, connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: c.ID, Agent: e.agent()}))
	if err != nil || r.Msg.GetResult().GetStatus() != bcp.StatusReadyForComplete {
		t.Fatalf("its own agent: %v", err)
	}
}

// Both of the checkout's own job kinds run on its queue, the legacy expiry
// jobs still queued included.
func TestJobQueues(t *testing.T) {
	for kind, opts := range map[string]river.InsertOpts{
		(checkout.SweepArgs{}).Kind(): (checkout.SweepArgs{}).InsertOpts(), (checkout.ExpireArgs{}).Kind(): (checkout.ExpireArgs{}).InsertOpts(),
	} {
		if opts.Queue != jobs.QueueCheckout {
			t.Errorf("%s jobs go to queue %q, want %q", kind, opts.Queue, jobs.QueueCheckout)
		}
	}
}

// lose makes every write of table's rows matching when lose its race
// until the returned func runs: PostgreSQL skips the row (a BEFORE
// trigger returning NULL), so the optimistic write matches no row, exactly
// as when another request changed the row since it was read.
func (e *env) lose(table, ops, when string) (restore func()) {
	e.t.Helper()
	e.exec(`CREATE OR REPLACE FUNCTION public.bcp_test_lose() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`)
	name := "lose_" + uuid.NewString()[:8]
	e.exec(fmt.Sprintf(`CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW WHEN (%s) EXECUTE FUNCTION public.bcp_test_lose()`, name, ops, table, when))
	return func() { e.exec(fmt.Sprintf(`DROP TRIGGER %s ON %s`, name, table)) }
}

// Writes that keep losing their race: the ones that cannot retry say
// concurrent_update at once, the ones that do retry give up after a few
// tries with the same; nothing is written either way, and the next
// request goes through.
func TestWritesThatKeepLosingTheirRace(t *testing.T) {
	e := newEnv(t)
	aborted := func(t *testing.T, what string, err error) {
		t.Helper()
		if connect.CodeOf(err) != connect.CodeAborted || apperr.As(err).Code != "concurrent_update" {
			t.Errorf("%s: %v, want aborted concurrent_update", what, err)
		}
	}

	t.Run("checkout", func(t *testing.T) {
		defer e.use(t)()
		c := e.ready()
		restore := e.lose("checkout.sessions", "UPDATE", is("NEW.id", c.ID))
		_, err := e.update(c.ID, e.readyBody(c, 1))
		aborted(t, "update", err)
		_, err = e.cancel(c.ID)
		aborted(t, "cancel", err)
		restore()
		if m := e.money(c.ID); m.status != bcp.StatusReadyForComplete || e.version(c.ID) != 2 {
			t.Errorf("the session changed: %+v version %d", m, e.version(c.ID))
		}
		if got, err := e.update(c.ID, e.readyBody(c, 1)); err != nil || total(got) != 5990+1500 {
			t.Errorf("update afterwards: %v", err)
		}
		if got, err := e.cancel(c.ID); err != nil || got.Status != bcp.StatusCanceled {
			t.Errorf("cancel afterwards: %v", err)
		}
	})

	t.Run("cart", func(t *testing.T) {
		defer e.use(t)()
		ag := e.cartAgent()
		id := e.mustCart(map[string]any{"line_items": shirts(1)})
		restore := e.lose("checkout.carts", "UPDATE", is("NEW.id", id))
		_, err := e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: ag, Id: id, CartJson: jsonBody(map[string]any{"line_items": shirts(2)})}))
		aborted(t, "update", err)
		_, err = e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: ag, Id: id}))
		aborted(t, "cancel", err)
		sessions := e.sql(`SELECT count(*) FROM checkout.sessions`)
		_, err = e.convert(ag, id)
		aborted(t, "convert", err)
		restore()
		if st := e.str(`SELECT status || ' ' || version FROM checkout.carts WHERE id = $1`, id); st != "active 1" {
			t.Errorf("cart %q, want active 1", st)
		}
		if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != sessions {
			t.Errorf("%d sessions, want %d", n, sessions)
		}
		if res, err := e.convert(ag, id); err != nil || decode(t, res).Status == "" {
			t.Errorf("convert afterwards: %v", err)
		}
	})
}

// An unknown cart id is not found on every cart operation and on a
// conversion.
func TestUnknownCart(t *testing.T) {
	e := newEnv(t)
	ag := e.cartAgent()
	_, err := e.r.Clients.Checkout.GetCart(e.ctx, connect.NewRequest(&checkoutv1.GetCartRequest{Agent: ag, Id: "cart_nope"}))
	wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	_, err = e.r.Clients.Checkout.UpdateCart(e.ctx, connect.NewRequest(&checkoutv1.UpdateCartRequest{Agent: ag, Id: "cart_nope", CartJson: jsonBody(map[string]any{"line_items": shirts(1)})}))
	wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	_, err = e.r.Clients.Checkout.CancelCart(e.ctx, connect.NewRequest(&checkoutv1.CancelCartRequest{Agent: ag, Id: "cart_nope"}))
	wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	_, err = e.convert(ag, "cart_nope")
	wantErr(t, err, connect.CodeNotFound, bcp.CodeNotFound, "")
	if n := e.sql(`SELECT count(*) FROM checkout.sessions`); n != 0 {
		t.Errorf("%d sessions", n)
	}
}
