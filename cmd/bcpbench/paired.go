package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The paired scale check (`bcpbench scale --paired`): the two steps of the
// scale check side by side in time instead of minutes apart. On this kind
// of machine the cost of system calls and wake-ups drifts by ±20 % from
// one minute to the next while the CPU's own speed does not (round 5 of
// docs/performance.md), so a 10 % verdict needs both figures taken under
// the same conditions — the "baseline in the same run".
//
// Two child processes each hold one platform on its own private
// PostgreSQL: one with --base merchants, one onboarded to --tenants (every
// merchant but --cold given its first requests, as in the sequential
// check). Once both are ready and idle, the parent asks them in turn for
// blocks of pairedBlock sequential hot requests (discovery and
// create_checkout at merchant 0), alternating which goes first, until each
// has served --samples of each. Memory is each process's own.

// pairedBlock is how many requests of each kind one turn measures.
const pairedBlock = 50

// holderReady is what a holder prints (after "ready ") once it is set up.
type holderReady struct {
	Tenants int     `json:"tenants"`
	Touched int     `json:"touched"`
	HeapMB  float64 `json:"heap_mb"`
	RSSMB   float64 `json:"rss_mb"`
	Gor     int     `json:"goroutines"`
	SettleS float64 `json:"settle_s"`
	Settled bool    `json:"settled"`
}

// holderBlock is a holder's answer (after "done ") to "measure N".
type holderBlock struct {
	Profile []int64 `json:"profile_ns"`
	Create  []int64 `json:"create_ns"`
}

// runHolder is the child's side: set up cfg.hold merchants, print
// "ready {…}", then answer "measure N" lines on stdin until "quit" or EOF.
func runHolder(ctx context.Context, cfg scaleConfig, in io.Reader, out io.Writer) error {
	// --cpuprofile is diagnosis: pg_stat_statements too (in both holders).
	diag := cfg.cpuprofile != ""
	e, err := startEnv(ctx, envOptions{tenants: cfg.base, statements: diag}, logf)
	if err != nil {
		return err
	}
	defer e.stop()
	if diag {
		if err := e.trackPlanning(ctx); err != nil {
			return err
		}
	}
	s := newScaler(e)
	s.warm(ctx, 0)
	touched := 1
	if cfg.hold > cfg.base {
		if err := e.seedMore(ctx, cfg.hold, cfg.seedConc, func(n int) { logf("  %d merchants", n) }); err != nil {
			return err
		}
		if err := s.touch(ctx, 1, cfg.hold-cfg.cold, cfg.touchConc); err != nil {
			return err
		}
		touched = cfg.hold - cfg.cold
	}
	s.warm(ctx, 0)
	settled, idle := s.settle(ctx, cfg.settle)
	r := holderReady{Tenants: len(e.merchants), Touched: touched, SettleS: settled.Seconds(), Settled: idle}
	r.HeapMB, r.RSSMB = memory()
	r.Gor = runtime.NumGoroutine()
	b, _ := json.Marshal(r)
	fmt.Fprintf(out, "ready %s\n", b)
	// With --cpuprofile, from the first turn on (the other holder may
	// still be onboarding before that): the CPU profile, and what
	// PostgreSQL executed, printed per request when the holder quits.
	var st0 stmtSnapshot
	var ops int64
	var prof *os.File
	var c0 cpuTimes
	var p0 map[string]pgProc
	var firstTurn time.Time
	defer func() {
		if ops > 0 {
			// CPU per hot request pair (discovery + create), this process
			// and its PostgreSQL, over the turns (idle gaps included).
			u := cpuUse(c0, e.cpu(), ops)
			logf("holder of %d merchants: CPU per hot discovery + create_checkout %.2f + %.2f ms", len(e.merchants), u.ProcessMsPerOp, u.PostgresMsPerOp)
			if av := e.autovacuumSince(ctx, firstTurn); len(av) > 0 {
				logf("holder of %d merchants, over its turns: %s", len(e.merchants), autovacuumSummary(av))
			}
		}
		if diag && ops > 0 {
			for title, d := range pgProcDelta(p0, e.pgProcs()) {
				if d > 0 {
					logf("holder of %d merchants: %.3f ms per hot create in %s", len(e.merchants), float64(d.Microseconds())/1000/float64(ops), title)
				}
			}
		}
		if prof == nil {
			return
		}
		pprof.StopCPUProfile()
		_ = prof.Close()
		if d := stmtDelta(st0, e.statements(ctx), ops, 12); d != nil {
			logf("holder of %d merchants, per hot create_checkout (discovery is served from cache): %s", len(e.merchants), d)
			for _, l := range d.Top {
				logf("  %6.2f/op %8.3f ms executing %8.3f ms planning  %.90s", l.CallsPerOp, l.MeanMs, l.MeanPlanMs, l.Query)
			}
		}
	}()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch cmd {
		case "quit":
			return nil
		case "measure":
			n, err := strconv.Atoi(arg)
			if err != nil || n <= 0 {
				return fmt.Errorf("holder: bad command %q", sc.Text())
			}
			if diag && prof == nil {
				f, err := os.Create(cfg.cpuprofile)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					_ = f.Close()
					return err
				}
				st0, prof = e.statements(ctx), f
			}
			if ops == 0 {
				c0, p0, firstTurn = e.cpu(), e.pgProcs(), time.Now()
			}
			ops += int64(n)
			var blk holderBlock
			for range n {
				if d, err := s.profile(ctx, 0); err == nil {
					blk.Profile = append(blk.Profile, int64(d))
				}
			}
			for range n {
				if d, err := s.create(ctx, 0); err == nil {
					blk.Create = append(blk.Create, int64(d))
				}
			}
			b, _ := json.Marshal(blk)
			fmt.Fprintf(out, "done %s\n", b)
		default:
			return fmt.Errorf("holder: unknown command %q", sc.Text())
		}
	}
	return sc.Err()
}

