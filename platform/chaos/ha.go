package chaos

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/loadkit"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// The HA run's roles: what a service-process kill picks from.
var haRoles = []string{platform.Edge, platform.Tenants, platform.Catalog, platform.Pricing, platform.Checkout, platform.Payments, platform.Orders}

// haRequestTimeout is the edges' request deadline in the HA run
// (BCP_REQUEST_TIMEOUT): below the agents' patience (10 s), so that a call
// a failover holds up is answered 503 with Retry-After, not given up on.
// Config.MaxAnswer is it and a margin for a loaded machine.
const haRequestTimeout = 8 * time.Second

// sentinelHost is a merchant no agent buys from: after each failover it
// is suspended, and both edges must refuse it within seconds (the change
// feed re-subscribed on the new primary), then resumed.
const sentinelHost = "sentinela.chaos.localhost"

// failover is one SIGKILL of the primary (its PostgreSQL, or with its
// keeper: its host lost) and what followed.
type failover struct {
	from, to, timeline int
	hostLoss           bool            // the primary's keeper was killed with its postmaster
	kills              int             // SIGKILLs of the old primary's postmaster (crash; one unless its keeper restarted it first)
	promoted           time.Duration   // kill → the standby accepts writes (promoted and no longer read-only; -1: never)
	firstOK            []time.Duration // per edge: kill → first success answered after the promotion (-1: never)
	anyOK              []time.Duration // per edge: kill → first success at all (the old primary may answer once more, restarted by its keeper)
	probeWire          map[string]int  // the probes' failed answers meanwhile, by wire form
	agentWire          map[string]int  // the agents' failed answers from the kill to both first successes
	suspended, resumed []time.Duration // per edge: status change → refused (403) / served (200) there (-1: never)
	healthy            time.Duration   // kill → a primary with a synchronous standby again (-1: never)
	answers            int             // calls (agents' and probes') sent from the kill until the formation healed
	slowest            time.Duration   // the longest of them took to be answered (or given up on by the client)
	slow               []string        // those that took longer than MaxAnswer
	killed, healed     time.Time       // the kill; the end of its handling (the formation healed, the sentinel checked)
}

// kind names how the primary was lost.
func (fo *failover) kind() string {
	if fo.hostLoss {
		return "host lost (postmaster and keeper SIGKILLed)"
	}
	return "PostgreSQL SIGKILLed (keeper alive)"
}

// hostLoss reports whether failover n (from 1) loses the primary's host:
// host losses and PostgreSQL crashes alternate, a host loss first, until
// one kind runs out.
func hostLoss(cfg Config, n int) bool {
	h, c := cfg.HostLosses, cfg.Failovers-cfg.HostLosses
	if n <= 2*min(h, c) {
		return n%2 == 1
	}
	return h > c
}

