package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// chart draws per-tool p50 (dashed) and p99 (solid) latency against the
// offered load of the open-loop phases (purchases per second), as SVG.
func chart(res *Result) string {
	type point struct{ x, p50, p95, p99 float64 }
	series := map[string][]point{}
	for _, p := range res.Phases {
		if p.Mode != "open" {
			continue
		}
		for _, op := range toolNames(p.Ops) {
			s := p.Ops[op]
			series[op] = append(series[op], point{p.OfferedRate, float64(s.P50) / 1e6, float64(s.P95) / 1e6, float64(s.P99) / 1e6})
		}
	}
	const W, H, L, R, T, B = 760.0, 440.0, 70.0, 190.0, 40.0, 50.0
	maxX, maxY := 1.0, 1.0
	for _, pts := range series {
		for _, p := range pts {
			maxX, maxY = math.Max(maxX, p.x), math.Max(maxY, p.p99)
		}
	}
	maxY = math.Max(maxY*1.1, 60) // keep the 50 ms target line visible
	maxX *= 1.05
	x := func(v float64) float64 { return L + v/maxX*(W-L-R) }
	y := func(v float64) float64 { return H - B - v/maxY*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="14">bcpbench: tool latency vs offered load (open loop, %d CPUs, %s)</text>`+"\n", L, res.Machine.CPUs, res.Started.Format("2006-01-02 15:04Z"))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n",
		L, H-B, W-R, H-B, L, T, L, H-B)
	for i := 0; i <= 5; i++ {
		vx, vy := maxX*float64(i)/5, maxY*float64(i)/5
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", x(vx), H-B+18, vx)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f</text><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", L-6, y(vy)+4, vy, L, y(vy), W-R, y(vy))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">offered load (purchases/s)</text>`+"\n", (L+W-R)/2, H-12)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">latency (ms)</text>`+"\n", (T+H-B)/2, (T+H-B)/2)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="red" stroke-dasharray="2,3"/><text x="%.1f" y="%.1f" fill="red">50 ms target</text>`+"\n", L, y(50), W-R, y(50), W-R+4, y(50)+4)
	if res.PeakPerSec > 0 {
		px := x(0.6 * res.PeakPerSec)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="gray" stroke-dasharray="4,4"/><text x="%.1f" y="%.1f" fill="gray">60%% of peak</text>`+"\n", px, T, px, H-B, px+3, T+12)
	}
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		pts := series[n]
		sort.Slice(pts, func(a, b int) bool { return pts[a].x < pts[b].x })
		c := colors[i%len(colors)]
		var p50, p99 []string
		for _, p := range pts {
			p50 = append(p50, fmt.Sprintf("%.1f,%.1f", x(p.x), y(p.p50)))
			p99 = append(p99, fmt.Sprintf("%.1f,%.1f", x(p.x), y(p.p99)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", x(p.x), y(p.p99), c)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(p99, " "))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1" stroke-dasharray="5,3" points="%s"/>`+"\n", c, strings.Join(p50, " "))
		ly := T + 10 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/><text x="%.1f" y="%.1f">%s</text>`+"\n", W-R+10, ly, W-R+30, ly, c, W-R+34, ly+4, n)
	}
	ly := T + 10 + float64(len(names))*18 + 6
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="gray">solid: p99, dashed: p50</text>`+"\n", W-R+10, ly)
	b.WriteString("</svg>\n")
	return b.String()
}
