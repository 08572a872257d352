package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	rdebug "runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/platform/loadkit"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// The scale check (issue 7, part 5): how memory and latency change when a
// `bcpd all` serves 10 000 merchants instead of 10.
//
//	go run ./cmd/bcpbench scale --tenants 10000
//
// It starts the platform in process, seeds --base merchants and measures
// (step 1), onboards merchants up to --tenants through the operator APIs
// (the same nine calls per merchant as `bcpctl` would make, --seed-concurrency
// at a time), makes one discovery request and one create_checkout at every
// merchant but the --cold it keeps untouched (so every per-merchant cache
// holds every merchant: the worst case for memory), and measures again
// (step 2). A measurement is: the process's Go heap after GC and its RSS;
// p50/p99 of --samples sequential GET /.well-known/bcp and create_checkout
// at the hot merchant (merchant 0, warm); and the first-call latency of
// both at --cold merchants no request has reached yet. The process also
// holds the load generator (a few hundred bytes per merchant).
//
// With --paired the two steps are two processes measured side by side in
// time (paired.go): the figures of one process minutes apart drift more
// than the 10 % the latency target allows.

// ScaleResult is the JSON file of a scale run.
type ScaleResult struct {
	Started   time.Time   `json:"started"`
	Machine   Machine     `json:"machine"`
	Config    any         `json:"config"`
	Steps     []ScaleStep `json:"steps"`
	SeedS     float64     `json:"seed_s"`
	SeedPerS  float64     `json:"seed_per_s"`
	TouchS    float64     `json:"touch_s"`
	Verdicts  []Target    `json:"targets"`
	LoadAfter string      `json:"loadavg_end"`
	// Paired: the steps are two processes measured side by side in time
	// (--paired), not one process before and after onboarding.
	Paired bool `json:"paired,omitempty"`
}

// ScaleStep is one measurement.
type ScaleStep struct {
	Tenants    int     `json:"tenants"`
	Touched    int     `json:"touched"`
	HeapMB     float64 `json:"heap_after_gc_mb"`
	RSSMB      float64 `json:"rss_mb"`
	Goroutines int     `json:"goroutines"`
	HotProfile OpStats `json:"hot_profile"`
	HotCreate  OpStats `json:"hot_create_checkout"`
	// CPU per hot request (process + PostgreSQL).
	HotProfileCPU *CPUUse `json:"hot_profile_cpu"`
	HotCreateCPU  *CPUUse `json:"hot_create_checkout_cpu"`
	ColdProfile   OpStats `json:"cold_profile_first_call"`
	ColdCreate    OpStats `json:"cold_create_checkout_first_call"`
	LoadAvg       string  `json:"loadavg"`
	// SettleS is how long the measurement waited for the platform and its
	// PostgreSQL to go idle (Settled: they did within --settle).
	SettleS float64 `json:"settle_s"`
	Settled bool    `json:"settled"`
}

// settle waits until this process and its PostgreSQL use under 5 % of one
// CPU over a second (at most max): onboarding thousands of merchants
// leaves autovacuum and other catch-up work running for a while, which
// the hot-merchant figures would otherwise measure. It says how long it
// waited and whether the platform went idle.
func (s *scaler) settle(ctx context.Context, max time.Duration) (time.Duration, bool) {
	if max <= 0 {
		return 0, false // --settle 0: measure at once
	}
	t0 := time.Now()
	for time.Since(t0) < max && ctx.Err() == nil {
		a := s.e.cpu()
		time.Sleep(time.Second)
		b := s.e.cpu()
		if (b.self-a.self)+(b.postgres-a.postgres) < 50*time.Millisecond {
			return time.Since(t0), true
		}
	}
	return time.Since(t0), false
}

type scaleConfig struct {
	tenants, base, seedConc, touchConc, samples, cold int
	out, memprofile                                   string
	settle                                            time.Duration
	paired                                            bool
	hold                                              int    // a --paired child: hold this many merchants
	cpuprofile                                        string // --paired: each child's CPU profile of its hot requests, FILE-<merchants>
}

