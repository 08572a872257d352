// Command bcpbench is the platform's load generator (issue 7): simulated
// agents run whole purchases over MCP HTTP against many merchants of a
// `bcpd all` platform it starts in process (private PostgreSQL, loopback
// listeners), and the same generator calls a no-op MCP tool served by the
// same edge stack without the services, as the baseline.
//
// Phases, each for --duration:
//
//  1. noop, closed loop at --concurrency: the baseline,
//     then noop_durable, the no-op plus one durable insert (baseline.go):
//     the most create_checkout can reach beside the no-op on this machine,
//  2. create_checkout only, closed loop at --concurrency,
//  3. whole purchases, closed loop at --concurrency: the peak,
//  4. whole purchases, open loop at --sweep fractions of the peak
//     (Poisson arrivals): latency percentiles vs offered load.
//
// It prints a table, writes --out (JSON) and --svg (chart).
//
// --protocol rest drives the same purchase over the UCP REST binding
// (rest.go: create with the shipping address, update with the option,
// complete with a card token, get the order); --peer ucp-node drives it
// against the UCP Node.js sample server instead of a bcpd, so that a run
// gives a same-machine ratio (scripts/bench-peer.sh, make bench-peer).
//
//	go run ./cmd/bcpbench --tenants 20 --duration 5s --concurrency 16
//	go run ./cmd/bcpbench --target 127.0.0.1:28080 ... --protocol rest    # a bcpd dev over REST (scripts/bench.sh)
//	go run ./cmd/bcpbench --peer ucp-node --target 127.0.0.1:3000 --target-pid PID  # the UCP Node sample (scripts/ucp-node-sample.sh)
//	go run ./cmd/bcpbench --auth signature --rate 80 --duration 30s   # one open-loop run
//	go run ./cmd/bcpbench scale --tenants 10000                       # memory and latency at 10 000 merchants (scale.go)
//	go run ./cmd/bcpbench search --tenants 100 --products 10000       # search_catalog at 1M products (search.go)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/gctune"
	"github.com/bcpdev/bcp/platform"
)

type config struct {
	tenants     int
	duration    time.Duration
	warmup      time.Duration
	concurrency int
	rate        float64
	sweep       []float64
	pixShare    float64
	pixPoll     time.Duration
	// updates is the purchase's update_checkout calls: 2 (the address,
	// then the option and the code: the flow of record) or 1 (the address
	// already in create_checkout, as in the README).
	updates      int
	discount     bool // the option's update sends the code BEMVINDO10
	auth         string
	out, svg     string
	maxInFlight  int
	cpuprofile   string
	memprofile   string
	profilePhase string
	statements   int
	durableNoop  bool
	// --target: a running platform instead of one started here.
	target, targetInternal, operatorToken, internalToken, profileAddr string
	// targetPIDs and targetPGData: whose CPU a --target run counts (the
	// target's processes, and its PostgreSQL cluster's data directory).
	targetPIDs, targetPGData string
	// protocol is the binding the agents speak: mcp or rest (rest.go);
	// peer ("" or ucp-node) drives the REST flow against the UCP Node.js
	// sample at --target instead of a bcpd.
	protocol, peer string
}

type bench struct {
	cfg            config
	env            *env
	ops            *platform.Clients
	platformAgents *agents
	noopAgents     *agents
}

// Phase is one measured run.
type Phase struct {
	Name        string             `json:"name"`
	Mode        string             `json:"mode"` // closed | open
	Concurrency int                `json:"concurrency,omitempty"`
	OfferedRate float64            `json:"offered_rate_per_s,omitempty"`
	Seconds     float64            `json:"seconds"`
	Completed   int64              `json:"completed"`
	Throughput  float64            `json:"throughput_per_s"`
	Ops         map[string]OpStats `json:"ops"`
	Errors      map[string]int     `json:"errors"`
	Pool        *PoolStats         `json:"db_pool,omitempty"`
	CPU         *CPUUse            `json:"cpu,omitempty"`
	Sched       *SchedStats        `json:"sched,omitempty"`
	SQL         *StmtStats         `json:"sql,omitempty"`
	Durable     *DurableStats      `json:"durable,omitempty"`
	// Autovacuum is what autovacuum finished during the phase ("VACUUM
	// schema.table", "ANALYZE schema.table"); none with --target.
	Autovacuum []string `json:"autovacuum,omitempty"`
	// Tables are the tables updated during the phase (HOT or not).
	Tables []TableWrites `json:"tables,omitempty"`
}

