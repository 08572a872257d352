package payments_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/lease"
)

// A card charge the processor did not answer, in a process that lives on,
// is settled by that process's own recovery on its next pass, not by the
// resolve sweep two minutes later (make chaos found a checkout left
// complete_in_progress so after a restart: its retried charge met a 500).
func TestUnansweredCardChargeIsRecoveredAtOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h, err := lease.Start(ctx, e.db.AppURL, "payments-test", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	e.svc.UseHolder(h)

	e.sim.SetFaults("error5xx=1")
	req := startReq(e.a, "chk_card_unanswered", 25990, cardInstrument(tokenCred("tok_visa_4242"), "visa", "4242"))
	_, err = e.client.StartPayment(e.a.ctx, connect.NewRequest(req))
	if err == nil || apperr.As(err).Kind != apperr.KindUnavailable {
		t.Fatalf("StartPayment with the processor failing: %v, want unavailable", err)
	}
	if a := e.get(e.a, req.GetAttemptId()); a.GetStatus() != statusPending {
		t.Fatalf("after the failed charge: %v, want pending", a.GetStatus())
	}
	e.sim.SetFaults("")
	n, err := e.svc.Recover(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Recover: %d attempts, %v; want 1", n, err)
	}
	// The processor never made the sale (503 before it), so the attempt
	// fails and nothing was charged.
	if a := e.get(e.a, req.GetAttemptId()); a.GetStatus() != statusFailed {
		t.Fatalf("after recovery: %v, want failed", a.GetStatus())
	}
	if c := e.cardCharges(e.a); c != 0 {
		t.Errorf("%d processor charges, want 0", c)
	}
	// Done: a second pass has nothing left.
	if n, err := e.svc.Recover(ctx); err != nil || n != 0 {
		t.Errorf("second pass: %d, %v", n, err)
	}
}