func runScale(ctx context.Context, args []string) error {
	var cfg scaleConfig
	fs := flag.NewFlagSet("bcpbench scale", flag.ExitOnError)
	fs.IntVar(&cfg.tenants, "tenants", 10_000, "merchants at the end")
	fs.IntVar(&cfg.base, "base", 10, "merchants of the first measurement")
	fs.IntVar(&cfg.seedConc, "seed-concurrency", 8, "merchants onboarded at once")
	fs.IntVar(&cfg.touchConc, "touch-concurrency", 8, "merchants given their first requests at once")
	fs.DurationVar(&cfg.settle, "settle", 2*time.Minute, "before each measurement, wait up to this long for the platform and its PostgreSQL to go idle (0: measure at once)")
	fs.IntVar(&cfg.samples, "samples", 300, "sequential requests per hot-merchant figure")
	fs.IntVar(&cfg.cold, "cold", 9, "untouched merchants whose first call is measured (at most --base - 1 for the first step)")
	fs.StringVar(&cfg.out, "out", "bcpbench-scale.json", "JSON result file (\"\" for none)")
	fs.StringVar(&cfg.memprofile, "memprofile", "", "write a heap profile at the end (go tool pprof -sample_index=inuse_space)")
	fs.BoolVar(&cfg.paired, "paired", false, "measure --base and --tenants merchants side by side in time: two processes, their hot requests interleaved (no cold figures, no --memprofile)")
	fs.IntVar(&cfg.hold, "hold", 0, "internal: a --paired child holding this many merchants")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "with --paired: CPU profiles of each process's hot requests, FILE-<merchants> (compare them with go tool pprof -diff_base)")
	_ = fs.Parse(args)
	if cfg.hold > 0 {
		return runHolder(ctx, cfg, os.Stdin, os.Stdout)
	}
	if cfg.base < 2 || cfg.tenants < cfg.base+cfg.cold {
		return fmt.Errorf("need --base ≥ 2 and --tenants ≥ --base + --cold")
	}
	res := &ScaleResult{Started: time.Now().UTC(), Machine: machine(), Paired: cfg.paired, Config: map[string]any{
		"tenants": cfg.tenants, "base": cfg.base, "seed_concurrency": cfg.seedConc, "touch_concurrency": cfg.touchConc,
		"samples": cfg.samples, "cold": cfg.cold, "paired": cfg.paired, "args": args}}
	if cfg.paired {
		if err := runPaired(ctx, cfg, res); err != nil {
			return err
		}
		return finishScale(res, cfg)
	}
	e, err := startEnv(ctx, envOptions{tenants: cfg.base}, logf)
	if err != nil {
		return err
	}
	defer e.stop()
	s := newScaler(e)

	// Step 1: --base merchants; merchant 0 is hot, 1… are cold.
	s.warm(ctx, 0)
	cold1 := min(cfg.cold, cfg.base-1)
	res.Steps = append(res.Steps, s.measure(ctx, cfg, 1, cold1))

	// Onboard up to --tenants.
	logf("onboarding merchants %d…%d through the operator APIs, %d at a time", cfg.base, cfg.tenants-1, cfg.seedConc)
	t0 := time.Now()
	if err := e.seedMore(ctx, cfg.tenants, cfg.seedConc, func(n int) { logf("  %d merchants (%.0f/s)", n, float64(n-cfg.base)/time.Since(t0).Seconds()) }); err != nil {
		return err
	}
	res.SeedS = time.Since(t0).Seconds()
	res.SeedPerS = float64(cfg.tenants-cfg.base) / res.SeedS
	logf("onboarded %d merchants in %.0f s (%.1f/s)", cfg.tenants-cfg.base, res.SeedS, res.SeedPerS)

	// Every merchant but the last --cold gets its first requests.
	t0 = time.Now()
	if err := s.touch(ctx, cold1+1, cfg.tenants-cfg.cold, cfg.touchConc); err != nil {
		return err
	}
	res.TouchS = time.Since(t0).Seconds()
	logf("first requests at %d merchants in %.0f s", cfg.tenants-cfg.cold-cold1-1, res.TouchS)
	s.warm(ctx, 0)
	res.Steps = append(res.Steps, s.measure(ctx, cfg, cfg.tenants-cfg.cold, cfg.cold))
	if cfg.memprofile != "" {
		runtime.GC()
		f, err := os.Create(cfg.memprofile)
		if err != nil {
			return err
		}
		err = pprof.WriteHeapProfile(f)
		f.Close()
		if err != nil {
			return err
		}
		logf("wrote %s", cfg.memprofile)
	}
	return finishScale(res, cfg)
}

// finishScale judges, prints and writes a scale result.
func finishScale(res *ScaleResult, cfg scaleConfig) error {
	res.LoadAfter = machine().LoadAvg
	res.Verdicts = scaleTargets(res.Steps[0], res.Steps[len(res.Steps)-1])
	printScale(os.Stdout, res)
	if cfg.out != "" {
		buf, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.out, append(buf, '\n'), 0o644); err != nil {
			return err
		}
		logf("wrote %s", cfg.out)
	}
	return nil
}

