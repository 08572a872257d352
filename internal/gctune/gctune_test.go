package gctune

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// Apply sets GOGC's default and, in a container with a memory limit, a
// soft limit of 80 % of it; what the environment set is left alone.
func TestApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	defer func(p string) { cgroupMemoryMax = p }(cgroupMemoryMax)
	cgroupMemoryMax = filepath.Join(t.TempDir(), "memory.max")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cgroupMemoryMax, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	write("536870912\n") // 512 MiB
	Apply()
	if got := debug.SetGCPercent(100); got != Percent {
		t.Errorf("GC percent %d, want %d", got, Percent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != 429496728 {
		t.Errorf("memory limit %d, want 429496728 (80 %% of 512 MiB)", got)
	}

	write("max\n") // no container limit: no soft limit
	Apply()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("without a container limit: %d, want none", got)
	}

	write("536870912\n")
	debug.SetGCPercent(150)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "off")
	Apply()
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("with GOGC set: GC percent %d, want 150 (left alone)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: limit %d, want none (left alone)", got)
	}
}
