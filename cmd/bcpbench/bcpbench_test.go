package main

import (
	"encoding/xml"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	s := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want int64
	}{{.5, 5}, {.95, 10}, {.99, 10}, {.1, 1}, {1, 10}} {
		if got := percentile(s, c.p); got != c.want {
			t.Errorf("p%.0f = %d, want %d", c.p*100, got, c.want)
		}
	}
	if percentile(nil, .5) != 0 {
		t.Error("empty")
	}
}

func TestRecorderAndChart(t *testing.T) {
	r := newRecorder()
	for i := 1; i <= 100; i++ {
		r.observe("create_checkout", time.Duration(i)*time.Millisecond)
	}
	st := r.stats(time.Second)["create_checkout"]
	if st.Count != 100 || st.P50 != int64(50*time.Millisecond) || st.P99 != int64(99*time.Millisecond) || st.Throughput != 100 {
		t.Fatalf("stats %+v", st)
	}
	res := &Result{PeakPerSec: 10, Phases: []Phase{
		{Name: "purchase@50%", Mode: "open", OfferedRate: 5, Ops: map[string]OpStats{"create_checkout": st}},
		{Name: "purchase@100%", Mode: "open", OfferedRate: 10, Ops: map[string]OpStats{"create_checkout": st}},
	}}
	var doc struct{}
	if err := xml.Unmarshal([]byte(chart(res)), &doc); err != nil {
		t.Fatalf("chart is not XML: %v", err)
	}
	if ts := targets(res); len(ts) != 1 || ts[0].Met { // no noop phase: no ratio target
		t.Fatalf("targets %+v", ts)
	}
	// The p99 target names the tool and how many calls its p99 is of.
	res.Phases[0].Name = "purchase@60%"
	res.Phases[0].Autovacuum = []string{"ANALYZE checkout.sessions"}
	ts := targets(res)
	if len(ts) != 2 || ts[1].Met || ts[1].Measured != "99.0 ms (create_checkout, 100 calls), autovacuum ran" {
		t.Fatalf("targets %+v", ts)
	}
	// With a no-op phase the ratio comes first, with noop_durable's
	// ceiling when that phase ran.
	res.Phases = append(res.Phases, Phase{Name: "noop"})
	res.Ratios = Ratios{CreateOverNoopThroughput: 0.184, DurableNoopOverNoopThroughput: 0.537}
	if ts := targets(res); len(ts) != 3 || ts[0].Met || ts[0].Measured != "0.18 (ceiling 0.54)" {
		t.Fatalf("targets %+v", ts)
	}
	res.Ratios.DurableNoopOverNoopThroughput = 0
	if ts := targets(res); ts[0].Measured != "0.18" {
		t.Fatalf("without noop_durable: %+v", ts[0])
	}
}

// stmtDelta counts a transaction and no round trip for the tenant setting
// that travels with a Single or SingleGenericPlan statement, and a round
// trip for each other statement except InTenant's setting (it rides with
// the first statement).
func TestStmtDeltaCountsPipelinedSettings(t *testing.T) {
	before := stmtSnapshot{"9": {query: "SELECT 1", calls: 5}}
	after := stmtSnapshot{
		"9": {query: "SELECT 1", calls: 5}, // ran before the phase only
		"1": {query: "SELECT set_config($1, $2, $3)", calls: 2},
		"2": {query: "-- name: GetSession :one SELECT a FROM t", calls: 2, ms: 1},
		"3": {query: "COMMIT", calls: 2},
		"4": {query: "SELECT set_config($2, $1, $3)", calls: 4},
		"5": {query: "-- name: LookupVariants :many SELECT b FROM u", calls: 4, ms: 2},
		"6": {query: "SELECT set_config($2, $1, $3), set_config($4, $5, $6)", calls: 2},
		"7": {query: "-- name: RedeemUnlimited :many WITH r AS (SELECT 1) SELECT 2", calls: 2, ms: 1},
		"8": {query: floorInsert, calls: 2},
	}
	st := stmtDelta(before, after, 2, 0)
	// Per operation: one InTenant transaction (setting, statement, COMMIT:
	// two round trips), two Single statements, one SingleGenericPlan one,
	// and noop_durable's autocommit insert.
	if st.TransactionsPerOp != 5 || st.StatementsPerOp != 10 || st.RoundTripsPerOp != 6 || st.ScopesPerOp != 4 || st.ExecMsPerOp != 2 {
		t.Fatalf("got %.1f transactions, %.1f statements, %.1f round trips, %.1f scope settings, %.1f ms per op; want 5, 10, 6, 4, 2",
			st.TransactionsPerOp, st.StatementsPerOp, st.RoundTripsPerOp, st.ScopesPerOp, st.ExecMsPerOp)
	}
}

