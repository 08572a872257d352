package pgserver

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/procstat"
)

// tempDir is a directory PostgreSQL's user can enter when we are root
// (t.TempDir's parent is private).
func tempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgserver-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// start runs a throwaway cluster in dir/name.
func start(t testing.TB, dir, name string) *Server {
	t.Helper()
	s, err := Start(context.Background(), Options{DataDir: filepath.Join(dir, name), NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func clientIsLocal(t testing.TB, url string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var local bool
	if err := conn.QueryRow(ctx, `SELECT inet_client_addr() IS NULL`).Scan(&local); err != nil {
		t.Fatal(err)
	}
	return local
}

// Clients reach the cluster over a Unix socket in its data directory; a
// directory whose socket path would not fit falls back to loopback TCP.
func TestURLUsesTheUnixSocket(t *testing.T) {
	dir := tempDir(t)
	s := start(t, dir, "pg")
	if u := s.URL("postgres"); !strings.Contains(u, "host="+url.QueryEscape(s.DataDir)+"&") || !clientIsLocal(t, u) {
		t.Fatalf("URL %s does not reach the server over its Unix socket", u)
	}
	// TCP stays open.
	if clientIsLocal(t, s.tcpURL("postgres")) {
		t.Fatal("loopback TCP connection reported as a Unix socket")
	}

	l := start(t, dir, strings.Repeat("d", 100))
	if u := l.URL("postgres"); !strings.Contains(u, "@127.0.0.1:") || clientIsLocal(t, u) {
		t.Fatalf("data dir of %d bytes: URL %s, want loopback TCP", len(l.DataDir), u)
	}
}

// BenchmarkRoundTrip compares one statement's round trip over loopback
// TCP and over the Unix socket (go test ./internal/pgserver -bench .).
func BenchmarkRoundTrip(b *testing.B) {
	s := start(b, tempDir(b), "pg")
	for _, c := range []struct{ name, url string }{{"tcp", s.tcpURL("postgres")}, {"unix", s.URL("postgres")}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, c.url)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			var pid int
			if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				b.Fatal(err)
			}
			ours, theirs := cpuSelf(), cpuOf(pid)
			var x int
			for b.Loop() {
				if err := conn.QueryRow(ctx, `SELECT $1::int`, 1).Scan(&x); err != nil {
					b.Fatal(err)
				}
			}
			if x != 1 {
				b.Fatal(fmt.Sprint("got ", x))
			}
			// CPU per round trip on each side: latency on a shared VM says
			// more about the scheduler than about the transport.
			b.ReportMetric(float64((cpuSelf()-ours).Microseconds())/float64(b.N), "client-cpu-µs/op")
			b.ReportMetric(float64((cpuOf(pid)-theirs).Microseconds())/float64(b.N), "server-cpu-µs/op")
		})
	}
}

// cpuSelf is this process's CPU time so far.
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuOf is process pid's CPU time so far, 0 if unreadable.
func cpuOf(pid int) time.Duration {
	st, _ := procstat.Read(strconv.Itoa(pid))
	return st.CPU
}
