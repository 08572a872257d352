package checkout_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/protocol/bcp"
)

// maxDecodesPerComplete is how many times one card complete_checkout may
// parse a checkout document in the whole process (every service's
// bcp.DecodeCheckout): the agent's payment. The session's checkout and its
// stored request come from the ones this process wrote at the update, and
// travel decoded from there; pricing, payments and orders take typed
// messages (issue 35: about nine before, then two).
const maxDecodesPerComplete = 1

// maxEncodesPerComplete is how many checkout documents it may write: the
// session as claimed (complete_in_progress) and as settled (completed),
// each once (issue 35: about seven before).
const maxEncodesPerComplete = 2

// TestCompleteDecodesTheCheckout counts the checkout documents a card
// completion decodes and encodes, everything in one process (catalog,
// pricing, payments, orders, the PSP simulator), on the common path: the
// agent completes right after the update that made the checkout ready.
// The counters are the process's, so nothing else may run meanwhile: the
// sweeps are quiet, and the follow-up work a completion leaves (a payment
// event) is counted after it, separately.
func TestCompleteDecodesTheCheckout(t *testing.T) {
	e := quietEnv(t)
	c := e.ready()

	// An update right after another: the agent's request is the one
	// document parsed (the session's checkout is the one this process
	// wrote; pricing takes typed lines, methods and codes).
	dec0, enc0 := bcp.CheckoutCodecCounts()
	if u, err := e.update(c.ID, e.readyBody(c, 2)); err != nil || u.Status != bcp.StatusReadyForComplete || total(u) != 13480 {
		t.Fatalf("update: %v %+v", err, u)
	}
	dec1, enc1 := bcp.CheckoutCodecCounts()
	t.Logf("one update_checkout: %d checkout decodes, %d encodes", dec1-dec0, enc1-enc0)
	if dec1-dec0 != 1 {
		t.Errorf("one update_checkout decoded the checkout %d times, want 1 (the agent's request)", dec1-dec0)
	}

	dec0, enc0 = bcp.CheckoutCodecCounts()
	done := e.mustComplete(c.ID, card("tok_"+uuid.NewString()[:8]+"_4242"))
	dec1, enc1 = bcp.CheckoutCodecCounts()
	if done.Status != bcp.StatusCompleted || done.Order == nil || total(done) != 13480 {
		t.Fatalf("complete: %s order %+v total %d", done.Status, done.Order, total(done))
	}
	decodes, encodes := dec1-dec0, enc1-enc0
	t.Logf("one complete_checkout: %d checkout decodes, %d encodes", decodes, encodes)
	if decodes > maxDecodesPerComplete {
		t.Errorf("one complete_checkout decoded the checkout %d times, want at most %d", decodes, maxDecodesPerComplete)
	}
	if encodes > maxEncodesPerComplete {
		t.Errorf("one complete_checkout encoded the checkout %d times, want at most %d", encodes, maxEncodesPerComplete)
	}
	if decodes < 1 || encodes < 1 {
		t.Errorf("counted %d decodes and %d encodes: the counters are not reached", decodes, encodes)
	}

	// The work a completion leaves behind (the payments service's news of
	// the attempt, worked by SettleWorker) is done once no job is left.
	e.eventually("no checkout or payments job left", func() bool {
		return e.sql(`SELECT count(*) FROM river.river_job WHERE kind <> 'checkout_sweep' AND state NOT IN ('completed', 'discarded', 'cancelled')`) == 0
	})
	dec2, enc2 := bcp.CheckoutCodecCounts()
	t.Logf("after its follow-up jobs: %d more decodes, %d more encodes", dec2-dec1, enc2-enc1)
}
