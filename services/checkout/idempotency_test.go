package checkout

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
)

// A key claimed by a request that never finished (its process was killed,
// or the database went away before the key could be released) is handed
// to a retry of the same request once the lease has passed — not answered
// request_in_flight for 48 h. Before the lease, and for another request
// under that key, nothing changes. Regression found with cmd/bcpchaos.
func TestAbandonedClaimIsTakenOver(t *testing.T) {
	d := testdb.New(t)
	now := time.Now()
	s := New(d.Pool, Clients{})
	s.now = func() time.Time { return now }
	ctx := tenancy.With(context.Background(), uuid.New())
	hash := sha256.Sum256([]byte("complete_checkout\n{...}"))
	other := sha256.Sum256([]byte("complete_checkout\n{other}"))
	claim := func(h [32]byte) checkoutv1.ClaimIdempotencyKeyResponse_Outcome {
		t.Helper()
		r, err := s.ClaimIdempotencyKey(ctx, connect.NewRequest(&checkoutv1.ClaimIdempotencyKeyRequest{Scope: "mcp agent complete_checkout", Key: "k1", RequestHash: h[:]}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetOutcome()
	}
	const (
		execute  = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_EXECUTE
		inFlight = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_IN_FLIGHT
		conflict = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_CONFLICT
	)
	if got := claim(hash); got != execute {
		t.Fatalf("first claim: %v", got)
	}
	// The claimant dies here: no Finish, no Release.
	if got := claim(hash); got != inFlight {
		t.Fatalf("retry within the lease: %v, want in flight", got)
	}
	now = now.Add(inFlightLease + time.Minute)
	if got := claim(other); got != conflict {
		t.Fatalf("another request under the key after the lease: %v, want conflict", got)
	}
	if got := claim(hash); got != execute {
		t.Fatalf("retry after the lease: %v, want execute (take over the abandoned claim)", got)
	}
	if got := claim(hash); got != inFlight {
		t.Fatalf("retry right after the takeover: %v, want in flight (the new claim holds)", got)
	}
	if _, err := s.FinishIdempotencyKey(ctx, connect.NewRequest(&checkoutv1.FinishIdempotencyKeyRequest{Scope: "mcp agent complete_checkout", Key: "k1", Response: []byte(`{"ok":true}`)})); err != nil {
		t.Fatal(err)
	}
	now = now.Add(inFlightLease + time.Minute)
	if got := claim(hash); got != checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_REPLAY {
		t.Fatalf("retry of a finished request: %v, want replay (a done key is never taken over)", got)
	}
}
