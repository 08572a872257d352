// Command bcpchaos runs the fault injector of package platform/chaos:
// SIGKILLs of `bcpd all`, PostgreSQL restarts and webhook receiver
// failures under sustained purchases paid through the wire clients at the
// PSP simulator (`bcpd pspsim`, never killed) with its HTTP faults on
// (--psp-faults) and a share of wrong-amount Pix (--wrong-amount), then
// invariant checks over SQL and MCP and the faults the simulator injected
// by kind. With --ha, primary failovers of a pg_auto_failover formation
// (the primary's PostgreSQL SIGKILLed, or with its keeper: its host lost)
// and SIGKILLs of one-role processes instead. It exits 1 on a violation,
// 2 when the run could not be carried out.
//
//	go run ./cmd/bcpchaos                 # full run (make chaos)
//	go run ./cmd/bcpchaos --short         # CI form (make chaos-short)
//	go run ./cmd/bcpchaos --ha            # failover run (make chaos-ha)
//	go run ./cmd/bcpchaos --ha --short    # its CI form (make chaos-ha-short)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/bcpdev/bcp/platform/chaos"
)

func main() {
	// --ha and --short choose the defaults of every other flag, so they
	// are read first, wherever they are.
	short := slices.ContainsFunc(os.Args[1:], func(a string) bool { return a == "--short" || a == "-short" })
	ha := slices.ContainsFunc(os.Args[1:], func(a string) bool { return a == "--ha" || a == "-ha" })
	cfg := chaos.FullConfig()
	switch {
	case ha && short:
		cfg = chaos.ShortHAConfig()
	case ha:
		cfg = chaos.FullHAConfig()
	case short:
		cfg = chaos.ShortConfig()
	}
	flag.Bool("short", false, "the CI form: 3 kills, 1 PostgreSQL restart, recovery jobs fast-forwarded (with --ha: 2 failovers, 7 kills)")
	flag.Bool("ha", false, "the failover run: one bcpd per role (two edges, two checkouts) on a pg_auto_failover formation; primary failovers and service-process kills")
	flag.IntVar(&cfg.Failovers, "failovers", cfg.Failovers, "--ha: SIGKILLs of the primary (the standby is promoted; the next fails back)")
	flag.IntVar(&cfg.HostLosses, "host-losses", cfg.HostLosses, "--ha: of the failovers, how many SIGKILL the primary's pg_autoctl keeper with its postmaster (its host lost; alternating with PostgreSQL crashes, a host loss first)")
	flag.DurationVar(&cfg.MaxFailover, "max-failover", cfg.MaxFailover, "--ha: fail when a failover's kill → first success on the new primary takes longer")
	flag.DurationVar(&cfg.MaxAnswer, "max-answer", cfg.MaxAnswer, "--ha: fail when a call sent during a failover takes longer to be answered")
	flag.DurationVar(&cfg.MaxSuspend, "max-suspend", cfg.MaxSuspend, "--ha: fail when a merchant suspended after a failover is served longer by an edge")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "random seed (0: from the clock; printed)")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "load phase (the fault schedule spreads over it)")
	flag.IntVar(&cfg.Kills, "kills", cfg.Kills, "SIGKILLs of bcpd (--ha: of service processes, each role once from 7)")
	flag.IntVar(&cfg.PGRestarts, "pg-restarts", cfg.PGRestarts, "PostgreSQL restarts (alternately fast and immediate shutdowns)")
	flag.IntVar(&cfg.Outages, "webhook-outages", cfg.Outages, "periods (2-6 s) when the order webhook receiver answers 503 to everything")
	flag.IntVar(&cfg.Agents, "agents", cfg.Agents, "concurrent simulated agents")
	flag.IntVar(&cfg.Merchants, "merchants", cfg.Merchants, "merchants seeded")
	flag.Float64Var(&cfg.PixShare, "pix-share", cfg.PixShare, "share of purchases paid with Pix (the rest by card)")
	flag.StringVar(&cfg.PSPFaults, "psp-faults", cfg.PSPFaults, "the PSP simulator's HTTP faults for the whole run, as bcpd --pspsim-faults takes them (\"\": none); kinds: error5xx, reset_after_write, latency (+latency_share), drop_webhook, duplicate_webhook, delay_webhook (+webhook_delay), refund_rejected")
	flag.Float64Var(&cfg.WrongAmount, "wrong-amount", cfg.WrongAmount, "share of the buyers' Pix payments at the simulator made of another amount than charged (the platform refunds them)")
	flag.Float64Var(&cfg.WebhookFailFirst, "webhook-fail-first", cfg.WebhookFailFirst, "share of order webhooks whose first delivery the receiver refuses")
	flag.DurationVar(&cfg.PGDown, "pg-down", cfg.PGDown, "how long PostgreSQL stays down per restart")
	flag.DurationVar(&cfg.Drain, "drain", cfg.Drain, "after the load: how long the invariants may take to hold (recovery jobs run on their own clocks)")
	flag.BoolVar(&cfg.Warp, "warp", cfg.Warp, "fast-forward the platform's durable recovery work after the load (stands in for minutes passing)")
	flag.StringVar(&cfg.BcpdBin, "bcpd", "", "bcpd binary (default: go build ./cmd/bcpd into the run directory)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the run directory (PostgreSQL data, bcpd.log)")
	flag.DurationVar(&cfg.MaxDownP99, "max-down-p99", cfg.MaxDownP99, "fail when the edge's p99 answer time while PostgreSQL is down exceeds this")
	flag.DurationVar(&cfg.MaxRecovery, "max-recovery", cfg.MaxRecovery, "fail when the first success after PostgreSQL is back takes longer than this")
	flag.DurationVar(&cfg.MaxKillRecovery, "max-kill-recovery", cfg.MaxKillRecovery, "fail when, after a kill, what the killed bcpd left (completions, charges in flight, reservations) takes this long or longer from the restart to be consistent")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	violated, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bcpchaos:", err)
		os.Exit(2)
	}
	if len(violated) > 0 {
		os.Exit(1)
	}
}
