package edge

import (
	"sync"
	"testing"
	"time"

	"github.com/bcpdev/bcp/protocol/bcp"
)

// The usage hook recognises error_response payloads by their prefix; this
// pins the prefix to what wrap actually produces.
func TestUsageErrorEnvelopePrefix(t *testing.T) {
	m := &mcpEdge{}
	for _, incompatible := range []bool{false, true} {
		out, err := m.errorResponse(bcp.Error(bcp.CodeNotFound, bcp.SeverityUnrecoverable, "$.id", "x"), "https://loja.example/", incompatible)
		if err != nil {
			t.Fatal(err)
		}
		if !isErrorEnvelope(out) {
			t.Fatalf("error_response not recognised: %s", out)
		}
	}
	ok, err := m.wrap([]byte(`{"id":"chk_1","status":"incomplete"}`), envelope{Version: "2026-04-08"})
	if err != nil {
		t.Fatal(err)
	}
	if isErrorEnvelope(ok) {
		t.Fatalf("a checkout counted as an error: %s", ok)
	}
}

// Concurrent increments land in the right (tenant, UTC day) rows, and a
// day boundary starts a new row.
func TestUsageCounterCounts(t *testing.T) {
	u := newUsageCounter(nil, time.Hour, nil)
	now := time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC)
	var mu sync.Mutex
	u.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 1000 {
				u.record("a", j%10 == 0)
				if i == 0 {
					u.record("b", true)
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	now = now.Add(2 * time.Second) // 2026-11-30
	mu.Unlock()
	u.record("a", false)
	u.record("", true) // no tenant: ignored
	day := now.Unix() / 86400
	want := map[usageKey][2]int64{
		{"a", day - 1}: {8000, 800},
		{"b", day - 1}: {1000, 1000},
		{"a", day}:     {1, 0},
	}
	if len(u.counts) != len(want) {
		t.Fatalf("%d rows, want %d", len(u.counts), len(want))
	}
	for k, w := range want {
		c := u.counts[k]
		if c == nil || c.requests.Load() != w[0] || c.errors.Load() != w[1] {
			t.Fatalf("%v: got %v, want %v", k, c, w)
		}
	}
}
