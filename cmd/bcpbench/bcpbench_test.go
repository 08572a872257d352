package main

import (
	"encoding/xml"
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
}
