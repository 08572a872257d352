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

// cpuTimes is CPU time used so far by this process (the platform, the PSP
// simulator and the simulated agents share it: a --cpuprofile tells them
// apart by the label side) and by the private PostgreSQL cluster (the
// postmaster and its children; other clusters on the machine are not
// counted).
type cpuTimes struct {
	self, postgres time.Duration
}

// CPUUse is the CPU spent during a phase, in seconds, and per completed
// operation in milliseconds.
type CPUUse struct {
	ProcessSeconds  float64 `json:"process_s"`
	PostgresSeconds float64 `json:"postgres_s"`
	ProcessMsPerOp  float64 `json:"process_ms_per_op"`
	PostgresMsPerOp float64 `json:"postgres_ms_per_op"`
}

func (e *env) cpu() cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	b, err := os.ReadFile(filepath.Join(e.tmp, "pgdata", "postmaster.pid"))
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
	return fmt.Sprintf("CPU: process %.1f s ("+f+" ms/op), PostgreSQL %.1f s ("+f+" ms/op)", u.ProcessSeconds, u.ProcessMsPerOp, u.PostgresSeconds, u.PostgresMsPerOp)
}

func cpuUse(before, after cpuTimes, ops int64) *CPUUse {
	u := &CPUUse{ProcessSeconds: (after.self - before.self).Seconds(), PostgresSeconds: (after.postgres - before.postgres).Seconds()}
	if ops > 0 {
		u.ProcessMsPerOp = u.ProcessSeconds * 1000 / float64(ops)
		u.PostgresMsPerOp = u.PostgresSeconds * 1000 / float64(ops)
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
