// Package wirecount counts what a client costs below its own code, for
// tests and benchmarks that judge by counts rather than time: the reads
// and writes (system calls) on its connections, and the goroutines the
// process started.
package wirecount

import (
	"net"
	"runtime/metrics"
	"sync/atomic"
)

// Conn counts the Read and Write calls on a connection into Reads and
// Writes.
type Conn struct {
	net.Conn
	Reads, Writes *atomic.Int64
}

func (c Conn) Read(b []byte) (int, error) {
	c.Reads.Add(1)
	return c.Conn.Read(b)
}

func (c Conn) Write(b []byte) (int, error) {
	c.Writes.Add(1)
	return c.Conn.Write(b)
}

// GoroutinesCreated is how many goroutines the process has started so far
// (0 where the runtime does not say).
func GoroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
