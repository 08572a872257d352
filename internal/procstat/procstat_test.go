package procstat

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Our own entry: the parent is os.Getppid, and the CPU time grows with
// work done (in ticks of 10 ms, so burn well over one).
func TestReadSelf(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	before, ok := Read(self)
	if !ok || before.PPID != strconv.Itoa(os.Getppid()) {
		t.Fatalf("read self: %+v %v", before, ok)
	}
	x := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		x++
	}
	after, ok := Read(self)
	if !ok || after.CPU <= before.CPU || x == 0 {
		t.Fatalf("CPU %v → %v after 200 ms of work", before.CPU, after.CPU)
	}
	if _, ok := Read("0"); ok {
		t.Fatal("pid 0 read")
	}
}
