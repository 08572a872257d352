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

// Concurrent increments land in the right (tenant, São Paulo day) rows,
// and São Paulo's midnight (03:00 UTC), not UTC's, starts a new row.
func TestUsageCounterCounts(t *testing.T) {
	u := newUsageCounter(nil, time.Hour, nil)
	now := time.Date(2026, 11, 30, 2, 59, 59, 0, time.UTC) // 23:59:59 on the 29th in São Paulo
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
	now = now.Add(time.Second) // 00:00:00 on the 30th in São Paulo
	mu.Unlock()
	u.record("a", false)
	u.record("", true)           // no tenant: ignored
	want := map[string][2]int64{ // "tenant day" → requests, errors
		"a 2026-11-29": {8000, 800},
		"b 2026-11-29": {1000, 1000},
		"a 2026-11-30": {1, 0},
	}
	checkUsage(t, u, want)
}

// A request at 02:30 UTC is still the previous evening in São Paulo
// (23:30 UTC−3) and counts there; 03:00 UTC is the next São Paulo day.
func TestUsageDayIsSaoPaulos(t *testing.T) {
	u := newUsageCounter(nil, time.Hour, nil)
	now := time.Date(2026, 11, 30, 2, 30, 0, 0, time.UTC)
	u.now = func() time.Time { return now }
	u.record("a", false)
	u.record("a", true)
	now = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	u.record("a", false)
	now = time.Date(2026, 12, 1, 2, 59, 59, 0, time.UTC)
	u.record("a", true)
	checkUsage(t, u, map[string][2]int64{
		"a 2026-11-29": {2, 1},
		"a 2026-11-30": {2, 1},
	})
	// The same instants in São Paulo's own notation.
	for in, want := range map[string]string{
		"2026-11-29T23:30:00-03:00": "2026-11-29",
		"2026-11-30T00:00:00-03:00": "2026-11-30",
		"2026-01-01T02:59:59Z":      "2025-12-31",
		"2026-12-31T23:59:59-03:00": "2026-12-31",
	} {
		ts, err := time.Parse(time.RFC3339, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := usageDate(usageDay(ts)); got != want {
			t.Errorf("%s counts on %s, want %s", in, got, want)
		}
	}
}

// checkUsage compares the counter's rows, keyed "tenant YYYY-MM-DD" as
// flush sends them, with want.
func checkUsage(t *testing.T, u *usageCounter, want map[string][2]int64) {
	t.Helper()
	got := map[string][2]int64{}
	for k, c := range u.counts {
		got[k.tenant+" "+usageDate(k.day)] = [2]int64{c.requests.Load(), c.errors.Load()}
	}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("rows %v, want %v", got, want)
		}
	}
}