// runHA is the failover run: a pg_auto_failover formation (monitor,
// primary, synchronous standby), one bcpd per role with two edges and two
// checkouts (each edge calls its own), agents buying by card and Pix over
// both edges; the schedule SIGKILLs the primary's PostgreSQL, or its
// keeper with it (its host lost; Config.HostLosses), the standby is
// promoted and the next failover fails back; it SIGKILLs service
// processes of every role and makes the webhook receiver fail. Then the checks of
// Run, plus what a failover must not break.
func runHA(ctx context.Context, cfg Config, tmp string, rng *rand.Rand, out io.Writer) ([]Violation, error) {
	f, err := newFormation(filepath.Join(tmp, "ha"))
	if err != nil {
		return nil, err
	}
	logf("starting a pg_auto_failover formation (monitor :%d, node1 :%d, node2 :%d)", f.port[0], f.port[1], f.port[2])
	defer f.stop(context.Background())
	if err := f.start(ctx); err != nil {
		return nil, err
	}
	logf("formation ready: node%d primary, synchronous standby", f.primary(ctx))
	urls, err := db.Bootstrap(ctx, f.url("postgres"), "bcpchaos")
	if err != nil {
		return nil, err
	}
	if _, err := db.MigrateUp(ctx, urls.Owner, nil); err != nil {
		return nil, err
	}
	// The checker's pool, on the multi-host URL: whichever node is primary.
	superPool, err := pgxpool.New(ctx, f.url("bcpchaos"))
	if err != nil {
		return nil, err
	}
	defer superPool.Close()

	rcv, profile, stopAgentSide, err := agentSide(cfg)
	if err != nil {
		return nil, err
	}
	defer stopAgentSide()

	// The PSP simulator first (it creates the dev PKI the edges' webhook
	// listeners and payments use): one process beside the roles, the
	// outside world, never killed.
	pkiDir := filepath.Join(tmp, "pki")
	env := baseEnv(cfg, urls.App, pkiDir)
	sim, err := pspsimProcess(cfg, tmp, env)
	if err != nil {
		return nil, err
	}
	logf("starting bcpd pspsim (faults %q)", cfg.PSPFaults)
	if err := sim.start(ctx, pkiDir); err != nil {
		return nil, err
	}
	defer sim.proc.stop()
	var procs, edges []*bcpd
	var svcURLs map[string]string
	stopAll := func() {
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop() }()
		}
		wg.Wait()
	}
	defer func() { stopAll() }()
	// The ports are picked free, then bound by the processes a moment
	// later: another test's listener can take one in between (make test
	// runs packages side by side). Such a start is tried again with new
	// ports; any other failure is the run's.
	for try := 1; ; try++ {
		if procs, edges, svcURLs, err = haTopology(cfg, tmp, env, sim.control); err != nil {
			return nil, err
		}
		// All at once: a process needs the others only per request (the
		// change feeds retry until tenants answers).
		errs := make([]error, len(procs))
		var started sync.WaitGroup
		for i, p := range procs {
			started.Add(1)
			go func() { defer started.Done(); errs[i] = p.start(ctx) }()
		}
		started.Wait()
		err = nil
		for i, e := range errs {
			if e != nil {
				err = fmt.Errorf("%s: %w", procs[i].name, e)
				break
			}
		}
		if err == nil {
			break
		}
		if try == 3 || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
		logf("a port was taken before bcpd bound it; starting again with new ports (%v)", err)
		stopAll()
	}
	logf("started %d bcpd processes: %s", len(procs), names(procs))

	ops := loadkit.RemoteClientsAt(svcURLs, operatorToken)
	ms, err := seedMerchants(ctx, ops, cfg.Merchants, profile)
	if err != nil {
		return nil, err
	}
	if _, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Sentinela", Domains: []string{sentinelHost}})); err != nil {
		return nil, fmt.Errorf("sentinel merchant: %w", err)
	}
	var publics []string
	for _, e := range edges {
		publics = append(publics, e.publicAddr)
	}
	a := newAgents(publics, profile, ms, ops, sim, cfg, superPool)
	base, err := stockSnapshot(ctx, superPool)
	if err != nil {
		return nil, err
	}
	for e := range edges {
		if _, code := a.call(ctx, 0, "create_checkout", loadkit.CreateArgs("sonda@example.com")); code != "" {
			return nil, fmt.Errorf("probe checkout through edge %d: %s", e+1, code)
		}
	}
	logf("seeded %d merchants (and %s); %d agents buying over %d edges for %s; schedule: %d failovers, %d service-process kills, %d webhook outages",
		len(ms), sentinelHost, cfg.Agents, len(edges), cfg.Duration, cfg.Failovers, cfg.Kills, cfg.Outages)

	loadCtx, stopLoad := context.WithCancel(ctx)
	a.timer.begin()
	wg := a.run(loadCtx, cfg.Agents, cfg.Seed)
	loadStart := time.Now()
	var fos []*failover
	var lastFailover time.Time
	kills := map[string][]time.Duration{} // role → kill → serving again
	for _, ev := range haSchedule(cfg, rng) {
		if !sleepUntil(ctx, loadStart.Add(ev.at)) {
			break
		}
		switch ev.kind {
		case "kill":
			var of []*bcpd
			for _, p := range procs {
				if p.role == ev.role {
					of = append(of, p)
				}
			}
			p := of[rng.IntN(len(of))]
			t0 := time.Now()
			p.kill()
			logf("kill %d/%d: SIGKILL %s", ev.n, cfg.Kills, p.name)
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
			if err := p.startRetrying(ctx); err != nil {
				stopLoad()
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			kills[p.role] = append(kills[p.role], time.Since(t0))
		case "failover":
			if len(fos) > 0 && fos[len(fos)-1].healthy < 0 {
				logf("failover %d/%d skipped: the formation did not heal after the last one", ev.n, cfg.Failovers)
				continue
			}
			lastFailover = time.Now()
			fo := failOver(ctx, cfg, f, a, edges, ops, hostLoss(cfg, ev.n))
			fos = append(fos, fo)
			logf("failover %d/%d, %s: node%d → node%d (timeline %d, %d kill(s)): new primary writable %s after the first kill, first success on it %s (edges 1, 2), probes saw %s; suspension refused at the edges after %s; formation healthy after %s",
				ev.n, cfg.Failovers, fo.kind(), fo.from, fo.to, fo.timeline, fo.kills, ms2(fo.promoted), durs(fo.firstOK), wireSummary(fo.probeWire), durs(fo.suspended), ms2(fo.healthy))
		case "outage":
			d := time.Duration(2+rng.IntN(5)) * time.Second
			rcv.outage(d)
			logf("webhook outage %d/%d: receiver refuses everything for %s", ev.n, cfg.Outages, d)
		}
	}
	sleepUntil(ctx, loadStart.Add(cfg.Duration))
	stopLoad()
	wg.Wait()
	loadTime := time.Since(loadStart)
	calls := a.timer.end()
	for _, fo := range fos {
		fo.timeAnswers(calls, cfg.MaxAnswer)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, p := range append([]*bcpd{sim.proc}, procs...) {
		if !p.running() {
			logf("%s is not running at the end of the load: starting it", p.name)
			if err := p.startRetrying(ctx); err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
		}
	}
	healthy := f.waitHealthy(ctx, 3*time.Minute)
	logf("load done (%s): %d purchases started; draining (up to %s%s); %s", loadTime.Round(time.Second), a.cnt.purchases.Load(), cfg.Drain,
		map[bool]string{true: ", recovery jobs fast-forwarded", false: ""}[cfg.Warp], pendingWork(ctx, superPool))

	checks, warped, drained, err := drain(ctx, cfg, superPool, rcv, a, base, func() (time.Time, time.Time) {
		var lk time.Time
		for _, p := range procs {
			p.mu.Lock()
			lk = later(lk, p.lastKill)
			p.mu.Unlock()
		}
		lf := later(lk, lastFailover)
		// The other processes live on: a job they started before the
		// last kill may still be working, so only jobs older than that
		// by a margin count as orphaned by a killed process.
		if margin := time.Now().Add(-20 * time.Second); lk.After(margin) {
			lk = margin
		}
		return lk, lf
	})
	if err != nil {
		return nil, err
	}
	primary := f.primary(ctx)
	for i := range checks {
		if checks[i].name == "every success answer is durable" {
			checks[i].name = fmt.Sprintf("every success answer is on the surviving primary (node%d)", primary)
		}
	}
	checks = append(checks, apiDurability(ctx, a), exits(append([]*bcpd{sim.proc}, procs...)...))
	dup, err := keptTwice(ctx, superPool)
	if err != nil {
		return nil, err
	}
	checks = append(checks, dup, twoOrders(a.led), standbyHasAll(ctx, f, primary, healthy))
	checks = append(checks, haFailoverChecks(cfg, fos, a.cnt.wires())...)

	// Summary.
	fmt.Fprintf(out, "\nbcpchaos --ha: seed %d, %s load + %s drain, %d CPUs, %s\n", cfg.Seed, loadTime.Round(time.Second), drained.Round(time.Second), runtime.NumCPU(), runtime.Version())
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "topology\t%s on a pg_auto_failover formation (monitor, primary, synchronous standby), and pspsim (never killed)\n", names(procs))
	var roleKills []string
	total := 0
	for _, r := range haRoles {
		if d := kills[r]; len(d) > 0 {
			total += len(d)
			roleKills = append(roleKills, fmt.Sprintf("%s %d (serving again p50 %s, max %s)", r, len(d), ms2(pct(d, .5)), ms2(pct(d, 1))))
		}
	}
	hosts := 0
	for _, fo := range fos {
		if fo.hostLoss {
			hosts++
		}
	}
	fmt.Fprintf(tw, "faults\t%d primary failovers (%d of its host, %d of its PostgreSQL), %d service-process SIGKILLs: %s; %d webhook outages%s\n",
		len(fos), hosts, len(fos)-hosts, total, strings.Join(roleKills, ", "), cfg.Outages,
		map[bool]string{true: fmt.Sprintf(", %d recovery jobs fast-forwarded", warped), false: ""}[cfg.Warp])
	for i, fo := range fos {
		fmt.Fprintf(tw, "failover %d\t%s, node%d → node%d, timeline %d, %d SIGKILL(s) of node%d's postmaster: new primary writable %s after the first; first success on it %s (edges 1, 2; first success at all %s); probes saw %s; agents saw %s; slowest of the %d answers until healed %s; suspension refused after %s, resumption served after %s; primary with a synchronous standby again after %s\n",
			i+1, fo.kind(), fo.from, fo.to, fo.timeline, fo.kills, fo.from, ms2(fo.promoted), durs(fo.firstOK), durs(fo.anyOK), wireSummary(fo.probeWire), wireSummary(fo.agentWire),
			fo.answers, ms2(fo.slowest), durs(fo.suspended), durs(fo.resumed), ms2(fo.healthy))
	}
	simLines(ctx, tw, sim, a)
	agentLines(tw, a, rcv)
	fmt.Fprintf(tw, "left open\t%s\n", pendingWork(ctx, superPool))
	tw.Flush()
	fmt.Fprintln(out)
	logs := []string{sim.proc.logPath}
	for _, p := range procs {
		logs = append(logs, p.logPath)
	}
	logs = append(logs, filepath.Join(f.dir, "node1.log"), filepath.Join(f.dir, "node2.log"))
	return report(ctx, out, cfg, superPool, checks, logs...), nil
}

