package tenantcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func counter(n *atomic.Int64, v string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { n.Add(1); return v, nil }
}

func TestHitMissInvalidate(t *testing.T) {
	ctx := context.Background()
	c := New[string](Options{})
	c.SetWatched(true)
	var loads atomic.Int64
	for range 3 {
		v, err := c.Get(ctx, "t1", counter(&loads, "a"))
		if err != nil || v != "a" {
			t.Fatalf("get = %q, %v", v, err)
		}
	}
	if loads.Load() != 1 {
		t.Fatalf("loads = %d, want 1", loads.Load())
	}
	c.Invalidate("t1")
	if v, _ := c.Get(ctx, "t1", counter(&loads, "b")); v != "b" || loads.Load() != 2 {
		t.Fatalf("after invalidate: %q, loads %d", v, loads.Load())
	}
	c.Reset()
	if v, _ := c.Get(ctx, "t1", counter(&loads, "c")); v != "c" || loads.Load() != 3 {
		t.Fatalf("after reset: %q, loads %d", v, loads.Load())
	}
	if s := c.Stats(); s.Len != 1 || s.Hits != 2 || s.Misses != 3 {
		t.Fatalf("stats %+v", s)
	}
	// Errors are not cached.
	boom := errors.New("boom")
	if _, err := c.Get(ctx, "t2", func(context.Context) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if v, _ := c.Get(ctx, "t2", counter(&loads, "d")); v != "d" {
		t.Fatalf("after error: %q", v)
	}
}

func TestLifetimes(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	c := New[string](Options{TTL: time.Minute, UnwatchedTTL: 2 * time.Second})
	c.now = func() time.Time { return now }
	var loads atomic.Int64
	c.Get(ctx, "t", counter(&loads, "x")) // unwatched: 2 s
	now = now.Add(1999 * time.Millisecond)
	c.Get(ctx, "t", counter(&loads, "x"))
	if loads.Load() != 1 {
		t.Fatalf("loads = %d before the short lifetime ends", loads.Load())
	}
	now = now.Add(time.Millisecond)
	c.SetWatched(true)
	c.Get(ctx, "t", counter(&loads, "x")) // expired; refilled watched: 1 min
	now = now.Add(59 * time.Second)
	c.Get(ctx, "t", counter(&loads, "x"))
	if loads.Load() != 2 {
		t.Fatalf("loads = %d, want 2", loads.Load())
	}
}

// A fill that was in flight when its tenant changed must not be stored.
func TestInvalidationDuringFill(t *testing.T) {
	ctx := context.Background()
	c := New[string](Options{})
	c.SetWatched(true)
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		v, _ := c.Get(ctx, "t", func(context.Context) (string, error) {
			close(started)
			<-release
			return "stale", nil
		})
		if v != "stale" {
			t.Errorf("the caller still gets what it loaded, got %q", v)
		}
	}()
	<-started
	c.Invalidate("t")
	close(release)
	wg.Wait()
	var loads atomic.Int64
	if v, _ := c.Get(ctx, "t", counter(&loads, "fresh")); v != "fresh" || loads.Load() != 1 {
		t.Fatalf("got %q (loads %d): the stale fill was stored", v, loads.Load())
	}
}

func TestBoundedLRU(t *testing.T) {
	ctx := context.Background()
	c := New[int](Options{Max: 3})
	c.SetWatched(true)
	var loads atomic.Int64
	load := func(v int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { loads.Add(1); return v, nil }
	}
	for i, k := range []string{"a", "b", "c"} {
		c.Get(ctx, k, load(i))
	}
	c.Get(ctx, "a", load(0)) // a is now the most recent; b the least
	c.Get(ctx, "d", load(3)) // evicts b
	if s := c.Stats(); s.Len != 3 {
		t.Fatalf("len = %d, want 3", s.Len)
	}
	before := loads.Load()
	c.Get(ctx, "a", load(0))
	c.Get(ctx, "c", load(2))
	c.Get(ctx, "d", load(3))
	if loads.Load() != before {
		t.Fatalf("a, c, d should be cached")
	}
	c.Get(ctx, "b", load(1))
	if loads.Load() != before+1 {
		t.Fatalf("b should have been evicted")
	}
}

func TestConcurrentMissesLoadOnce(t *testing.T) {
	c := New[string](Options{})
	var loads atomic.Int64
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Get(context.Background(), "t", func(context.Context) (string, error) {
				<-gate
				loads.Add(1)
				return "v", nil
			})
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(gate)
	wg.Wait()
	if loads.Load() < 1 || loads.Load() > 2 {
		t.Fatalf("loads = %d for 20 concurrent misses", loads.Load())
	}
}

func BenchmarkGetHit(b *testing.B) {
	c := New[string](Options{})
	c.SetWatched(true)
	ctx := context.Background()
	c.Get(ctx, "t", func(context.Context) (string, error) { return "v", nil })
	b.ReportAllocs()
	for b.Loop() {
		c.Get(ctx, "t", nil)
	}
}