// PoolStats is pgxpool's Stat at the end of a phase (counters as deltas
// over the phase).
type PoolStats struct {
	MaxConns          int32   `json:"max_conns"`
	TotalConns        int32   `json:"total_conns"`
	AcquiredConns     int32   `json:"acquired_conns"`
	IdleConns         int32   `json:"idle_conns"`
	Acquires          int64   `json:"acquires"`
	EmptyAcquires     int64   `json:"empty_acquires"`
	AcquireWaitMeanUs float64 `json:"acquire_wait_mean_us"`
	EmptyWaitTotalMs  float64 `json:"empty_acquire_wait_total_ms"`
}

// Result is the JSON file.
type Result struct {
	Started    time.Time `json:"started"`
	Machine    Machine   `json:"machine"`
	Config     any       `json:"config"`
	Phases     []Phase   `json:"phases"`
	Ratios     Ratios    `json:"ratios"`
	Targets    []Target  `json:"targets"`
	PeakPerSec float64   `json:"peak_purchases_per_s"`
	// Driver says what the agents spoke to: "MCP at <url>", "REST at
	// <url>" or "REST at <url>, the UCP Node.js sample".
	Driver string `json:"driver"`
}

type Machine struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go"`
	OS        string `json:"os"`
	CPUModel  string `json:"cpu_model"`
	// LoadAvg is /proc/loadavg before the phases: anything else running on
	// the machine skews the figures.
	LoadAvg string `json:"loadavg"`
}

type Ratios struct {
	CreateOverNoopThroughput float64 `json:"create_over_noop_throughput"`
	CreateOverNoopP99        float64 `json:"create_over_noop_p99"`
	// DurableNoopOverNoopThroughput is noop_durable's throughput over the
	// no-op's: the ceiling for CreateOverNoopThroughput on this machine,
	// since every create stores its checkout before answering.
	DurableNoopOverNoopThroughput float64 `json:"durable_noop_over_noop_throughput,omitempty"`
}