// haTopology is the HA run's processes (not started): tenants, catalog,
// pricing, payments and orders once, checkout and edge twice, edge i
// calling checkout i, all on the formation's multi-host URL (env), the
// payments process paying through the simulator at simURL. Each edge has
// a TLS webhook listener; payments registers edge-1's port with the PSP
// (one address, as a load balancer's would be). It returns the
// processes, the edges and the service URLs.
func haTopology(cfg Config, tmp string, env []string, simURL string) (procs, edges []*bcpd, urls map[string]string, err error) {
	type spec struct{ name, role string }
	specs := []spec{{"tenants", platform.Tenants}, {"catalog", platform.Catalog}, {"pricing", platform.Pricing}, {"orders", platform.Orders},
		{"payments", platform.Payments}, {"checkout-1", platform.Checkout}, {"checkout-2", platform.Checkout}, {"edge-1", platform.Edge}, {"edge-2", platform.Edge}}
	internal := map[string]string{}
	for _, s := range specs {
		p, err := freePort()
		if err != nil {
			return nil, nil, nil, err
		}
		internal[s.name] = "127.0.0.1:" + strconv.Itoa(p)
	}
	urls = map[string]string{}
	for _, s := range []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Payments, platform.Orders} {
		urls[s] = "http://" + internal[s]
	}
	urls[platform.Checkout] = "http://" + internal["checkout-1"]
	env = slices.Clone(env)
	for s, u := range urls {
		env = append(env, "BCP_"+strings.ToUpper(s)+"_URL="+u)
	}
	webhooks := map[string]int{}
	for _, n := range []string{"edge-1", "edge-2"} {
		if webhooks[n], err = freePort(); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, s := range specs {
		b := &bcpd{bin: cfg.BcpdBin, name: s.name, role: s.role, logPath: filepath.Join(tmp, s.name+".log"), internal: internal[s.name]}
		b.env = append(slices.Clone(env), "BCP_INTERNAL_ADDR="+b.internal)
		switch s.role {
		case platform.Edge:
			p, err := freePort()
			if err != nil {
				return nil, nil, nil, err
			}
			n := strings.TrimPrefix(s.name, "edge-")
			// Each edge advertises its own port (agents' continue URLs)
			// and calls its own checkout process; its webhook listener
			// takes the PSP's webhooks over mTLS.
			b.publicAddr = "127.0.0.1:" + strconv.Itoa(p)
			b.env = append(b.env, "BCP_PUBLIC_ADDR="+b.publicAddr, "BCP_PUBLIC_PORT="+strconv.Itoa(p), "BCP_CHECKOUT_URL=http://"+internal["checkout-"+n],
				"BCP_WEBHOOK_ADDR=127.0.0.1:"+strconv.Itoa(webhooks[s.name]), "BCP_REQUEST_TIMEOUT="+haRequestTimeout.String())
			edges = append(edges, b)
		case platform.Payments:
			b.env = append(b.env, "BCP_PSPSIM_URL="+simURL, "BCP_WEBHOOK_PORT="+strconv.Itoa(webhooks["edge-1"]))
		}
		procs = append(procs, b)
	}
	return procs, edges, urls, nil
}

