package growstack

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
)

func stackBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// parked starts n goroutines, each calling start, and reports the stack
// memory they hold while parked.
func parked(n int, start func()) uint64 {
	runtime.GC()
	before := stackBytes()
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			start()
			ready.Done()
			<-release
		}()
	}
	ready.Wait()
	after := stackBytes()
	close(release)
	done.Wait()
	return after - before
}

// TestGrowGivesEachGoroutineSize checks the effect itself: goroutines that
// call Grow hold stacks of at least Size, and goroutines that do not hold
// far less. It fails if Grow's frame is optimised away or made smaller.
func TestGrowGivesEachGoroutineSize(t *testing.T) {
	const n = 200
	plain := parked(n, func() {})
	grown := parked(n, Grow)
	// Stack memory is counted in spans, a little of it shared with what
	// other goroutines freed meanwhile: allow 5 %.
	if grown < n*Size*95/100 {
		t.Errorf("%d goroutines after Grow hold %d bytes of stack, want ≥ %d (%d each)", n, grown, n*Size*95/100, Size)
	}
	if plain >= n*Size/2 {
		t.Errorf("%d plain goroutines hold %d bytes of stack; the check cannot tell Grow's effect (want < %d)", n, plain, n*Size/2)
	}
}

func BenchmarkGrowOnGrownStack(b *testing.B) {
	Grow()
	for b.Loop() {
		Grow()
	}
}
