package checkout_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout"
)

// errorsOf lists a checkout's error messages as "code severity path".
func errorsOf(c *bcp.Checkout) []string {
	var out []string
	for i, m := range c.Messages {
		if m.Type == bcp.MessageError {
			out = append(out, msgs(c)[i])
		}
	}
	return out
}

// A complete_checkout that loses the claim (it found the checkout ready,
// then another request wrote first) answers what won without
// contradicting it (issue 32): a checkout another completion completed is
// completed with already_completed and no error (it used to carry
// payment_in_progress); one a cancel closed is canceled with
// checkout_not_modifiable saying so. Nothing is charged twice. Both ways
// a completion starts: from the session as this process last wrote it
// (seen.go: the fence refuses the claim and the completion reads again),
// and from a fresh read (its claim refused, it reads what won).
func TestCompleteThatLostTheClaim(t *testing.T) {
	e := newEnv(t)
	tok := func() map[string]any { return card("tok_" + uuid.NewString()[:8] + "_4242") }
	// forget makes this process forget the session as it wrote it: a
	// completion without an instrument takes the remembered session and
	// answers from a fresh read, writing nothing.
	forget := func(t *testing.T, id string) {
		r, err := e.r.Clients.Checkout.CompleteCheckout(e.ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{Agent: e.agent(), Id: id,
			CheckoutJson: jsonBody(map[string]any{"payment": map[string]any{"instruments": []any{}}})}))
		if err != nil {
			t.Fatal(err)
		}
		if got := decode(t, r.Msg.GetResult()); got.Status != bcp.StatusReadyForComplete {
			t.Fatalf("forget: %s %v", got.Status, msgs(got))
		}
	}
	for _, start := range []string{"remembered", "read"} {
		for _, tc := range []struct {
			name   string
			winner func(t *testing.T, id string) *bcp.Checkout
			status string
			first  string // the loser's first message
		}{
			{"another completion", func(t *testing.T, id string) *bcp.Checkout {
				got, err := e.complete(id, tok())
				if err != nil {
					t.Fatal(err)
				}
				return got
			}, bcp.StatusCompleted, "info already_completed $.order"},
			{"a cancel", func(t *testing.T, id string) *bcp.Checkout {
				got, err := e.cancel(id)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}, bcp.StatusCanceled, "error " + bcp.CodeCheckoutNotModifiable + " recoverable $.status"},
		} {
			t.Run(start+"/"+tc.name, func(t *testing.T) {
				defer e.use(t)()
				c := e.ready()
				if start == "read" {
					forget(t, c.ID)
				}
				e.g.Hold(c.ID, checkout.StepReady)
				done := make(chan *bcp.Checkout, 1)
				go func() {
					got, err := e.complete(c.ID, tok())
					if err != nil {
						t.Errorf("held complete: %v", err)
					}
					done <- got
				}()
				<-e.g.Reached()
				won := tc.winner(t, c.ID)
				e.g.Release()
				lost := <-done
				if won.Status != tc.status {
					t.Fatalf("the winner answered %s %v, want %s", won.Status, msgs(won), tc.status)
				}
				if lost == nil {
					t.Fatal("no answer")
				}
				if lost.Status != tc.status || len(lost.Messages) == 0 || msgs(lost)[0] != tc.first {
					t.Errorf("the loser answered %s %v, want %s with %q first", lost.Status, msgs(lost), tc.status, tc.first)
				}
				if tc.status == bcp.StatusCompleted {
					if errs := errorsOf(lost); len(errs) > 0 {
						t.Errorf("completed with errors %v", errs)
					}
					if lost.Order == nil || won.Order == nil || lost.Order.ID != won.Order.ID {
						t.Errorf("order %+v, want the winner's %+v", lost.Order, won.Order)
					}
				}
				m := e.settledMoney(c.ID)
				if m.status != tc.status || (tc.status == bcp.StatusCompleted) != (m.orders == 1) || m.orders > 1 {
					t.Errorf("ledgers %+v", m)
				}
				if n := e.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, c.ID); tc.status == bcp.StatusCompleted && n != 1 || tc.status == bcp.StatusCanceled && n != 0 {
					t.Errorf("%d payment attempts", n)
				}
			})
		}
	}
}