func names(ps []*bcpd) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.name)
	}
	return strings.Join(s, ", ")
}

// haSchedule spreads the failovers evenly over the load (each in its own
// slice of it) and the kills and outages at random; the first kills take
// each role in turn (shuffled), so every role is killed once when Kills ≥
// 7. Events run one after the other: a failover's handling (up to the
// formation's healing) delays the events scheduled during it.
func haSchedule(cfg Config, rng *rand.Rand) []event {
	var ev []event
	span := func() time.Duration { return time.Duration(float64(cfg.Duration) * (0.05 + 0.9*rng.Float64())) }
	for i := range cfg.Failovers {
		slice := cfg.Duration * 8 / 10 / time.Duration(cfg.Failovers)
		ev = append(ev, event{at: cfg.Duration/10 + slice*time.Duration(i) + time.Duration(rng.Float64()*float64(slice)/2), kind: "failover"})
	}
	roles := slices.Clone(haRoles)
	rng.Shuffle(len(roles), func(i, j int) { roles[i], roles[j] = roles[j], roles[i] })
	for i := range cfg.Kills {
		r := roles[rng.IntN(len(roles))]
		if i < len(roles) {
			r = roles[i]
		}
		ev = append(ev, event{at: span(), kind: "kill", role: r})
	}
	for range cfg.Outages {
		ev = append(ev, event{at: span(), kind: "outage"})
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].at < ev[j].at })
	n := map[string]int{}
	for i := range ev {
		n[ev[i].kind]++
		ev[i].n = n[ev[i].kind]
	}
	return ev
}

