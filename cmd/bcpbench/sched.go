package main

import (
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
)

// Go scheduler figures per phase, from runtime/metrics: how many
// goroutines a completed operation starts, and how long goroutines wait
// runnable before a processor runs them (/sched/latencies, every
// goroutine of the process: platform and agents). On two vCPUs shared with
// PostgreSQL the second is where an open-loop tail can hide that neither
// CPU time nor PostgreSQL's wait events show (docs/performance.md, round 12).

// SchedStats are a phase's scheduler figures, with the machine's idle and
// stolen shares (/proc/stat: a VM's steal is CPU its host gave to other
// guests, which no profile of ours shows).
type SchedStats struct {
	MachineIdle     float64 `json:"machine_idle"`
	MachineSteal    float64 `json:"machine_steal"`
	GoroutinesPerOp float64 `json:"goroutines_per_op"`
	// LatencyP50Us, P99Us, P999Us: runnable → running, in µs (upper
	// bounds of the runtime's histogram buckets).
	LatencyP50Us  float64 `json:"latency_p50_us"`
	LatencyP99Us  float64 `json:"latency_p99_us"`
	LatencyP999Us float64 `json:"latency_p999_us"`
	// LatencyOver1ms is the share of goroutine wake-ups that waited more
	// than a millisecond.
	LatencyOver1ms float64 `json:"latency_over_1ms"`
}

type schedSnapshot struct {
	created uint64
	counts  []uint64
	buckets []float64
	// /proc/stat's "cpu" line, in ticks: all, idle (+ iowait), steal.
	total, idle, steal uint64
}

var schedSamples = []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}, {Name: "/sched/latencies:seconds"}}

func readSched() schedSnapshot {
	s := make([]metrics.Sample, len(schedSamples))
	copy(s, schedSamples)
	metrics.Read(s)
	var snap schedSnapshot
	if s[0].Value.Kind() == metrics.KindUint64 {
		snap.created = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[1].Value.Float64Histogram()
		snap.counts = append([]uint64(nil), h.Counts...)
		snap.buckets = h.Buckets
	}
	snap.total, snap.idle, snap.steal = machineTicks()
	return snap
}

// machineTicks reads the machine's CPU time from /proc/stat (zeros where
// it cannot).
func machineTicks() (total, idle, steal uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0
	}
	var v [8]uint64 // user nice system idle iowait irq softirq steal
	for i := range v {
		v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		total += v[i]
	}
	return total, v[3] + v[4], v[7]
}

// schedDelta is what happened between two snapshots; nil when the
// runtime offers neither metric.
func schedDelta(before, after schedSnapshot, ops int64) *SchedStats {
	if len(after.counts) == 0 || len(before.counts) != len(after.counts) || ops <= 0 {
		return nil
	}
	st := &SchedStats{GoroutinesPerOp: float64(after.created-before.created) / float64(ops)}
	if d := after.total - before.total; after.total > before.total {
		st.MachineIdle = float64(after.idle-before.idle) / float64(d)
		st.MachineSteal = float64(after.steal-before.steal) / float64(d)
	}
	delta := make([]uint64, len(after.counts))
	var total, over uint64
	for i := range delta {
		delta[i] = after.counts[i] - before.counts[i]
		total += delta[i]
		// Bucket i holds [buckets[i], buckets[i+1]).
		if after.buckets[i] >= 1e-3 {
			over += delta[i]
		}
	}
	if total == 0 {
		return st
	}
	st.LatencyOver1ms = float64(over) / float64(total)
	// A bucket's upper bound, or its lower one for the last bucket,
	// which is open-ended (+Inf).
	upper := func(i int) float64 {
		if u := after.buckets[i+1]; !math.IsInf(u, 1) {
			return u * 1e6
		}
		return after.buckets[i] * 1e6
	}
	quantile := func(q float64) float64 {
		want := uint64(q * float64(total))
		var seen uint64
		for i, c := range delta {
			seen += c
			if seen > want {
				return upper(i)
			}
		}
		return upper(len(delta) - 1)
	}
	st.LatencyP50Us, st.LatencyP99Us, st.LatencyP999Us = quantile(.5), quantile(.99), quantile(.999)
	return st
}

func (s *SchedStats) String() string {
	return fmt.Sprintf("Go scheduler: %.1f goroutines/op; runnable → running p50 %s, p99 %s, p99.9 %s; %.2f %% over 1 ms; machine idle %.0f %%, stolen %.1f %%",
		s.GoroutinesPerOp, fmtUs(s.LatencyP50Us), fmtUs(s.LatencyP99Us), fmtUs(s.LatencyP999Us), s.LatencyOver1ms*100, s.MachineIdle*100, s.MachineSteal*100)
}

func fmtUs(us float64) string {
	if us < 1 {
		return "< 1 µs"
	}
	if us >= 1000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
