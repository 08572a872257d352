package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bcpdev/bcp/internal/procstat"
)

// cpuTimes is CPU time used so far by the platform and by its PostgreSQL
// cluster (the postmaster and its children; other clusters on the machine
// are not counted). In process, the platform is this process (the PSP
// simulator and the simulated agents share it: a --cpuprofile tells them
// apart by the label side); with --target-pid it is the target's
// processes, read from /proc, and this process — the load generator — is
// counted apart in loadgen and left out of the figures.
type cpuTimes struct {
	self, postgres, loadgen time.Duration
}

// CPUUse is the CPU spent during a phase, in seconds, and per completed
// operation in milliseconds.
type CPUUse struct {
	ProcessSeconds  float64 `json:"process_s"`
	PostgresSeconds float64 `json:"postgres_s"`
	ProcessMsPerOp  float64 `json:"process_ms_per_op"`
	PostgresMsPerOp float64 `json:"postgres_ms_per_op"`
	// The load generator's own, with --target-pid (not in the figures above).
	LoadGenMsPerOp float64 `json:"loadgen_ms_per_op,omitempty"`
}

func (e *env) cpu() cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if len(e.targetPIDs) > 0 {
		t.loadgen, t.self = t.self, 0
		for _, pid := range e.targetPIDs {
			// Its own time only: a bcpd dev's PostgreSQL is its child,
			// and is counted below.
			if st, ok := procstat.Read(pid); ok {
				t.self += st.CPU
			}
		}
	}
	e.eachPGProc(func(_ string, postmaster bool, st procstat.Stat) {
		t.postgres += st.CPU
		if postmaster {
			// The backends and workers that have exited (the postmaster
			// reaps them). Without them the sum shrank, even below zero,
			// when connections closed.
			t.postgres += st.Children
		}
	})
	return t
}

// eachPGProc calls fn for the private cluster's postmaster and each of
// its live children.
func (e *env) eachPGProc(fn func(pid string, postmaster bool, st procstat.Stat)) {
	dir := e.pgdata
	if dir == "" {
		if e.tmp == "" {
			return // a --target without --target-pgdata, or a --peer
		}
		dir = filepath.Join(e.tmp, "pgdata")
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return
	}
	postmaster := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		st, ok := procstat.Read(d.Name())
		if !ok || (d.Name() != postmaster && st.PPID != postmaster) {
			continue
		}
		fn(d.Name(), d.Name() == postmaster, st)
	}
}

// String is the report's CPU line; below a millisecond per operation (the
// no-op's) it keeps two decimals.
func (u *CPUUse) String() string {
	f := "%.1f"
	if u.ProcessMsPerOp < 1 && u.PostgresMsPerOp < 1 {
		f = "%.2f"
	}
	out := fmt.Sprintf("CPU: process %.1f s ("+f+" ms/op), PostgreSQL %.1f s ("+f+" ms/op)", u.ProcessSeconds, u.ProcessMsPerOp, u.PostgresSeconds, u.PostgresMsPerOp)
	if u.LoadGenMsPerOp > 0 {
		out += fmt.Sprintf("; load generator "+f+" ms/op, not counted", u.LoadGenMsPerOp)
	}
	return out
}

func cpuUse(before, after cpuTimes, ops int64) *CPUUse {
	u := &CPUUse{ProcessSeconds: (after.self - before.self).Seconds(), PostgresSeconds: (after.postgres - before.postgres).Seconds()}
	if ops > 0 {
		u.ProcessMsPerOp = u.ProcessSeconds * 1000 / float64(ops)
		u.PostgresMsPerOp = u.PostgresSeconds * 1000 / float64(ops)
		u.LoadGenMsPerOp = (after.loadgen - before.loadgen).Seconds() * 1000 / float64(ops)
	}
	return u
}

// pgProcs is the CPU used so far by each live process of the private
// cluster, keyed by pid and described by its title ("postgres:
// checkpointer", "postgres: bcp_app bcpbench [local] idle", …): which one
// is busy, for diagnosis.
func (e *env) pgProcs() map[string]pgProc {
	out := map[string]pgProc{}
	e.eachPGProc(func(pid string, _ bool, st procstat.Stat) {
		title, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		t := strings.TrimSpace(strings.ReplaceAll(string(title), "\x00", " "))
		// Backends change their title with their state; keep the role.
		if j := strings.Index(t, "[local]"); j > 0 {
			t = t[:j+len("[local]")]
		}
		out[pid] = pgProc{title: t, cpu: st.CPU}
	})
	return out
}

type pgProc struct {
	title string
	cpu   time.Duration
}

// pgProcDelta sums, per title, the CPU each live process used between two
// snapshots (processes that exited in between are not in it).
func pgProcDelta(before, after map[string]pgProc) map[string]time.Duration {
	out := map[string]time.Duration{}
	for pid, a := range after {
		out[a.title] += a.cpu - before[pid].cpu
	}
	return out
}

// checkDurable refuses a target cluster started without durable commits
// (fsync or full-page writes off, as tests start theirs): a figure bought
// with durability does not count. PostgreSQL writes the command line it
// was started with to postmaster.opts.
func checkDurable(pgdata string) error {
	if pgdata == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.opts"))
	if err != nil {
		return fmt.Errorf("--target-pgdata: %w", err)
	}
	for _, off := range []string{"fsync=off", "full_page_writes=off", "synchronous_commit=off"} {
		if strings.Contains(string(b), off) {
			return fmt.Errorf("--target-pgdata %s: its PostgreSQL runs with %s; measure only durable commits", pgdata, off)
		}
	}
	return nil
}
