package checkout_test

import (
	"testing"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// A session negotiated with AP2 stays locked to it (upstream: neither party
// may revert): a completion whose agent no longer lists AP2 still needs the
// mandate, and is refused with mandate_required, nothing written.
func TestAP2SessionStaysLocked(t *testing.T) {
	e := newEnv(t)
	// A ready checkout whose last write was negotiated with AP2 (as its
	// stored capabilities say); the completing agent no longer lists it.
	id := e.ready().ID
	e.exec(`UPDATE checkout.sessions SET capabilities = capabilities || ARRAY[$2] WHERE id = $1`, id, bcpnames.AP2Mandate)
	before := e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, id)
	got, err := e.complete(id, card("tok_lock_4242"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != bcp.StatusReadyForComplete || len(got.Messages) == 0 || got.Messages[0].Code != "mandate_required" || got.Messages[0].Path != "$.ap2.checkout_mandate" {
		t.Fatalf("complete without AP2 in the agent's set: %s %+v", got.Status, got.Messages)
	}
	if after := e.sql(`SELECT version FROM checkout.sessions WHERE id = $1`, id); after != before {
		t.Fatalf("version %d → %d", before, after)
	}
	if n := e.sql(`SELECT count(*) FROM payments.attempts WHERE checkout_id = $1`, id); n != 0 {
		t.Fatalf("%d attempts", n)
	}
}