// failOver loses the primary — its postmaster SIGKILLed and kept down
// (its keeper lives on and reports it; crash) or, hostLoss, its postmaster
// and keeper SIGKILLed together (loseHost) — until the standby is
// promoted (then its keeper brings it back, or is started again, and it
// rejoins as the standby), while each edge is probed with a
// create_checkout every 100 ms, and measures the promotion, the first
// success on the new primary at each edge, what agents and probes were
// answered meanwhile and how long their answers took, how fast a merchant
// suspended then is refused at both edges, and when the formation has a
// synchronous standby again.
func failOver(ctx context.Context, cfg Config, f *formation, a *agents, edges []*bcpd, ops *platform.Clients, hostLoss bool) *failover {
	fo := &failover{from: f.primary(ctx), hostLoss: hostLoss, promoted: -1, healthy: -1, probeWire: map[string]int{}}
	fo.to = 3 - fo.from
	for range edges {
		fo.firstOK, fo.anyOK = append(fo.firstOK, -1), append(fo.anyOK, -1)
		fo.suspended, fo.resumed = append(fo.suspended, -1), append(fo.resumed, -1)
	}
	if fo.from == 0 {
		logf("failover: no primary to kill")
		return fo
	}
	agentsBefore := a.cnt.wires()
	var mu sync.Mutex
	var promotedAt time.Time
	t0 := time.Now()
	pctx, stop := context.WithTimeout(ctx, 90*time.Second)
	defer stop()
	// The old primary's PostgreSQL stays down until the standby is
	// promoted, then its keeper brings it back as the new standby (a lost
	// host's keeper is started again then).
	promoted, crashed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(crashed)
		if hostLoss {
			if err := f.loseHost(fo.from); err != nil {
				logf("failover: %v", err)
				return
			}
			mu.Lock()
			fo.kills = 1
			mu.Unlock()
			select {
			case <-promoted:
			case <-time.After(60 * time.Second):
			}
			if err := f.rejoin(fo.from); err != nil {
				logf("failover: node%d's keeper: %v", fo.from, err)
			}
			return
		}
		n, err := f.crash(pctx, fo.from, promoted, 60*time.Second)
		mu.Lock()
		fo.kills = n
		mu.Unlock()
		if err != nil {
			logf("failover: %v", err)
		}
	}()
	go func() {
		defer close(promoted)
		for pctx.Err() == nil && !f.writable(pctx, fo.to) {
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		if pctx.Err() == nil {
			promotedAt = time.Now()
			fo.promoted = promotedAt.Sub(t0)
		}
		mu.Unlock()
	}()
	var wg sync.WaitGroup
	for e := range edges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &agentclient.Client{Endpoint: a.clients[0][e].Endpoint, Transport: a.clients[0][e].Transport, Timeout: 5 * time.Second}
			for pctx.Err() == nil {
				start := time.Now()
				resp, err := cl.CallTool(pctx, "create_checkout", loadkit.CreateArgs("sonda@example.com"))
				a.timer.record("create_checkout (probe)", resp, err, start)
				c, code := loadkit.Decode(pctx, resp, err)
				if pctx.Err() != nil {
					return
				}
				at := time.Now()
				mu.Lock()
				if code == "" {
					a.led.saw(0, c) // what the probes were told must be durable too
					if fo.anyOK[e] < 0 {
						fo.anyOK[e] = at.Sub(t0)
					}
					if !promotedAt.IsZero() {
						fo.firstOK[e] = at.Sub(t0)
						mu.Unlock()
						return
					}
				} else if w := wireOf(resp, err); w != "" {
					fo.probeWire[w]++
				}
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	stop()
	<-crashed
	fo.agentWire = diffWires(a.cnt.wires(), agentsBefore)
	fo.timeline = f.timeline(ctx, fo.to)

	// The platform works on the new primary: a merchant suspended now must
	// be refused at every edge within seconds.
	fo.suspended = sentinelStatus(ctx, edges, ops, tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED, http.StatusOK, http.StatusForbidden, cfg.MaxSuspend)
	fo.resumed = sentinelStatus(ctx, edges, ops, tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE, http.StatusForbidden, http.StatusOK, cfg.MaxSuspend)
	if f.waitHealthy(ctx, 3*time.Minute) == nil {
		fo.healthy = time.Since(t0)
	}
	fo.killed, fo.healed = t0, time.Now()
	return fo
}

// timeAnswers finds, among the calls timed over the load, those sent from
// the kill until the formation healed (the retries of requests the
// failover cut short come after the first successes): how many, the
// slowest, and those slower than bound.
func (fo *failover) timeAnswers(calls []timedCall, bound time.Duration) {
	for _, c := range calls {
		if c.start.Before(fo.killed) || c.start.After(fo.healed) {
			continue
		}
		fo.answers++
		fo.slowest = max(fo.slowest, c.took)
		if c.took > bound {
			fo.slow = append(fo.slow, fmt.Sprintf("%s after %s (sent %s after the kill)", c.what, ms2(c.took), ms2(c.start.Sub(fo.killed))))
		}
	}
}

// sentinelStatus sets the sentinel merchant's status (retrying while the
// platform is unavailable) and returns, per edge, how long after that its
// profile answered want there (-1: not within 2×bound). Each edge first
// answers before (the merchant as it is, now in its cache).
func sentinelStatus(ctx context.Context, edges []*bcpd, ops *platform.Clients, status tenantsv1.TenantStatus, before, want int, bound time.Duration) []time.Duration {
	hc := &http.Client{Timeout: 5 * time.Second}
	get := func(e *bcpd) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.publicAddr+"/.well-known/bcp", nil)
		req.Host = sentinelHost
		resp, err := hc.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	out := make([]time.Duration, len(edges))
	for i := range out {
		out[i] = -1
	}
	for _, e := range edges {
		for deadline := time.Now().Add(30 * time.Second); get(e) != before && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
	}
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err = ops.Tenants.SetTenantStatus(ctx, connect.NewRequest(&tenantsv1.SetTenantStatusRequest{Tenant: sentinelHost, Status: status}))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		logf("sentinel status %s: %v", status, err)
		return out
	}
	t0 := time.Now()
	for deadline := t0.Add(2 * bound); time.Now().Before(deadline) && slices.Contains(out, -1); {
		for i, e := range edges {
			if out[i] < 0 && get(e) == want {
				out[i] = time.Since(t0)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return out
}

func diffWires(now, before map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range now {
		if n := v - before[k]; n > 0 {
			d[k] = n
		}
	}
	return d
}

func durs(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, ms2(d))
	}
	return strings.Join(s, ", ")
}

