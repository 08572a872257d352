// Package procstat reads a process's CPU time and parent from Linux's
// /proc/<pid>/stat, for the benchmarks' CPU-per-operation figures (the
// private PostgreSQL's processes are not ours to getrusage).
package procstat

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// Stat is what the benchmarks use of /proc/<pid>/stat.
type Stat struct {
	PPID string
	// CPU is the process's own user + system time; Children that of the
	// children it has reaped (a postmaster's exited backends).
	CPU, Children time.Duration
}

// clockTick is USER_HZ, the unit of the times in /proc/<pid>/stat (100
// on every Linux platform Go supports).
const clockTick = time.Second / 100

// Read returns pid's figures; false when the process is gone or the file
// unreadable.
func Read(pid string) (Stat, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return Stat{}, false
	}
	// pid (comm) state ppid … utime(14) stime(15) cutime(16) cstime(17):
	// the command may hold spaces and parentheses, so split after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return Stat{}, false
	}
	n := func(k int) time.Duration {
		v, _ := strconv.ParseInt(f[k], 10, 64)
		return time.Duration(v) * clockTick
	}
	return Stat{PPID: f[1], CPU: n(11) + n(12), Children: n(13) + n(14)}, true
}
