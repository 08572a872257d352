package agentprofile

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkGetCached is the per-request path: the agent's profile is
// cached. It must not allocate.
func BenchmarkGetCached(b *testing.B) {
	s := newServer(b, serveBytes(fixture(b, "agent_profile.json")))
	f := newFetcher(b, nil, nil)
	ctx := context.Background()
	u := s.URL + "/profiles/shopping-agent.json"
	if _, err := f.Get(ctx, u, true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Get(ctx, u, true); err != nil {
			b.Fatal(err)
		}
	}
	if n := s.n.Load(); n != 1 {
		b.Fatalf("%d fetches", n)
	}
}

// BenchmarkGetCachedParallel: many agents, all goroutines hitting the
// cache at once (shard read locks).
func BenchmarkGetCachedParallel(b *testing.B) {
	s := newServer(b, serveBytes(fixture(b, "agent_profile.json")))
	f := newFetcher(b, nil, nil)
	ctx := context.Background()
	urls := make([]string, 64)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/agents/%d/profile.json", s.URL, i)
		if _, err := f.Get(ctx, urls[i], true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := f.Get(ctx, urls[i%len(urls)], true); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkNegotiate(b *testing.B) {
	o, err := OfferFromProfileJSON(fixture(b, "business_profile.json"))
	if err != nil {
		b.Fatal(err)
	}
	p, err := Parse("https://agente.example.com/p.json", fixture(b, "agent_profile.json"), testValidator(b), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Negotiate(o, p); err != nil {
			b.Fatal(err)
		}
	}
}