// haFailoverChecks: every failover promoted the standby and the platform
// answered on it within MaxFailover at both edges, a suspension then
// reached both edges within MaxSuspend, the formation healed, and no agent
// or probe ever got an internal error or a 503 without Retry-After.
func haFailoverChecks(cfg Config, fos []*failover, agentWire map[string]int) []check {
	rec := check{name: fmt.Sprintf("kill of the primary → first success on the new primary at both edges ≤ %s (target 15 s)", cfg.MaxFailover), checked: len(fos)}
	sus := check{name: fmt.Sprintf("a merchant suspended after a failover is refused at both edges ≤ %s", cfg.MaxSuspend), checked: len(fos)}
	heal := check{name: "the formation heals after each failover (primary + synchronous standby)", checked: len(fos)}
	held := check{name: fmt.Sprintf("every call from a failover's kill until the formation healed answered within %s (the edges' request deadline %s and a margin)", cfg.MaxAnswer, haRequestTimeout)}
	wire := check{name: "no answer was an internal error (-32603, HTTP 500) or a 503 without Retry-After"}
	if len(fos) < cfg.Failovers {
		rec.violations = append(rec.violations, fmt.Sprintf("%d of %d failovers carried out", len(fos), cfg.Failovers))
	}
	all := maps.Clone(agentWire)
	for i, fo := range fos {
		for e, d := range fo.firstOK {
			if d < 0 || d > cfg.MaxFailover {
				rec.violations = append(rec.violations, fmt.Sprintf("failover %d (%s), edge %d: %s", i+1, fo.kind(), e+1, ms2(d)))
			}
		}
		held.checked += fo.answers
		for _, s := range fo.slow {
			held.violations = append(held.violations, fmt.Sprintf("failover %d: %s", i+1, s))
		}
		for e, d := range fo.suspended {
			if d < 0 || d > cfg.MaxSuspend {
				sus.violations = append(sus.violations, fmt.Sprintf("failover %d, edge %d: %s", i+1, e+1, ms2(d)))
			}
		}
		if fo.healthy < 0 {
			heal.violations = append(heal.violations, fmt.Sprintf("failover %d (node%d → node%d)", i+1, fo.from, fo.to))
		}
		for k, v := range fo.probeWire {
			all[k] += v
		}
	}
	for k, v := range all {
		wire.checked += v
		if badWire(k) {
			wire.violations = append(wire.violations, fmt.Sprintf("%s ×%d", k, v))
		}
	}
	sort.Strings(wire.violations)
	return []check{rec, held, sus, heal, wire}
}

