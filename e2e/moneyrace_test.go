package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout"
	"github.com/bcpdev/bcp/services/checkout/hooktest"
)

// cancel_checkout racing complete_checkout over MCP, 100 rounds by card
// and Pix (issue 20). Most rounds force one interleaving with the
// checkout's hooks — the completion held between two of its steps while
// a cancel, an expiry or another completion runs to its end — and the
// rest let 5 completes race 5 cancels freely. Every round must end
// completed with exactly one order and one kept payment and its stock
// taken, or canceled with no order, no money kept and its stock back.
// On the code before the fence, the rounds that cancel after the claim or
// after the reservation ended canceled with an order and an approved
// charge (and the free races did, 13 times in 30).
func TestCancelRacesComplete(t *testing.T) {
	const host = "corrida-total.localhost"
	gate := &hooktest.Gate{}
	s := newShopperWith(t, 0, func(c *platform.Config) { c.CheckoutHooks = gate.Hooks() }, host)
	tid := s.merchant[host].tenantID
	s.exec(`UPDATE catalog.variants SET stock = 100000 WHERE tenant_id = $1 AND id = 'var_cam'`, tid)
	a := s.agents[host]
	cancelArgs := func(id string) map[string]any {
		return map[string]any{"id": id, "meta": map[string]any{"ucp-agent": map[string]any{"profile": s.profile}, "idempotency-key": uuid.NewString()}}
	}
	completeRaw := func(id string, inst map[string]any) (*bcp.Checkout, error) {
		args := completeArgs(id, uuid.NewString(), inst)
		args["meta"].(map[string]any)["ucp-agent"] = map[string]any{"profile": s.profile}
		res, err := a.callErr("complete_checkout", args)
		if err != nil {
			return nil, err
		}
		return decodeCheckout(t, res), nil
	}
	cancel := func(id string) *bcp.Checkout {
		_, c := a.call("cancel_checkout", cancelArgs(id))
		return c
	}
	pay := func(attemptID string) error {
		ctx := tenancy.With(context.Background(), tid)
		_, err := s.r.ClientsWithToken(operatorToken).Payments.SimulatePixPayment(ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: attemptID}))
		return err
	}
	// held runs a completion held at step while during runs, then lets it
	// go on; it returns what the completion answered.
	held := func(id string, inst map[string]any, step checkout.Step, during func()) *bcp.Checkout {
		gate.Hold(id, step)
		done := make(chan *bcp.Checkout, 1)
		go func() {
			c, err := completeRaw(id, inst)
			if err != nil {
				t.Errorf("complete: %v", err)
			}
			done <- c
		}()
		select {
		case <-gate.Reached():
		case <-time.After(30 * time.Second):
			t.Fatalf("the completion never reached %s", step)
		}
		during()
		gate.Release()
		return <-done
	}
	type round struct {
		name string
		pix  bool
		want string // "" when either end is right (free races)
		run  func(c *bcp.Checkout, inst map[string]any)
	}
	kinds := []round{
		{"5 completes race 5 cancels", false, "", func(c *bcp.Checkout, inst map[string]any) {
			var wg sync.WaitGroup
			for i := 0; i < 5; i++ {
				wg.Add(2)
				go func() { defer wg.Done(); _, _ = completeRaw(c.ID, inst) }()
				go func() { defer wg.Done(); _, _ = a.callErr("cancel_checkout", cancelArgs(c.ID)) }()
			}
			wg.Wait()
		}},
		{"cancel after the claim", false, bcp.StatusCanceled, func(c *bcp.Checkout, inst map[string]any) {
			if got := held(c.ID, inst, checkout.StepClaimed, func() { cancel(c.ID) }); got != nil && got.Status != bcp.StatusCanceled {
				t.Errorf("complete answered %s", got.Status)
			}
		}},
		{"cancel after the reservation", false, bcp.StatusCanceled, func(c *bcp.Checkout, inst map[string]any) {
			held(c.ID, inst, checkout.StepReserved, func() { cancel(c.ID) })
		}},
		{"cancel after the charge", false, bcp.StatusCompleted, func(c *bcp.Checkout, inst map[string]any) {
			held(c.ID, inst, checkout.StepCharged, func() {
				if got := cancel(c.ID); got.Status != bcp.StatusCompleted || !hasMessage(got, "error", bcp.CodeCheckoutNotModifiable, "$.status") {
					t.Errorf("cancel after the charge: %s %+v", got.Status, got.Messages)
				}
			})
		}},
		{"cancel after the order", false, bcp.StatusCompleted, func(c *bcp.Checkout, inst map[string]any) {
			held(c.ID, inst, checkout.StepOrdered, func() { cancel(c.ID) })
		}},
		{"5 completes with different keys", false, bcp.StatusCompleted, func(c *bcp.Checkout, inst map[string]any) {
			var wg sync.WaitGroup
			for i := 0; i < 5; i++ {
				wg.Add(1)
				go func() { defer wg.Done(); _, _ = completeRaw(c.ID, inst) }()
			}
			wg.Wait()
		}},
		{"expiry while a completion is claimed", false, bcp.StatusCompleted, func(c *bcp.Checkout, inst map[string]any) {
			held(c.ID, inst, checkout.StepClaimed, func() {
				s.exec(`UPDATE checkout.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, c.ID)
				ctx := tenancy.With(context.Background(), tid)
				if _, err := s.r.Clients.Checkout.ExpireCheckouts(ctx, connect.NewRequest(&checkoutv1.ExpireCheckoutsRequest{})); err != nil {
					t.Error(err)
				}
				if _, got := a.call("get_checkout", map[string]any{"id": c.ID}); got.Status != bcp.StatusCompleteInProgress {
					t.Errorf("the expiry closed a completion in flight: %s", got.Status)
				}
			})
		}},
		{"Pix: cancel races the buyer's payment", true, "", func(c *bcp.Checkout, inst map[string]any) {
			got, err := completeRaw(c.ID, inst)
			if err != nil {
				t.Fatal(err)
			}
			attempt := pixOf(t, got).Pix.AttemptID
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = a.callErr("cancel_checkout", cancelArgs(c.ID)) }()
			go func() { defer wg.Done(); _ = pay(attempt) }()
			wg.Wait()
		}},
		{"Pix: cancel after the reservation", true, bcp.StatusCanceled, func(c *bcp.Checkout, inst map[string]any) {
			held(c.ID, inst, checkout.StepReserved, func() { cancel(c.ID) })
			if n := s.sql(`SELECT count(*) FROM pspsim.charges ch JOIN payments.attempts at ON at.txid = ch.txid
				WHERE at.checkout_id = $1 AND ch.status = 'ATIVA'`, c.ID); n != 0 {
				t.Errorf("%d payable Pix charges for a canceled checkout", n)
			}
		}},
		{"Pix: paid, then canceled", true, bcp.StatusCompleted, func(c *bcp.Checkout, inst map[string]any) {
			got, err := completeRaw(c.ID, inst)
			if err != nil {
				t.Fatal(err)
			}
			if err := pay(pixOf(t, got).Pix.AttemptID); err != nil {
				t.Fatal(err)
			}
			if got := cancel(c.ID); got.Status != bcp.StatusCompleted {
				t.Errorf("cancel after the PSP took the money: %s", got.Status)
			}
		}},
	}
	outcomes := map[string]int{}
	orders := 0
	for i := 0; i < 100; i++ {
		k := kinds[i%len(kinds)]
		c := s.ready(host)
		inst := cardInstrument(fmt.Sprintf("tok_round%03d_4242", i))
		if k.pix {
			inst = s.pixInstrument(host)
		}
		k.run(c, inst)
		final := s.settledRound(c.ID)
		if k.want != "" && final != k.want {
			t.Errorf("round %d (%s): ended %s, want %s", i, k.name, final, k.want)
		}
		outcomes[k.name+" → "+final]++
		if final == bcp.StatusCompleted {
			orders++
		}
	}
	if got := s.sql(`SELECT stock::int FROM catalog.variants WHERE tenant_id = $1 AND id = 'var_cam'`, tid); got != 100000-2*orders {
		t.Errorf("stock %d, want %d (%d orders of 2)", got, 100000-2*orders, orders)
	}
	b, _ := json.MarshalIndent(outcomes, "", "  ")
	t.Logf("100 rounds, %d orders: %s", orders, b)
}

// settledRound waits for a round's checkout to settle and checks the
// money invariant on the ledgers of every party: the session, orders, the
// PSP simulator's card intents and Pix, and the stock reservations.
func (s *shopper) settledRound(id string) string {
	s.t.Helper()
	var status, last string
	deadline := time.Now().Add(60 * time.Second)
	for !func() bool {
		status = ""
		if n := s.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND status = 'completed'`, id); n == 1 {
			status = bcp.StatusCompleted
		} else if n := s.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND status = 'canceled'`, id); n == 1 {
			status = bcp.StatusCanceled
		} else if n := s.sql(`SELECT count(*) FROM checkout.sessions WHERE id = $1 AND status = 'complete_in_progress'`, id); n == 1 {
			// A Pix nobody paid (a free race whose payment lost): cancel it.
			_, _ = s.agents[s.hostOf(id)].callErr("cancel_checkout", map[string]any{"id": id,
				"meta": map[string]any{"ucp-agent": map[string]any{"profile": s.profile}, "idempotency-key": uuid.NewString()}})
			return false
		}
		orders := s.sql(`SELECT count(*) FROM orders.orders WHERE checkout_id = $1`, id)
		// The simulator's ledgers (its accounts are its own tenants; txids
		// and attempt ids are globally unique).
		charges := s.sql(`SELECT count(*) FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
			WHERE a.checkout_id = $1 AND c.status = 'succeeded' AND c.amount_refunded < c.amount`, id)
		pix := s.sql(`SELECT count(*) FROM pspsim.pix p JOIN payments.attempts a ON a.txid = p.txid
			WHERE a.checkout_id = $1 AND NOT EXISTS (SELECT 1 FROM pspsim.refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id AND r.status = 'DEVOLVIDO')`, id)
		reserved := s.sql(`SELECT count(*) FROM catalog.stock_reservations WHERE checkout_id = $1 AND state = 'reserved'`, id)
		last = fmt.Sprintf("%s: %d orders, %d kept charges, %d kept Pix, %d reservations", status, orders, charges, pix, reserved)
		switch status {
		case bcp.StatusCompleted:
			return orders == 1 && charges+pix == 1 && reserved == 1
		case bcp.StatusCanceled:
			return orders == 0 && charges+pix == 0 && reserved == 0
		}
		return false
	}() {
		if time.Now().After(deadline) {
			s.t.Fatalf("checkout %s did not settle with its money in 60s: %s", id, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return status
}

func (s *shopper) hostOf(checkoutID string) string {
	for h, m := range s.merchant {
		if s.sql(`SELECT count(*) FROM checkout.sessions WHERE tenant_id = $1 AND id = $2`, m.tenantID, checkoutID) == 1 {
			return h
		}
	}
	return ""
}
