package jobs

import (
	"testing"
	"time"
)

// The limiter's answer for calls laid out in time, each a begin and an
// end; the calls river may have left unannounced must be true.
func TestLimiterOverlappingCalls(t *testing.T) {
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

	t.Run("first call", func(t *testing.T) {
		l := &insertLimiter{}
		if l.end(l.begin(at(0)), at(1)) {
			t.Fatal("a lone insert was judged possibly unannounced: river announces it")
		}
	})
	// The CI failure: river announced A (its clock read first) and dropped
	// B; A's NOTIFY round trip was slow, so B returned first and A 8.5 ms
	// later, beyond the old window. Both overlap, so both are caught.
	t.Run("overlapping, the announced one returns late", func(t *testing.T) {
		l := &insertLimiter{}
		a := l.begin(at(0))
		b := l.begin(at(0.1))
		if !l.end(b, at(0.5)) {
			t.Error("B, overlapping A, not judged possibly unannounced")
		}
		if !l.end(a, at(9)) {
			t.Error("A, overlapping B, not judged possibly unannounced")
		}
	})
	t.Run("nested", func(t *testing.T) {
		l := &insertLimiter{}
		a := l.begin(at(0))
		b := l.begin(at(1))
		bSilent := l.end(b, at(2))
		aSilent := l.end(a, at(30))
		if !aSilent || !bSilent {
			t.Errorf("A %v, B %v: both overlap", aSilent, bSilent)
		}
	})
	t.Run("back to back", func(t *testing.T) {
		l := &insertLimiter{}
		l.end(l.begin(at(0)), at(1))
		if !l.end(l.begin(at(2)), at(30)) {
			t.Error("a call beginning 1 ms after the last one ended not judged possibly unannounced")
		}
	})
	t.Run("spaced", func(t *testing.T) {
		l := &insertLimiter{}
		l.end(l.begin(at(0)), at(1))
		if l.end(l.begin(at(1).Add(FetchCooldown+notifyMargin)), at(30)) {
			t.Error("a call beginning after the window was judged possibly unannounced: river announces it")
		}
	})
}
