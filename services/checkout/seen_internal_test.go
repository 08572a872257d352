package checkout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The remembered sessions: taken once, per tenant, within their lifetime,
// never without their xmin, and bounded in number.
func TestSeenSessionsBounds(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	ta, tb := uuid.New(), uuid.New()
	c := newSeenSessions()

	c.put(session{TenantID: ta, ID: "chk_1", Version: 3}, nil, nil, 77, t0)
	if _, ok := c.take(tb, "chk_1", t0); ok {
		t.Fatal("another tenant took tenant a's chk_1")
	}
	e, ok := c.take(ta, "chk_1", t0.Add(seenTTL))
	if !ok || e.sess.Version != 3 || e.xmin != 77 {
		t.Fatalf("take at the end of its lifetime: %v %d %d", ok, e.sess.Version, e.xmin)
	}
	if _, ok := c.take(ta, "chk_1", t0); ok {
		t.Fatal("taken twice: two requests would start from one copy")
	}

	c.put(session{TenantID: ta, ID: "chk_2"}, nil, nil, 78, t0)
	if _, ok := c.take(ta, "chk_2", t0.Add(seenTTL+time.Nanosecond)); ok {
		t.Fatal("taken after its lifetime")
	}
	c.put(session{TenantID: ta, ID: "chk_3"}, nil, nil, 0, t0)
	if _, ok := c.take(ta, "chk_3", t0); ok {
		t.Fatal("a session without its xmin was remembered: nothing could fence its write")
	}

	// At the cap, the expired go first, then arbitrary ones down to 3/4.
	for i := range seenMax {
		at := t0
		if i%2 == 0 {
			at = t0.Add(-2 * seenTTL) // expired by t0
		}
		c.put(session{TenantID: ta, ID: fmt.Sprintf("chk_%d", i)}, nil, nil, int64(i+1), at)
	}
	if len(c.m) != seenMax {
		t.Fatalf("%d entries before the cap, want %d", len(c.m), seenMax)
	}
	c.put(session{TenantID: tb, ID: "chk_new"}, nil, nil, 1, t0)
	if n := len(c.m); n != seenMax/2+1 {
		t.Errorf("%d entries after trimming the expired half, want %d", n, seenMax/2+1)
	}
	for k, e := range c.m {
		if t0.Sub(e.at) > seenTTL {
			t.Fatalf("expired %v kept", k)
		}
	}
	for i := range seenMax {
		c.put(session{TenantID: tb, ID: fmt.Sprintf("chk_b%d", i)}, nil, nil, 1, t0)
	}
	if n := len(c.m); n > seenMax {
		t.Errorf("%d entries, over the cap of %d", n, seenMax)
	}
}
