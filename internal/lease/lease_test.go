package lease

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// An owner is gone once its session is: at once for this process's
// predecessor (same name), and for a stranger only once this process's
// own session is Grace old and the stranger was missing Confirm apart; a
// live owner never is, and this incarnation never judges itself.
func TestGone(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	start := func(name string) *Holder {
		t.Helper()
		h, err := Start(ctx, d.AppURL, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		return h
	}
	gone := func(h *Holder, owners ...string) map[string]bool {
		t.Helper()
		g, err := h.Gone(ctx, owners)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	first := start("host checkout,payments 127.0.0.1:9090")
	stranger := start("another host")
	if g := gone(first, stranger.ID(), first.ID()); len(g) != 0 {
		t.Fatalf("live owners judged gone: %v", g)
	}
	first.Close() // its process dies: its session ends
	stranger.Close()
	next := start("host checkout,payments 127.0.0.1:9090")
	if next.ID() == first.ID() {
		t.Fatal("two incarnations share an id")
	}
	// Its predecessor, as soon as PostgreSQL has ended its session (the
	// backend exits on its own, a moment after the socket closed); a
	// stranger, not before Grace.
	g := gone(next, first.ID(), stranger.ID())
	for deadline := time.Now().Add(2 * time.Second); !g[first.ID()] && time.Now().Before(deadline); g = gone(next, first.ID(), stranger.ID()) {
		time.Sleep(10 * time.Millisecond)
	}
	if !g[first.ID()] || g[stranger.ID()] || len(g) != 1 {
		t.Fatalf("gone at start-up: %v; want the predecessor %s only", g, first.ID())
	}
	defer func(g, c time.Duration) { Grace, Confirm = g, c }(Grace, Confirm)
	Grace, Confirm = 0, 0
	if g := gone(next, stranger.ID(), next.ID()); !g[stranger.ID()] || len(g) != 1 {
		t.Fatalf("gone once settled: %v; want the stranger %s", g, stranger.ID())
	}
}
