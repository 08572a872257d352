// Package gctune sets the garbage collector of a process that runs the
// platform (bcpd, and bcpbench, which runs it in process to measure it as
// bcpd runs it).
//
// A purchase allocates a few hundred kilobytes of short-lived JSON,
// protobuf and pgx buffers, and the live heap is small (tens of MB, ≈ 65
// MB more at 10 000 merchants: docs/performance.md), so with Go's default
// (GOGC=100: collect whenever the heap doubles) the collector runs often
// and costs CPU on every request. Collecting at five times the live heap
// instead cut the process's CPU per purchase by 8–14 % in a same-run A/B
// (issue 23). In a container with a memory limit (cgroup v2, as
// Kubernetes sets it), a soft limit of 80 % of it makes the collector work
// harder before the process could be killed for its memory.
package gctune

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is GOGC's default here; an operator's GOGC or GOMEMLIMIT
// (deploy/README.md) always wins.
const Percent = 400

// cgroupMemoryMax is where cgroup v2 shows the container's memory limit.
var cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// Apply sets the defaults the environment does not override.
func Apply() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit := containerLimit(); limit > 0 {
			debug.SetMemoryLimit(limit / 10 * 8)
		}
	}
}

// containerLimit is the cgroup's memory limit in bytes (0: none, or not
// readable).
func containerLimit() int64 {
	b, err := os.ReadFile(cgroupMemoryMax)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max" fails: no limit
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