type scaler struct {
	e       *env
	http    *http.Client
	touched atomic.Int64
}

func newScaler(e *env) *scaler {
	return &scaler{e: e, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
	}}}
}

func (s *scaler) agent(i int) *agentclient.Client {
	m := s.e.merchants[i]
	return &agentclient.Client{Endpoint: "http://" + s.e.publicAddr + "/bcp/mcp", Timeout: 30 * time.Second,
		Transport: &agentclient.Transport{Base: s.http.Transport, ProfileURL: s.e.profile, Host: m.Host, APIKey: m.APIKey}}
}

// profile fetches the merchant's discovery document.
func (s *scaler) profile(ctx context.Context, i int) (time.Duration, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.e.publicAddr+"/.well-known/bcp", nil)
	req.Host = s.e.merchants[i].Host
	start := time.Now()
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /.well-known/bcp at %s: %s", req.Host, resp.Status)
	}
	return d, nil
}

// create opens a checkout at the merchant.
func (s *scaler) create(ctx context.Context, i int) (time.Duration, error) {
	start := time.Now()
	resp, err := s.agent(i).CallTool(ctx, "create_checkout", loadkit.CreateArgs("bench@example.com"))
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.Status != http.StatusOK || resp.Error != nil || !strings.Contains(string(resp.Result), strconv.Quote(bcp.StatusReadyForComplete)) && !strings.Contains(string(resp.Result), strconv.Quote(bcp.StatusIncomplete)) {
		return 0, fmt.Errorf("create_checkout at %s: HTTP %d %s", s.e.merchants[i].Host, resp.Status, resp.Body)
	}
	return d, nil
}

func (s *scaler) warm(ctx context.Context, i int) {
	for range 20 {
		_, _ = s.profile(ctx, i)
		_, _ = s.create(ctx, i)
	}
}

// touch gives merchants [from, to) their first discovery request and
// checkout, conc at a time.
func (s *scaler) touch(ctx context.Context, from, to, conc int) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	var first error
	var mu sync.Mutex
	t0 := time.Now()
	for i := from; i < to && ctx.Err() == nil; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := s.profile(ctx, i)
			if err == nil {
				_, err = s.create(ctx, i)
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
			if n := s.touched.Add(1); n%1000 == 0 {
				logf("  first requests at %d merchants (%.0f/s)", n, float64(n)/time.Since(t0).Seconds())
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func (s *scaler) measure(ctx context.Context, cfg scaleConfig, touched, cold int) ScaleStep {
	n := len(s.e.merchants)
	settled, idle := s.settle(ctx, cfg.settle)
	logf("measuring at %d merchants (%d touched, %d cold; idle after %.1f s: %v)", n, touched, cold, settled.Seconds(), idle)
	st := ScaleStep{Tenants: n, Touched: touched, LoadAvg: machine().LoadAvg, SettleS: settled.Seconds(), Settled: idle}
	st.HeapMB, st.RSSMB = memory()
	st.Goroutines = runtime.NumGoroutine()
	// Sequential requests, each kind in its own loop so its CPU cost (this
	// process + PostgreSQL, per request) is known: unlike latency it does
	// not depend on what else the machine is doing.
	var prof, create []int64
	c0 := s.e.cpu()
	for range cfg.samples {
		if d, err := s.profile(ctx, 0); err == nil {
			prof = append(prof, int64(d))
		}
	}
	c1 := s.e.cpu()
	for range cfg.samples {
		if d, err := s.create(ctx, 0); err == nil {
			create = append(create, int64(d))
		}
	}
	c2 := s.e.cpu()
	st.HotProfile, st.HotCreate = opStats(prof), opStats(create)
	st.HotProfileCPU, st.HotCreateCPU = cpuUse(c0, c1, int64(len(prof))), cpuUse(c1, c2, int64(len(create)))
	// Cold merchants: the last `cold` of those seeded, one first call each.
	var cprof, ccreate []int64
	for i := n - cold; i < n; i++ {
		if i == 0 {
			continue
		}
		if d, err := s.profile(ctx, i); err == nil {
			cprof = append(cprof, int64(d))
		} else {
			logf("cold profile: %v", err)
		}
		if d, err := s.create(ctx, i); err == nil {
			ccreate = append(ccreate, int64(d))
		} else {
			logf("cold create: %v", err)
		}
	}
	st.ColdProfile, st.ColdCreate = opStats(cprof), opStats(ccreate)
	return st
}

func opStats(l []int64) OpStats {
	if len(l) == 0 {
		return OpStats{}
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return OpStats{Count: len(s), P50: percentile(s, .5), P95: percentile(s, .95), P99: percentile(s, .99), Max: s[len(s)-1]}
}

// memory is the Go heap in use after a full GC and the process's resident
// set (after returning freed memory to the OS), in MB.
func memory() (heap, rss float64) {
	runtime.GC()
	rdebug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap = float64(ms.HeapAlloc) / (1 << 20)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				rss = kb / 1024
			}
		}
	}
	return heap, rss
}

