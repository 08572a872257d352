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

// One holder serves checkout's and payments' recoveries in one process,
// each asking about its own owners: a stranger one of them waits on is
// judged gone Confirm after it was first missed, however often the other
// asks about other owners meanwhile.
func TestGoneSharedByTwoCallers(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	h, err := Start(ctx, d.AppURL, "host all", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	s, err := Start(ctx, d.AppURL, "stranger host", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	defer func(g, c time.Duration) { Grace, Confirm = g, c }(Grace, Confirm)
	Grace, Confirm = 0, 200*time.Millisecond
	// The stranger's backend ends a moment after its socket closed.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := h.missing[s.ID()]; ok || time.Now().After(deadline) {
			break
		}
		if _, err := h.Gone(ctx, []string{s.ID()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := h.missing[s.ID()]; !ok {
		t.Fatal("the stranger's session never ended")
	}
	// The other caller asks only about this process itself: no query, and
	// the stranger's sighting stays.
	if g, err := h.Gone(ctx, []string{h.ID()}); err != nil || g != nil {
		t.Fatalf("only itself: %v, %v; want nil, nil", g, err)
	}
	time.Sleep(Confirm)
	if g, err := h.Gone(ctx, []string{s.ID()}); err != nil || !g[s.ID()] {
		t.Fatalf("after Confirm: %v, %v; want the stranger %s gone", g, err, s.ID())
	}
}