// A statement line carries its WAL bytes, blocks read and blocks dirtied
// per call, over the phase only.
func TestStmtDeltaPerCallWrites(t *testing.T) {
	before := stmtSnapshot{"1": {query: "-- name: UpdateSession :one UPDATE t", calls: 3, wal: 300, hit: 30, dirtied: 3}}
	after := stmtSnapshot{"1": {query: "-- name: UpdateSession :one UPDATE t", calls: 7, wal: 8300, hit: 70, dirtied: 5}}
	st := stmtDelta(before, after, 2, 5)
	if len(st.Top) != 1 {
		t.Fatalf("lines %+v, want 1", st.Top)
	}
	if l := st.Top[0]; l.CallsPerOp != 2 || l.WALBytes != 2000 || l.Hit != 10 || l.Dirtied != 0.5 {
		t.Fatalf("got %+v; want 2 calls/op, 2000 B WAL, 10 hit, 0.5 dirtied per call", l)
	}
}

// Only the tables updated during the phase are listed, most updates first,
// with their heap-only share.
func TestTableDelta(t *testing.T) {
	before := tableSnapshot{"checkout.sessions": {10, 20, 4}, "orders.orders": {5, 0, 0}}
	after := tableSnapshot{"checkout.sessions": {12, 28, 6}, "orders.orders": {7, 0, 0}, "payments.attempts": {2, 2, 0}}
	got := tableDelta(before, after, 2)
	want := []TableWrites{
		{Table: "checkout.sessions", InsertsPerOp: 1, UpdatesPerOp: 4, HOTPerOp: 1},
		{Table: "payments.attempts", InsertsPerOp: 1, UpdatesPerOp: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if s := got[0].String(); !strings.Contains(s, "4.00 updates/op,  25% HOT") {
		t.Fatalf("line %q", s)
	}
}

// The report names what autovacuum did during a phase, shortened to the
// first four tables, each table once.
func TestAutovacuumSummary(t *testing.T) {
	got := autovacuumSummary([]string{"VACUUM checkout.sessions", "ANALYZE checkout.sessions", "ANALYZE pg_catalog.pg_attribute",
		"VACUUM payments.attempts", "ANALYZE payments.attempts", "ANALYZE orders.orders", "VACUUM river.river_job", "ANALYZE river.river_job"})
	want := "autovacuum during the phase: 3 vacuums, 5 analyzes (checkout.sessions, pg_catalog.pg_attribute, payments.attempts, orders.orders and 1 more)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// schedDelta reads the scheduler-latency histogram between two snapshots:
// quantiles are bucket upper bounds, in µs; only the phase's wake-ups count.
func TestSchedDelta(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1} // six buckets
	before := schedSnapshot{created: 100, buckets: buckets, counts: []uint64{5, 5, 5, 5, 5, 5}, total: 1000, idle: 300, steal: 10}
	// Bucket i is [buckets[i], buckets[i+1]). During the phase: 900
	// wake-ups under 1 µs, 80 under 10 µs, 10 under 100 µs, 4 under 1 ms,
	// 1 at 1–10 ms, none slower.
	after := schedSnapshot{created: 400, buckets: buckets, counts: []uint64{5 + 900, 5 + 80, 5 + 10, 5 + 4, 5 + 1, 5}, total: 1400, idle: 400, steal: 16}
	st := schedDelta(before, after, 100)
	if st == nil {
		t.Fatal("nil")
	}
	if st.GoroutinesPerOp != 3 {
		t.Errorf("goroutines per op %.1f, want 3", st.GoroutinesPerOp)
	}
	// 995 wake-ups: the 498th is under 1 µs, the 986th under 100 µs, the
	// 995th under 10 ms.
	if st.LatencyP50Us != 1 || st.LatencyP99Us != 100 || st.LatencyP999Us != 1e4 {
		t.Errorf("p50 %.0f, p99 %.0f, p99.9 %.0f µs; want 1, 100, 10000", st.LatencyP50Us, st.LatencyP99Us, st.LatencyP999Us)
	}
	if want := 1.0 / 995; st.LatencyOver1ms != want {
		t.Errorf("over 1 ms %.5f, want %.5f", st.LatencyOver1ms, want)
	}
	if got := st.String(); got != "Go scheduler: 3.0 goroutines/op; runnable → running p50 1 µs, p99 100 µs, p99.9 10.0 ms; 0.10 % over 1 ms; machine idle 25 %, stolen 1.5 %" {
		t.Errorf("line %q", got)
	}
	// The runtime's last bucket is open-ended: its lower bound stands in.
	inf := schedSnapshot{buckets: []float64{0, 1e-3, math.Inf(1)}, counts: []uint64{0, 0}}
	if st := schedDelta(inf, schedSnapshot{buckets: inf.buckets, counts: []uint64{1, 1}}, 1); st.LatencyP99Us != 1000 {
		t.Errorf("open-ended bucket: p99 %.0f µs, want 1000", st.LatencyP99Us)
	}
	if got := fmtUs(0.4); got != "< 1 µs" {
		t.Errorf("sub-µs: %q", got)
	}
	if schedDelta(schedSnapshot{}, after, 100) != nil {
		t.Error("a snapshot without the histogram gives a line")
	}
}