// pair prints "p50 / other" in ms, or "-" when nothing was measured.
func pair(st OpStats, other int64) string {
	if st.Count == 0 {
		return "-"
	}
	return fmtMs(st.P50) + " / " + fmtMs(other)
}

func scaleTargets(a, b ScaleStep) []Target {
	extra := max(b.RSSMB-a.RSSMB, b.HeapMB-a.HeapMB)
	out := []Target{{What: fmt.Sprintf("extra memory at %d merchants vs %d (max of RSS and heap growth)", b.Tenants, a.Tenants), Want: "< 100 MB",
		Measured: fmt.Sprintf("%.1f MB", extra), Met: extra < 100}}
	for _, c := range []struct {
		what   string
		before int64
		after  int64
	}{{"hot merchant p50 change, GET /.well-known/bcp", a.HotProfile.P50, b.HotProfile.P50}, {"hot merchant p50 change, create_checkout", a.HotCreate.P50, b.HotCreate.P50}} {
		if c.before <= 0 {
			continue
		}
		ch := float64(c.after-c.before) / float64(c.before) * 100
		out = append(out, Target{What: c.what, Want: "< 10 %", Measured: fmt.Sprintf("%+.1f %% (%s → %s ms)", ch, fmtMs(c.before), fmtMs(c.after)), Met: ch < 10})
	}
	return out
}

func printScale(w io.Writer, r *ScaleResult) {
	fmt.Fprintf(w, "\nbcpbench scale — %d CPUs (%s), %s, %s\n", r.Machine.CPUs, r.Machine.CPUModel, r.Machine.GoVersion, r.Started.Format(time.RFC3339))
	if r.Paired {
		fmt.Fprintf(w, "paired: two processes, one per row, their hot requests interleaved in turns of %d; loadavg at end %s\n\n", pairedBlock, r.LoadAfter)
	} else {
		fmt.Fprintf(w, "onboarding: %.0f s (%.1f merchants/s); first requests at every merchant: %.0f s; loadavg at end %s\n\n", r.SeedS, r.SeedPerS, r.TouchS, r.LoadAfter)
	}
	fmt.Fprintf(w, "%-9s %-8s %8s %8s %5s  %-22s %-22s %-22s %-22s  %s\n", "merchants", "touched", "heap MB", "RSS MB", "gor.",
		"hot profile p50/p99", "hot create p50/p99", "cold profile p50/max", "cold create p50/max", "loadavg")
	defer func() {
		fmt.Fprintln(w)
		for _, s := range r.Steps {
			if s.HotProfileCPU != nil && s.HotCreateCPU != nil {
				fmt.Fprintf(w, "%d merchants: CPU per hot request (process + PostgreSQL): profile %.2f + %.2f ms, create_checkout %.2f + %.2f ms\n", s.Tenants,
					s.HotProfileCPU.ProcessMsPerOp, s.HotProfileCPU.PostgresMsPerOp, s.HotCreateCPU.ProcessMsPerOp, s.HotCreateCPU.PostgresMsPerOp)
			}
			switch {
			case s.Settled:
				fmt.Fprintf(w, "%d merchants: measured once idle (after %.1f s)\n", s.Tenants, s.SettleS)
			case s.SettleS > 0:
				fmt.Fprintf(w, "%d merchants: not idle after %.1f s; measured anyway\n", s.Tenants, s.SettleS)
			}
		}
	}()
	for _, s := range r.Steps {
		fmt.Fprintf(w, "%-9d %-8d %8.1f %8.1f %5d  %-22s %-22s %-22s %-22s  %s\n", s.Tenants, s.Touched, s.HeapMB, s.RSSMB, s.Goroutines,
			pair(s.HotProfile, s.HotProfile.P99), pair(s.HotCreate, s.HotCreate.P99),
			pair(s.ColdProfile, s.ColdProfile.Max), pair(s.ColdCreate, s.ColdCreate.Max), s.LoadAvg)
	}
	fmt.Fprintln(w)
	for _, t := range r.Verdicts {
		mark := "MISSED"
		if t.Met {
			mark = "met"
		}
		fmt.Fprintf(w, "target %-70s want %-9s measured %-28s %s\n", t.What, t.Want, t.Measured, mark)
	}
}
