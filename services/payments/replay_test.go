package payments_test

import (
	"testing"

	"connectrpc.com/connect"
)

// StartPayment does not read before inserting: a repeat of an attempt is
// recognised by the insert's conflict, whichever unique index (the attempt
// id, or the one live attempt per checkout) reports it. A repeat gets the
// stored attempt; a different request under the same id and a second
// attempt for a checkout with a live one are refused.
func TestStartPaymentRepeatOfLiveAttempt(t *testing.T) {
	e := newEnv(t)
	req := startReq(e.a, "chk_repeat", 4321, pixInstrument)
	a := e.start(e.a, req)
	if a.GetStatus() != statusPending {
		t.Fatalf("first: %v", a.GetStatus())
	}
	again := e.start(e.a, req)
	if again.GetId() != a.GetId() || again.GetStatus() != statusPending || again.GetDisplayJson() != a.GetDisplayJson() ||
		!again.GetUpdateTime().AsTime().Equal(a.GetUpdateTime().AsTime()) {
		t.Fatalf("repeat: %v, want the stored %v", again, a)
	}
	if n := e.simCharges(e.a); n != 1 {
		t.Fatalf("%d PSP charges after a repeat, want 1", n)
	}
	changed := startReq(e.a, "chk_repeat", 9999, pixInstrument)
	changed.AttemptId = req.AttemptId
	_, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(changed))
	if got := codeOf(err); got != "failed_precondition/attempt_conflict" {
		t.Fatalf("same id, other amount: %s", got)
	}
	_, err = e.client.StartPayment(e.a.ctx, connect.NewRequest(startReq(e.a, "chk_repeat", 4321, pixInstrument)))
	if got := codeOf(err); got != "failed_precondition/payment_in_progress" {
		t.Fatalf("second attempt for the checkout: %s", got)
	}
}