type Target struct {
	What     string `json:"what"`
	Want     string `json:"want"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

func main() {
	// The platform runs in this process: tuned as bcpd tunes itself.
	gctune.Apply()
	if len(os.Args) > 1 && (os.Args[1] == "scale" || os.Args[1] == "search" || os.Args[1] == "otlp-sink" || os.Args[1] == "pspsim") {
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer cancel()
		sub := runScale
		switch os.Args[1] {
		case "search":
			sub = runSearchBench
		case "otlp-sink":
			sub = runSink
		case "pspsim":
			sub = runPSPSim
		}
		if err := sub(ctx, os.Args[2:]); err != nil {
			fatal(err)
		}
		return
	}
	var cfg config
	var sweep string
	flag.IntVar(&cfg.tenants, "tenants", 20, "merchants to seed; purchases pick one at random")
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "length of each measured phase")
	flag.DurationVar(&cfg.warmup, "warmup", 4*time.Second, "unmeasured warm-up before the phases (caches, connections)")
	flag.IntVar(&cfg.concurrency, "concurrency", 16, "closed loop: simulated agents running at once")
	flag.Float64Var(&cfg.rate, "rate", 0, "open loop only: purchases per second (skips the closed-loop phases and the sweep)")
	flag.StringVar(&sweep, "sweep", "0.2,0.4,0.6,0.8,1.0", "open-loop offered loads, as fractions of the closed-loop peak (\"\" to skip)")
	flag.Float64Var(&cfg.pixShare, "pix-share", 0.2, "share of purchases paid with Pix (the rest with a delegated card token)")
	flag.IntVar(&cfg.updates, "updates", 2, "update_checkout calls per purchase: 2 (the address, then the shipping option) or 1 (the address sent with create_checkout)")
	flag.BoolVar(&cfg.discount, "discount", true, "the shipping option's update also sends the discount code BEMVINDO10")
	flag.DurationVar(&cfg.pixPoll, "pix-poll", 20*time.Millisecond, "get_checkout polling interval while a Pix is being paid")
	flag.StringVar(&cfg.auth, "auth", "api_key", "agent credentials: api_key or signature (RFC 9421, ES256)")
	flag.StringVar(&cfg.out, "out", "bcpbench-result.json", "JSON result file (\"\" for none)")
	flag.StringVar(&cfg.svg, "svg", "bcpbench-latency.svg", "SVG chart file (\"\" for none)")
	flag.IntVar(&cfg.maxInFlight, "max-in-flight", 2000, "open loop: purchases in flight at most (more arrivals count as dropped)")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of the closed-loop --profile-phase, or with --rate of the open-loop phase (the platform, the PSP simulator and the agents share the process)")
	flag.StringVar(&cfg.memprofile, "allocprofile", "", "write heap profiles before (FILE.before) and after the closed-loop --profile-phase: its allocations are go tool pprof -sample_index=alloc_space -diff_base FILE.before FILE")
	flag.StringVar(&cfg.profilePhase, "profile-phase", "purchase", "with --cpuprofile or --allocprofile: the closed-loop phase to profile (create_checkout or purchase)")
	flag.BoolVar(&noFsync, "no-fsync", false, "run the bench's PostgreSQL without fsync and full-page writes (the mode before issue 23; not durable, for comparison only)")
	flag.BoolVar(&cfg.durableNoop, "durable-noop", true, "after the no-op, run noop_durable (the no-op plus one durable insert: create_checkout's ceiling); needs the bench's own PostgreSQL")
	flag.IntVar(&cfg.statements, "pg-statements", 0, "pg_stat_statements: print transactions and statements per operation, and the N most frequent statements of each closed-loop phase (-1: off)")
	flag.StringVar(&cfg.target, "target", "", "host:port of a running bcpd's public listener (default: start a platform in process)")
	flag.StringVar(&cfg.targetInternal, "target-internal", "127.0.0.1:9090", "with --target: its internal listener (seeding, simulated Pix payments)")
	flag.StringVar(&cfg.operatorToken, "operator-token", os.Getenv("BCP_OPERATOR_TOKEN"), "with --target: operator token (BCP_OPERATOR_TOKEN)")
	flag.StringVar(&cfg.internalToken, "internal-token", os.Getenv("BCP_INTERNAL_TOKEN"), "with --target: internal token, for the baseline's API-key checks (BCP_INTERNAL_TOKEN)")
	flag.StringVar(&cfg.targetPIDs, "target-pid", "", "with --target: the target's process ids (comma-separated), whose CPU the figures count instead of this process's, which is the load generator's and is reported apart")
	flag.StringVar(&cfg.targetPGData, "target-pgdata", "", "with --target: the data directory of the target's PostgreSQL cluster (a bcpd dev's <data-dir>/pgdata), whose processes' CPU the figures count; it must run with durable commits")
	flag.StringVar(&cfg.profileAddr, "profile-addr", "127.0.0.1:0", "with --target: where to serve the agent profile (the platform fetches it; dev tenants accept loopback)")
	flag.StringVar(&cfg.protocol, "protocol", "mcp", "the agents' binding: mcp (the tools at /bcp/mcp) or rest (the UCP REST routes at /bcp/rest: create with the shipping address, update with the option and the code, complete with a card token, get the order; card purchases only, no no-op baseline)")
	flag.StringVar(&cfg.peer, "peer", "", "ucp-node: drive the REST flow against the UCP Node.js sample (scripts/ucp-node-sample.sh) at --target host:port instead of a bcpd, counting the CPU of --target-pid (its SQLite is in process); nothing is seeded")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := restFlags(&cfg, set); err != nil {
		fatal(err)
	}
	for _, f := range strings.Split(sweep, ",") {
		if f = strings.TrimSpace(f); f != "" {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v <= 0 {
				fatal(fmt.Errorf("--sweep: bad fraction %q", f))
			}
			cfg.sweep = append(cfg.sweep, v)
		}
	}
	if cfg.auth != "api_key" && cfg.auth != "signature" {
		fatal(fmt.Errorf("--auth must be api_key or signature"))
	}
	if cfg.updates != 1 && cfg.updates != 2 {
		fatal(fmt.Errorf("--updates must be 1 or 2"))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fatal(err)
	}
}

// restFlags checks --protocol and --peer and fits the flags the REST
// flow does not use (set: the flags given on the command line): a peer
// speaks REST; REST buys with a card only (--pix-share given above 0 is
// refused, the default becomes 0) and sends the address with the create
// (one update).
func restFlags(cfg *config, set map[string]bool) error {
	switch cfg.peer {
	case "":
	case peerUCPNode:
		if cfg.target == "" {
			return fmt.Errorf("--peer %s needs --target host:port (and --target-pid for its CPU)", cfg.peer)
		}
		if set["protocol"] && cfg.protocol != "rest" {
			return fmt.Errorf("--peer %s speaks REST only", cfg.peer)
		}
		cfg.protocol = "rest"
	default:
		return fmt.Errorf("--peer must be %s", peerUCPNode)
	}
	switch cfg.protocol {
	case "mcp":
		return nil
	case "rest":
	default:
		return fmt.Errorf("--protocol must be mcp or rest")
	}
	if cfg.pixShare > 0 {
		if set["pix-share"] {
			return fmt.Errorf("--protocol rest buys with a card only: --pix-share 0")
		}
		cfg.pixShare = 0
	}
	cfg.updates = 1
	return nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bcpbench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bcpbench: "+format+"\n", args...)
}

func run(ctx context.Context, cfg config) error {
	started := time.Now().UTC()
	var e *env
	var err error
	if cfg.peer != "" {
		e, err = startPeerEnv(ctx, strings.TrimPrefix(cfg.target, "http://"), cfg.targetPIDs)
	} else if cfg.target != "" {
		if cfg.operatorToken == "" {
			return fmt.Errorf("--target needs --operator-token")
		}
		if err := checkDurable(cfg.targetPGData); err != nil {
			return err
		}
		e, err = startRemoteEnv(ctx, strings.TrimPrefix(cfg.target, "http://"), cfg.targetInternal, cfg.operatorToken, cfg.internalToken, cfg.profileAddr, cfg.tenants, logf)
		if e != nil {
			e.pgdata = cfg.targetPGData
			if cfg.targetPIDs != "" {
				e.targetPIDs = strings.Split(cfg.targetPIDs, ",")
			}
		}
	} else {
		e, err = startEnv(ctx, envOptions{tenants: cfg.tenants, statements: cfg.statements >= 0, pays: true}, logf)
		if err == nil && cfg.cpuprofile != "" {
			// --cpuprofile is diagnosis: planning is timed too.
			err = e.trackPlanning(ctx)
		}
	}
	if err != nil {
		return err
	}
	defer e.stop()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if debug {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// The baseline checks API keys with the tenants service, which needs
	// the internal token; without it (e.g. against `bcpd dev`, whose
	// internal token is random) there is no baseline.
	noopAddr := ""
	// noop_durable runs with the closed-loop phases (not with --rate) and
	// needs the bench's own database (none with --target); its pool is as
	// large as the platform's.
	var floor *pgxpool.Pool
	if cfg.durableNoop && cfg.protocol == "mcp" && cfg.rate <= 0 && e.pg != nil && e.pool != nil {
		if floor, err = openFloor(ctx, e.pg.URL(benchDB), e.pool.Config().MaxConns); err != nil {
			return fmt.Errorf("noop_durable's table: %w", err)
		}
		defer floor.Close()
	}
	if cfg.protocol != "mcp" {
		logf("REST: no no-op baseline (it is an MCP tool)")
	} else if e.tenants != nil {
		addr, stopNoop, err := startBaseline(ctx, e, floor, quiet)
		if err != nil {
			return err
		}
		defer stopNoop()
		noopAddr = addr
	} else {
		logf("no --internal-token: no no-op baseline")
	}

	base := benchTransport()
	signed := cfg.auth == "signature"
	b := &bench{cfg: cfg, env: e, ops: e.ops}
	driver := ""
	switch {
	case cfg.peer != "":
		b.platformAgents = newRESTAgents(restTarget{base: "http://" + e.publicAddr, peer: cfg.peer}, e, false, base)
		driver = "REST at http://" + e.publicAddr + ", the UCP Node.js sample (" + cfg.peer + ")"
	case cfg.protocol == "rest":
		b.platformAgents = newRESTAgents(restTarget{base: "http://" + e.publicAddr + "/bcp/rest"}, e, signed, base)
		driver = "REST at " + b.platformAgents.endpoint
	default:
		b.platformAgents = newAgents("http://"+e.publicAddr+"/bcp/mcp", e, signed, base)
		driver = "MCP at " + b.platformAgents.endpoint
	}
	if noopAddr != "" {
		b.noopAgents = newAgents("http://"+noopAddr+"/bcp/mcp", e, signed, base)
	}

	res := &Result{Started: started, Machine: machine(), Driver: driver, Config: map[string]any{
		"tenants": cfg.tenants, "target": cfg.target, "protocol": cfg.protocol, "peer": cfg.peer, "duration": cfg.duration.String(), "concurrency": cfg.concurrency, "rate": cfg.rate,
		"sweep": cfg.sweep, "pix_share": cfg.pixShare, "updates": cfg.updates, "discount": cfg.discount, "pix_poll": cfg.pixPoll.String(), "auth": cfg.auth, "args": os.Args[1:],
	}}

	if cfg.warmup > 0 {
		logf("warm-up %s", cfg.warmup)
		b.platformAgents.rec = newRecorder()
		if b.noopAgents != nil {
			b.noopAgents.rec = newRecorder()
			closedLoop(ctx, cfg.concurrency, cfg.warmup/2, b.noop)
		}
		closedLoop(ctx, cfg.concurrency, cfg.warmup/2, b.purchase)
		if n := b.platformAgents.rec.done.Load(); n == 0 && len(b.platformAgents.rec.errs) > 0 {
			return fmt.Errorf("no purchase completed during the warm-up; errors: %v", b.platformAgents.rec.errs)
		}
	}
	// phaseOn runs one phase and reports the waits of pool (noop_durable's
	// own for that phase); phase reports the platform's.
	phaseOn := func(pool *pgxpool.Pool, name string, a *agents, mode string, conc int, rate float64, w workload) Phase {
		top := 0
		if mode == "closed" {
			top = cfg.statements
		}
		p := measurePhase(ctx, e, pool, a, phaseSpec{name: name, mode: mode, conc: conc, rate: rate, d: cfg.duration, maxInFlight: cfg.maxInFlight, top: top}, w)
		res.Phases = append(res.Phases, p)
		return p
	}
	phase := func(name string, a *agents, mode string, conc int, rate float64, w workload) Phase {
		return phaseOn(e.pool, name, a, mode, conc, rate, w)
	}

	var peak float64
	if cfg.rate > 0 {
		// --cpuprofile profiles the one open-loop phase: where the CPU of
		// a purchase goes below the peak (it costs more per purchase than
		// in the closed loop).
		if cfg.cpuprofile != "" {
			f, err := os.Create(cfg.cpuprofile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
		}
		phase("purchase", b.platformAgents, "open", 0, cfg.rate, b.purchase)
		if cfg.cpuprofile != "" {
			pprof.StopCPUProfile()
			logf("wrote %s", cfg.cpuprofile)
		}
	} else {
		var noop, durable Phase
		if b.noopAgents != nil {
			noop = phase("noop", b.noopAgents, "closed", cfg.concurrency, 0, b.noop)
			if floor != nil {
				durable = phaseOn(floor, "noop_durable", b.noopAgents, "closed", cfg.concurrency, 0, b.noopDurable)
			}
		}
		// profiled runs one closed-loop phase, under the CPU profiler when
		// it is --profile-phase.
		profiled := func(name string, w workload) (Phase, error) {
			if (cfg.cpuprofile == "" && cfg.memprofile == "") || cfg.profilePhase != name {
				return phase(name, b.platformAgents, "closed", cfg.concurrency, 0, w), nil
			}
			if cfg.cpuprofile != "" {
				f, err := os.Create(cfg.cpuprofile)
				if err != nil {
					return Phase{}, err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return Phase{}, err
				}
			}
			// Allocation profiles count from the start of the process:
			// one before and one after the phase, read with -diff_base.
			if cfg.memprofile != "" {
				if err := writeHeapProfile(cfg.memprofile + ".before"); err != nil {
					return Phase{}, err
				}
			}
			p := phase(name, b.platformAgents, "closed", cfg.concurrency, 0, w)
			if cfg.cpuprofile != "" {
				pprof.StopCPUProfile()
				logf("wrote %s (the simulated agents' share: go tool pprof -top -tagfocus=side=agents %[1]s; the PSP simulator's: -tagfocus=side=pspsim; the platform's: -tagignore=side=agents,pspsim)", cfg.cpuprofile)
			}
			if cfg.memprofile != "" {
				if err := writeHeapProfile(cfg.memprofile); err != nil {
					return Phase{}, err
				}
				logf("wrote %s and %[1]s.before (go tool pprof -sample_index=alloc_space -diff_base %[1]s.before %[1]s)", cfg.memprofile)
			}
			return p, nil
		}
		create, err := profiled("create_checkout", b.createOnly)
		if err != nil {
			return err
		}
		purchase, err := profiled("purchase", b.purchase)
		if err != nil {
			return err
		}
		peak = purchase.Throughput
		res.PeakPerSec = peak
		if noop.Throughput > 0 {
			res.Ratios.CreateOverNoopThroughput = create.Throughput / noop.Throughput
		}
		if noop.Throughput > 0 && durable.Throughput > 0 {
			res.Ratios.DurableNoopOverNoopThroughput = durable.Throughput / noop.Throughput
		}
		if p := noop.Ops["noop"].P99; p > 0 {
			res.Ratios.CreateOverNoopP99 = float64(create.Ops["create_checkout"].P99) / float64(p)
		}
		for _, f := range cfg.sweep {
			if peak <= 0 || ctx.Err() != nil {
				break
			}
			phase(fmt.Sprintf("purchase@%.0f%%", f*100), b.platformAgents, "open", 0, f*peak, b.purchase)
		}
		if cfg.peer == "" { // the targets are the platform's
			res.Targets = targets(res)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	printReport(os.Stdout, res)
	if cfg.out != "" {
		buf, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.out, append(buf, '\n'), 0o644); err != nil {
			return err
		}
		logf("wrote %s", cfg.out)
	}
	if cfg.svg != "" && len(res.Phases) > 0 {
		if err := os.WriteFile(cfg.svg, []byte(chart(res)), 0o644); err != nil {
			return err
		}
		logf("wrote %s", cfg.svg)
	}
	return nil
}

// phaseSpec is one phase to measure: closed loop at conc, or open loop
// at rate, for d; top is how many of pg_stat_statements' most frequent
// statements it reports.
type phaseSpec struct {
	name, mode       string
	conc             int
	rate             float64
	d                time.Duration
	maxInFlight, top int
}

// measurePhase runs w as s says, with a fresh recorder for a's calls, and
// reports it with the CPU, the scheduler and the machine, the statements,
// the WAL, autovacuum and pool's waits (none when pool is nil).
func measurePhase(ctx context.Context, e *env, pool *pgxpool.Pool, a *agents, s phaseSpec, w workload) Phase {
	a.rec = newRecorder()
	r := a.rec
	var before *PoolStats
	if pool != nil {
		before = poolStats(pool, nil)
	}
	cpu0 := e.cpu()
	sched0 := readSched()
	stmts0 := e.statements(ctx)
	tables0 := e.tableWrites(ctx)
	wal0 := e.walNow(ctx)
	started := time.Now()
	logf("phase %s (%s, concurrency %d, rate %.0f/s) for %s", s.name, s.mode, s.conc, s.rate, s.d)
	var el time.Duration
	if s.mode == "closed" {
		el = closedLoop(ctx, s.conc, s.d, w)
	} else {
		el = openLoop(ctx, s.rate, s.d, s.maxInFlight, r, w)
	}
	p := Phase{Name: s.name, Mode: s.mode, Concurrency: s.conc, OfferedRate: s.rate, Seconds: el.Seconds(),
		Completed: r.done.Load(), Throughput: float64(r.done.Load()) / el.Seconds(), Ops: r.stats(el), Errors: r.errs}
	if before != nil {
		p.Pool = poolStats(pool, before)
	}
	p.CPU = cpuUse(cpu0, e.cpu(), p.Completed)
	p.Sched = schedDelta(sched0, readSched(), p.Completed)
	p.SQL = stmtDelta(stmts0, e.statements(ctx), p.Completed, s.top)
	p.Durable = walDelta(wal0, e.walNow(ctx), p.Completed)
	p.Autovacuum = e.autovacuumSince(ctx, started)
	p.Tables = tableDelta(tables0, e.tableWrites(ctx), p.Completed)
	return p
}

// benchTransport is one connection pool for the simulated agents, big
// enough that every agent keeps its connection (http.DefaultTransport
// keeps 2 per host).
func benchTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
	}
}

func poolStats(pool *pgxpool.Pool, before *PoolStats) *PoolStats {
	s := pool.Stat()
	p := &PoolStats{MaxConns: s.MaxConns(), TotalConns: s.TotalConns(), AcquiredConns: s.AcquiredConns(), IdleConns: s.IdleConns(),
		Acquires: s.AcquireCount(), EmptyAcquires: s.EmptyAcquireCount(),
		AcquireWaitMeanUs: float64(s.AcquireDuration().Microseconds()), EmptyWaitTotalMs: float64(s.EmptyAcquireWaitTime().Microseconds()) / 1000}
	if before == nil {
		return p // raw totals, used as the baseline of the deltas
	}
	p.Acquires -= before.Acquires
	p.EmptyAcquires -= before.EmptyAcquires
	p.EmptyWaitTotalMs -= before.EmptyWaitTotalMs
	p.AcquireWaitMeanUs -= before.AcquireWaitMeanUs // total µs over the phase…
	if p.Acquires > 0 {
		p.AcquireWaitMeanUs /= float64(p.Acquires) // …then per acquire
	} else {
		p.AcquireWaitMeanUs = 0
	}
	return p
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// targets checks the goals against the run.
func targets(res *Result) []Target {
	var out []Target
	if slices.ContainsFunc(res.Phases, func(p Phase) bool { return p.Name == "noop" }) {
		// With noop_durable, the line also says how far this machine lets
		// any create go.
		measured := fmt.Sprintf("%.2f", res.Ratios.CreateOverNoopThroughput)
		if c := res.Ratios.DurableNoopOverNoopThroughput; c > 0 {
			measured += fmt.Sprintf(" (ceiling %.2f)", c)
		}
		out = append(out, Target{What: "create_checkout throughput / no-op throughput", Want: "≥ 0.40",
			Measured: measured, Met: res.Ratios.CreateOverNoopThroughput >= 0.4})
	}
	out = append(out, Target{What: "whole purchases per second (closed-loop peak)", Want: "≥ 150",
		Measured: fmt.Sprintf("%.1f", res.PeakPerSec), Met: res.PeakPerSec >= 150})
	for _, p := range res.Phases {
		if p.Name != "purchase@60%" {
			continue
		}
		worst, worstOp, calls := int64(0), "", 0
		for _, op := range toolNames(p.Ops) {
			if s := p.Ops[op]; s.P99 > worst {
				worst, worstOp, calls = s.P99, op, s.Count
			}
		}
		// The calls say how much the p99 rests on: over make bench's 5 s
		// steps it is about the fifth-slowest call, so one burst of
		// background work (autovacuum) decides it; `make bench-long`.
		measured := fmt.Sprintf("%s ms (%s, %d calls)", fmtMs(worst), worstOp, calls)
		if len(p.Autovacuum) > 0 {
			measured += ", autovacuum ran"
		}
		// Issue 23 asks for the p99 over at least 2 000 calls: fewer and
		// it is not measured (make bench-long's 25 s steps give that at
		// 60 % of a peak above 133 purchases/s).
		out = append(out, Target{What: "p99 of every tool at 60 % of peak (" + fmt.Sprintf("%.0f/s", p.OfferedRate) + ")", Want: "< 50 ms, ≥ 2 000 calls",
			Measured: measured, Met: worst > 0 && worst < 50e6 && calls >= 2000})
	}
	return out
}

// toolNames are the MCP tools among a phase's operations, sorted.
func toolNames(ops map[string]OpStats) []string {
	var out []string
	for op := range ops {
		if strings.HasSuffix(op, "_checkout") || op == "noop" || op == "get_order" {
			out = append(out, op)
		}
	}
	sort.Strings(out)
	return out
}

func printReport(w io.Writer, res *Result) {
	fmt.Fprintf(w, "\nbcpbench — %d CPUs (%s), %s, %s, loadavg at start %s\n", res.Machine.CPUs, res.Machine.CPUModel, res.Machine.GoVersion, res.Started.Format(time.RFC3339), res.Machine.LoadAvg)
	if res.Driver != "" {
		fmt.Fprintf(w, "agents: %s\n", res.Driver)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-16s %-6s %8s %10s  %-18s %7s %9s %8s %8s %8s  %s\n", "phase", "mode", "load", "done/s", "operation", "count", "ops/s", "p50 ms", "p95 ms", "p99 ms", "db pool")
	for _, p := range res.Phases {
		load := strconv.Itoa(p.Concurrency)
		if p.Mode == "open" {
			load = fmt.Sprintf("%.0f/s", p.OfferedRate)
		}
		ops := make([]string, 0, len(p.Ops))
		for op := range p.Ops {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		for i, op := range ops {
			s := p.Ops[op]
			head := fmt.Sprintf("%-16s %-6s %8s %10.1f", p.Name, p.Mode, load, p.Throughput)
			pool := ""
			if i == 0 && p.Pool != nil {
				pool = fmt.Sprintf("max %d, acquires %d (%.1f/op), waited %d (%.0f ms), mean acquire %.0f µs", p.Pool.MaxConns, p.Pool.Acquires,
					float64(p.Pool.Acquires)/max(1, float64(p.Completed)), p.Pool.EmptyAcquires, p.Pool.EmptyWaitTotalMs, p.Pool.AcquireWaitMeanUs)
			}
			if i == 1 && p.CPU != nil {
				pool = p.CPU.String()
			}
			if i == 2 && p.SQL != nil {
				pool = p.SQL.String()
			}
			if i > 0 {
				head = fmt.Sprintf("%-16s %-6s %8s %10s", "", "", "", "")
			}
			fmt.Fprintf(w, "%s  %-18s %7d %9.1f %8s %8s %8s  %s\n", head, op, s.Count, s.Throughput, fmtMs(s.P50), fmtMs(s.P95), fmtMs(s.P99), pool)
		}
		if len(ops) < 2 && p.CPU != nil {
			fmt.Fprintf(w, "%-16s %s\n", "", p.CPU)
		}
		if len(ops) < 3 && p.SQL != nil {
			fmt.Fprintf(w, "%-16s %s\n", "", p.SQL)
		}
		if p.Durable != nil {
			fmt.Fprintf(w, "%-16s %s%s\n", "", p.Durable, p.Durable.breakdown(p.SQL))
		}
		if p.SQL != nil {
			for _, l := range p.SQL.Top {
				q := l.Query
				if len(q) > 110 {
					q = q[:110] + "…"
				}
				if l.MeanPlanMs > 0 {
					fmt.Fprintf(w, "%-16s   %6.2f/op %7.3f ms %7.3f ms planning %6.0f B WAL %5.1f hit %4.1f dirtied  %s\n", "", l.CallsPerOp, l.MeanMs, l.MeanPlanMs, l.WALBytes, l.Hit, l.Dirtied, q)
				} else {
					fmt.Fprintf(w, "%-16s   %6.2f/op %7.3f ms %6.0f B WAL %5.1f hit %4.1f dirtied  %s\n", "", l.CallsPerOp, l.MeanMs, l.WALBytes, l.Hit, l.Dirtied, q)
				}
			}
		}
		for _, t := range p.Tables {
			fmt.Fprintf(w, "%-16s   %s\n", "", t)
		}
		if p.Sched != nil {
			fmt.Fprintf(w, "%-16s %s\n", "", p.Sched)
		}
		if len(p.Autovacuum) > 0 {
			fmt.Fprintf(w, "%-16s %s\n", "", autovacuumSummary(p.Autovacuum))
		}
		if len(p.Errors) > 0 {
			keys := make([]string, 0, len(p.Errors))
			for k := range p.Errors {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, 0, len(keys))
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%d", k, p.Errors[k]))
			}
			fmt.Fprintf(w, "%-16s errors: %s\n", "", strings.Join(parts, " "))
		}
	}
	if res.Ratios.CreateOverNoopThroughput > 0 {
		fmt.Fprintf(w, "\ncreate_checkout throughput / no-op throughput = %.2f; create_checkout p99 / no-op p99 = %.2f\n",
			res.Ratios.CreateOverNoopThroughput, res.Ratios.CreateOverNoopP99)
	}
	if r := res.Ratios.DurableNoopOverNoopThroughput; r > 0 {
		fmt.Fprintf(w, "noop_durable throughput / no-op throughput = %.2f (the no-op plus one durable insert: the most a create_checkout, which stores its checkout before answering, can reach here)\n", r)
	}
	if len(res.Targets) > 0 {
		fmt.Fprintln(w)
		for _, t := range res.Targets {
			mark := "MISSED"
			if t.Met {
				mark = "met"
			}
			fmt.Fprintf(w, "target %-58s want %-8s measured %-22s %s\n", t.What, t.Want, t.Measured, mark)
		}
	}
}

// writeHeapProfile writes the heap profile (allocations since the start,
// and live objects as of the last GC) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
