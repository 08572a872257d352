// Command bcpchaos runs the fault injector of package platform/chaos:
// SIGKILLs of `bcpd all`, PostgreSQL restarts, webhook receiver and PSP
// failures under sustained purchases, then invariant checks over SQL and
// MCP. It exits 1 on a violation, 2 when the run could not be carried out.
//
//	go run ./cmd/bcpchaos                 # full run (make chaos)
//	go run ./cmd/bcpchaos --short         # CI form (make chaos-short)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bcpdev/bcp/platform/chaos"
	"github.com/bcpdev/bcp/services/payments"
)

func main() {
	short := len(os.Args) > 1 && (os.Args[1] == "--short" || os.Args[1] == "-short")
	cfg := chaos.FullConfig()
	if short {
		cfg = chaos.ShortConfig()
	}
	flag.Bool("short", false, "the CI form: 3 kills, 1 PostgreSQL restart, recovery jobs fast-forwarded (must come first)")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "random seed (0: from the clock; printed)")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "load phase (the fault schedule spreads over it)")
	flag.IntVar(&cfg.Kills, "kills", cfg.Kills, "SIGKILLs of bcpd")
	flag.IntVar(&cfg.PGRestarts, "pg-restarts", cfg.PGRestarts, "PostgreSQL restarts (alternately fast and immediate shutdowns)")
	flag.IntVar(&cfg.Outages, "webhook-outages", cfg.Outages, "periods (2-6 s) when the order webhook receiver answers 503 to everything")
	flag.IntVar(&cfg.Agents, "agents", cfg.Agents, "concurrent simulated agents")
	flag.IntVar(&cfg.Merchants, "merchants", cfg.Merchants, "merchants seeded")
	flag.Float64Var(&cfg.PixShare, "pix-share", cfg.PixShare, "share of purchases paid with Pix (the rest by card)")
	flag.Float64Var(&cfg.PSPTimeout, "psp-timeouts", cfg.PSPTimeout, "share of simulated PSP/processor calls that time out ("+payments.SimFaultsEnv+")")
	flag.Float64Var(&cfg.WebhookFailFirst, "webhook-fail-first", cfg.WebhookFailFirst, "share of order webhooks whose first delivery the receiver refuses")
	flag.DurationVar(&cfg.PGDown, "pg-down", cfg.PGDown, "how long PostgreSQL stays down per restart")
	flag.DurationVar(&cfg.Drain, "drain", cfg.Drain, "after the load: how long the invariants may take to hold (recovery jobs run on their own clocks)")
	flag.BoolVar(&cfg.Warp, "warp", cfg.Warp, "fast-forward the platform's durable recovery work after the load (stands in for minutes passing)")
	flag.StringVar(&cfg.BcpdBin, "bcpd", "", "bcpd binary (default: go build ./cmd/bcpd into the run directory)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the run directory (PostgreSQL data, bcpd.log)")
	flag.DurationVar(&cfg.MaxDownP99, "max-down-p99", cfg.MaxDownP99, "fail when the edge's p99 answer time while PostgreSQL is down exceeds this")
	flag.DurationVar(&cfg.MaxRecovery, "max-recovery", cfg.MaxRecovery, "fail when the first success after PostgreSQL is back takes longer than this")
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
