package pgstore_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/testdb"
)

// muteConn swallows what is written to it once muted, as a network that
// lost the server would: writes succeed, answers never come.
type muteConn struct {
	net.Conn
	muted *atomic.Bool
}

func (c *muteConn) Write(p []byte) (int, error) {
	if c.muted.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// A LISTEN session delivers notifications, survives quiet periods (its
// pings are answered), and ends with an error once its connection goes
// silent — where a plain WaitForNotification would wait for good, and the
// caches it drives would never hear of a change again.
func TestListenEndsWhenItsConnectionGoesSilent(t *testing.T) {
	defer pgstore.SetListenTimes(50*time.Millisecond, 300*time.Millisecond)()
	d := testdb.New(t)
	cfg, err := pgxpool.ParseConfig(d.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	var muted atomic.Bool
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &muteConn{Conn: c, muted: &muted}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan struct{})
	var mu sync.Mutex
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- pgstore.Listen(ctx, pool, "bcp_listen_test", func() { close(listening) }, func(p string) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		})
	}()
	<-listening
	notify := func(payload string) {
		t.Helper()
		if _, err := d.Pool.Exec(context.Background(), `SELECT pg_notify('bcp_listen_test', $1)`, payload); err != nil {
			t.Fatal(err)
		}
	}
	received := func(want ...string) bool {
		mu.Lock()
		defer mu.Unlock()
		if len(got) != len(want) {
			return false
		}
		for i := range want {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}
	notify("a")
	waitFor(t, "the first notification", func() bool { return received("a") })
	// Twenty quiet periods, each ended by an answered ping.
	time.Sleep(20 * 50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the session ended on a live connection: %v", err)
	default:
	}
	notify("b")
	waitFor(t, "a notification after the quiet periods", func() bool { return received("a", "b") })

	muted.Store(true)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a silent connection ended the session without an error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session still waits on a silent connection")
	}
	if !received("a", "b") {
		t.Fatalf("got %v", got)
	}

	// A session whose context ends returns nil.
	muted.Store(false)
	ctx2, cancel2 := context.WithCancel(context.Background())
	listening2 := make(chan struct{})
	go func() {
		done <- pgstore.Listen(ctx2, pool, "bcp_listen_test", func() { close(listening2) }, func(string) {})
	}()
	<-listening2
	cancel2()
	if err := <-done; err != nil {
		t.Fatalf("cancelled session: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
