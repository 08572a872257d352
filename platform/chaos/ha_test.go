package chaos_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/bcpdev/bcp/platform/chaos"
)

// TestChaosHAShort is `make chaos-ha-short` as a Go test: two failovers
// of a pg_auto_failover formation (the primary's host lost — its
// postmaster and pg_autoctl keeper SIGKILLed together —, then the new
// primary's PostgreSQL alone; each time the standby promoted) and a
// SIGKILL of one process of each role (two edges and two checkouts, one
// process for each other service) under card and Pix purchases over both
// edges, then every invariant of make chaos and the failovers' own checks
// (platform/chaos, runHA). About two minutes,
// so it runs when make chaos's short form does: BCP_CHAOS=1 (make test)
// or CI set; BCP_CHAOS=0 skips it. It needs pg_autoctl (Debian's
// postgresql-15-auto-failover and pg-auto-failover-cli; .ci/run installs
// them) and says so when it is missing. BCP_CHAOS_SEED replays a
// schedule; BCP_CHAOS_KEEP=1 keeps the run directory.
func TestChaosHAShort(t *testing.T) {
	if v := os.Getenv("BCP_CHAOS"); v == "0" || (v == "" && os.Getenv("CI") == "") {
		t.Skip("fault injection runs with BCP_CHAOS=1 (or CI=true); make chaos-ha-short is the same run")
	}
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		t.Skip("pg_autoctl is not installed (apt-get install postgresql-15-auto-failover pg-auto-failover-cli): the failover run needs it")
	}
	cfg := chaos.ShortHAConfig()
	cfg.Seed = uint64(time.Now().UnixNano())
	if s := os.Getenv("BCP_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BCP_CHAOS_SEED: %v", err)
		}
		cfg.Seed = seed
	}
	cfg.Keep = os.Getenv("BCP_CHAOS_KEEP") == "1"
	var out bytes.Buffer
	cfg.Out, cfg.Log = &out, &out
	// A passing run takes about two minutes; the drain alone may take
	// two more before a failing run reports.
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	violated, err := chaos.Run(ctx, cfg)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("the run could not be carried out (seed %d): %v", cfg.Seed, err)
	}
	for _, v := range violated {
		t.Errorf("invariant violated under failover and process kills: %s", v)
	}
	if len(violated) > 0 {
		t.Logf("replay: BCP_CHAOS=1 BCP_CHAOS_SEED=%d BCP_CHAOS_KEEP=1 go test ./platform/chaos -run TestChaosHAShort -count=1 -v", cfg.Seed)
	}
}