// keptTwice lists checkouts that kept money twice at the processor or the
// PSP (a charge or a Pix not refunded, for two attempts, or twice for one).
// The simulator's ledgers are its accounts' (schema pspsim, one tenant per
// account): a charge is the attempt's by its idempotency key, a Pix by its
// txid, both globally unique.
func keptTwice(ctx context.Context, pool *pgxpool.Pool) (check, error) {
	c := check{name: "no checkout keeps two charges (card or Pix, not refunded)"}
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT (tenant_id, checkout_id)) FROM payments.attempts`).Scan(&c.checked); err != nil {
		return c, err
	}
	bad, err := runQuery(ctx, pool, keptTwiceQuery)
	c.violations = bad
	return c, err
}

const keptTwiceQuery = `WITH kept AS (
	  SELECT a.tenant_id, a.checkout_id FROM pspsim.card_intents ci
	    JOIN payments.attempts a ON a.id = ci.idempotency_key
	   WHERE ci.status = 'succeeded' AND ci.amount_refunded < ci.amount
	  UNION ALL
	  SELECT a.tenant_id, a.checkout_id FROM pspsim.pix p
	    JOIN payments.attempts a ON a.txid = p.txid
	   WHERE NOT EXISTS (SELECT 1 FROM pspsim.refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id AND r.status = 'DEVOLVIDO'))
	SELECT checkout_id || ' (' || count(*) || ' kept)' FROM kept GROUP BY tenant_id, checkout_id HAVING count(*) > 1 ORDER BY 1`

// twoOrders: no checkout was answered with two different orders.
func twoOrders(l *ledger) check {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.checkouts {
		if s.orderID != "" {
			n++
		}
	}
	return check{name: "no checkout was answered with two different orders", checked: n, violations: slices.Clone(l.twoOrders)}
}

// standbyHasAll compares, once the standby has replayed everything the
// primary wrote, what both hold of the money path: checkouts with their
// status, orders, attempts with their status, and the PSP simulator's card
// charges, Pix and devoluções.
func standbyHasAll(ctx context.Context, f *formation, primary int, healthy error) check {
	c := check{name: "the synchronous standby holds what the primary holds (checkouts, orders, attempts; the PSP's charges, Pix and refunds)"}
	if primary == 0 || healthy != nil {
		c.violations = []string{fmt.Sprintf("no primary with a standby to compare (primary node%d, %v)", primary, healthy)}
		return c
	}
	open := func(i int) (*pgx.Conn, error) { return pgx.Connect(ctx, f.nodeURL(i, "bcpchaos")) }
	p, err := open(primary)
	if err != nil {
		c.violations = []string{"primary: " + err.Error()}
		return c
	}
	defer p.Close(context.Background())
	s, err := open(3 - primary)
	if err != nil {
		c.violations = []string{"standby: " + err.Error()}
		return c
	}
	defer s.Close(context.Background())
	var lsn string
	if err := p.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		c.violations = []string{"primary LSN: " + err.Error()}
		return c
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var caught bool
		if err := s.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&caught); err == nil && caught {
			break
		}
		if time.Now().After(deadline) {
			c.violations = []string{"the standby did not replay up to " + lsn + " within 30 s"}
			return c
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, q := range standbyDigests {
		var np, ns int
		var hp, hs string
		if err := p.QueryRow(ctx, q.sql).Scan(&np, &hp); err != nil {
			c.violations = append(c.violations, q.what+" on the primary: "+err.Error())
			continue
		}
		if err := s.QueryRow(ctx, q.sql).Scan(&ns, &hs); err != nil {
			c.violations = append(c.violations, q.what+" on the standby: "+err.Error())
			continue
		}
		c.checked += np
		if np != ns || hp != hs {
			c.violations = append(c.violations, fmt.Sprintf("%s: %d on the primary, %d on the standby (digests differ: %t)", q.what, np, ns, hp != hs))
		}
	}
	return c
}

// standbyDigests are what standbyHasAll compares: a count and a digest
// per table of the money path.
var standbyDigests = []struct{ what, sql string }{
	{"checkouts", `SELECT count(*), coalesce(md5(string_agg(id || ':' || status, ',' ORDER BY tenant_id, id)), '') FROM checkout.sessions`},
	{"orders", `SELECT count(*), coalesce(md5(string_agg(id || ':' || checkout_id, ',' ORDER BY tenant_id, id)), '') FROM orders.orders`},
	{"payment attempts", `SELECT count(*), coalesce(md5(string_agg(id || ':' || status, ',' ORDER BY tenant_id, id)), '') FROM payments.attempts`},
	// The PSP simulator's ledgers, on the same formation.
	{"card charges", `SELECT count(*), coalesce(md5(string_agg(id || ':' || status || ':' || amount_refunded, ',' ORDER BY tenant_id, id)), '') FROM pspsim.card_intents`},
	{"Pix received", `SELECT count(*), coalesce(md5(string_agg(e2e_id, ',' ORDER BY tenant_id, e2e_id)), '') FROM pspsim.pix`},
	{"Pix refunds", `SELECT count(*), coalesce(md5(string_agg(e2e_id || ':' || id || ':' || status, ',' ORDER BY tenant_id, e2e_id, id)), '') FROM pspsim.refunds`},
}