// holder is the parent's handle on a child.
type holder struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
	ready holderReady
}

func startHolder(ctx context.Context, cfg scaleConfig, merchants int) (*holder, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "scale", "--hold", strconv.Itoa(merchants), "--base", strconv.Itoa(cfg.base),
		"--cold", strconv.Itoa(cfg.cold), "--seed-concurrency", strconv.Itoa(cfg.seedConc),
		"--touch-concurrency", strconv.Itoa(cfg.touchConc), "--settle", cfg.settle.String())
	if cfg.cpuprofile != "" {
		cmd.Args = append(cmd.Args, "--cpuprofile", cfg.cpuprofile+"-"+strconv.Itoa(merchants))
	}
	cmd.Stderr = os.Stderr
	// A holder (and, through pgserver, its PostgreSQL) ends with us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(outp)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &holder{cmd: cmd, in: in, lines: sc}, nil
}

// expect reads the holder's next line, which must start with word.
func (h *holder) expect(word string, v any) error {
	if !h.lines.Scan() {
		if err := h.lines.Err(); err != nil {
			return err
		}
		return errors.New("holder exited")
	}
	rest, ok := strings.CutPrefix(h.lines.Text(), word+" ")
	if !ok {
		return fmt.Errorf("holder said %q, want %q", h.lines.Text(), word)
	}
	return json.Unmarshal([]byte(rest), v)
}

func (h *holder) measure(n int) (holderBlock, error) {
	var b holderBlock
	if _, err := fmt.Fprintf(h.in, "measure %d\n", n); err != nil {
		return b, err
	}
	return b, h.expect("done", &b)
}

func (h *holder) stop() {
	_, _ = io.WriteString(h.in, "quit\n")
	_ = h.in.Close()
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
}

// runPaired is the parent: two holders, their hot requests interleaved.
func runPaired(ctx context.Context, cfg scaleConfig, res *ScaleResult) error {
	logf("paired: starting a holder with %d merchants and one with %d (onboarding the second takes a few minutes)", cfg.base, cfg.tenants)
	small, err := startHolder(ctx, cfg, cfg.base)
	if err != nil {
		return err
	}
	defer small.stop()
	big, err := startHolder(ctx, cfg, cfg.tenants)
	if err != nil {
		return err
	}
	defer big.stop()
	for _, h := range []*holder{small, big} {
		if err := h.expect("ready", &h.ready); err != nil {
			return fmt.Errorf("paired: %w", err)
		}
	}
	logf("paired: both ready; %d hot requests of each kind at each, in turns of %d", cfg.samples, pairedBlock)
	var prof, create [2][]int64
	for turn := 0; len(create[1]) < cfg.samples || len(create[0]) < cfg.samples; turn++ {
		order := []int{0, 1}
		if turn%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			b, err := []*holder{small, big}[i].measure(pairedBlock)
			if err != nil {
				return fmt.Errorf("paired: %w", err)
			}
			prof[i], create[i] = append(prof[i], b.Profile...), append(create[i], b.Create...)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	for i, h := range []*holder{small, big} {
		r := h.ready
		res.Steps = append(res.Steps, ScaleStep{Tenants: r.Tenants, Touched: r.Touched, HeapMB: r.HeapMB, RSSMB: r.RSSMB,
			Goroutines: r.Gor, HotProfile: opStats(prof[i]), HotCreate: opStats(create[i]), LoadAvg: machine().LoadAvg,
			SettleS: r.SettleS, Settled: r.Settled})
	}
	return nil
}
