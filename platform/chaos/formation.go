package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgserver"
)

// ErrNoPgAutoctl: the HA run needs pg_auto_failover (Debian's
// postgresql-15-auto-failover and pg-auto-failover-cli).
var ErrNoPgAutoctl = errors.New("pg_autoctl not found (apt-get install postgresql-15-auto-failover pg-auto-failover-cli)")

// formation is a pg_auto_failover formation on loopback, as make ha runs
// it: a monitor and two data nodes, a primary and a synchronous standby.
// Each node's `pg_autoctl create … --run` is our child (its keeper), run
// as an unprivileged user when we are root (pg_autoctl refuses root).
type formation struct {
	dir     string
	bin     string // PostgreSQL's bin directory
	autoctl string
	cred    *syscall.Credential
	super   string // the nodes' superuser: the OS user that ran initdb
	port    [3]int // monitor, node1, node2

	mu      sync.Mutex
	keepers []*exec.Cmd
}

// nodeState is one data node as the monitor sees it.
type nodeState struct {
	name, reported, goal string
	port                 int
}

func newFormation(dir string) (*formation, error) {
	autoctl, err := exec.LookPath("pg_autoctl")
	if err != nil {
		return nil, ErrNoPgAutoctl
	}
	bin, err := pgserver.FindBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := pgserver.RunAs()
	if err != nil {
		return nil, err
	}
	f := &formation{dir: dir, bin: bin, autoctl: autoctl, cred: cred}
	u, err := user.Current()
	if cred != nil {
		u, err = user.LookupId(strconv.Itoa(int(cred.Uid)))
	}
	if err != nil {
		return nil, err
	}
	f.super = u.Username
	for i := range f.port {
		if f.port[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *formation) cmd(args ...string) *exec.Cmd {
	c := exec.Command(f.autoctl, args...)
	// Its state files (XDG_*, keyed by data directory) stay in the run
	// directory, as in make ha.
	c.Env = append(os.Environ(), "PATH="+f.bin+":"+os.Getenv("PATH"), "HOME="+f.dir,
		"XDG_CONFIG_HOME="+filepath.Join(f.dir, "xdg", "config"), "XDG_DATA_HOME="+filepath.Join(f.dir, "xdg", "data"))
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: f.cred, Pdeathsig: syscall.SIGTERM}
	return c
}

// keep starts a keeper (`pg_autoctl create … --run`) logging to name.log.
func (f *formation) keep(name string, args ...string) error {
	c, err := f.supervise(name, append(args, "--pgdata", filepath.Join(f.dir, name), "--pgctl", filepath.Join(f.bin, "pg_ctl"),
		"--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl", "--run")...)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.keepers = append(f.keepers, c)
	f.mu.Unlock()
	return nil
}

// supervise starts a pg_autoctl command that keeps running (a keeper) in
// a process group of its own (with the PostgreSQL it starts), logging to
// name.log.
func (f *formation) supervise(name string, args ...string) (*exec.Cmd, error) {
	log, err := os.OpenFile(filepath.Join(f.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c := f.cmd(args...)
	c.Stdout, c.Stderr = log, log
	if err := c.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() { _ = c.Wait(); log.Close() }()
	return c, nil
}

// start creates and runs the monitor and both nodes, and waits for a
// primary and a synchronous standby.
func (f *formation) start(ctx context.Context) error {
	if err := f.keep("monitor", "create", "monitor", "--pgport", strconv.Itoa(f.port[0])); err != nil {
		return err
	}
	if err := f.waitMonitor(ctx, 60*time.Second); err != nil {
		return err
	}
	if err := f.tuneMonitor(ctx); err != nil {
		return err
	}
	monitor := fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", f.port[0])
	node := func(i int) error {
		name := "node" + strconv.Itoa(i)
		return f.keep(name, "create", "postgres", "--pgport", strconv.Itoa(f.port[i]), "--name", name, "--monitor", monitor)
	}
	if err := node(1); err != nil {
		return err
	}
	// The second node is a base backup of the first: it must be up.
	if err := f.waitFor(ctx, 90*time.Second, "node1 alone", func(ns []nodeState) bool {
		return len(ns) == 1 && ns[0].reported == "single" && ns[0].goal == "single"
	}); err != nil {
		return err
	}
	if err := f.tuneKeeper(1); err != nil {
		return err
	}
	if err := node(2); err != nil {
		return err
	}
	if err := f.waitHealthy(ctx, 120*time.Second); err != nil {
		return err
	}
	return f.tuneKeeper(2)
}

// MonitorSettings are the pg_auto_failover monitor settings of the local
// formations (this one and make ha's; deploy/README.md, "What makes the
// monitor fail over"), where the defaults are 5 s, 5 s, 2 s, 2, 20 s and
// 30 s:
//
//   - health checks every 2 s with a 2-s timeout, retried twice 1 s
//     apart: a node whose PostgreSQL is gone is marked unhealthy ≈ 4 s
//     after it went;
//   - node_considered_unhealthy_timeout 5 s: a primary is failed over from
//     once its health checks fail and its keeper has not reported for
//     5 s. With the keeper alive it reports PostgreSQL down itself; with
//     the whole host gone only this clock runs (≈ 20 s by default);
//   - primary_demote_timeout 5 s: the promoted standby takes writes once
//     the old primary's keeper confirms the demotion or, when it cannot
//     (its host is gone), after this long (30 s by default).
//
// A lost host is failed over from in ≈ 11 s (≈ 50 s with the defaults), a
// PostgreSQL that stays down under a live keeper in ≈ 6 s. Shorter
// timeouts fail over sooner, and on a false alarm too; KeeperSettings
// stop a primary cut off from the monitor and its standby before the
// standby may take writes.
var MonitorSettings = map[string]string{
	"pgautofailover.health_check_period":               "2000",
	"pgautofailover.health_check_timeout":              "2000",
	"pgautofailover.health_check_retry_delay":          "1000",
	"pgautofailover.health_check_max_retries":          "2",
	"pgautofailover.node_considered_unhealthy_timeout": "5000",
	"pgautofailover.primary_demote_timeout":            "5000",
}

// KeeperSettings are each data node's keeper settings (`pg_autoctl config
// set`), paired with MonitorSettings: a primary whose keeper reaches
// neither the monitor nor its standby for 3 s (20 s by default) stops its
// PostgreSQL, which with a keeper loop of up to ≈ 3 s and the shutdown
// is done before the other side's node_considered_unhealthy_timeout +
// primary_demote_timeout (10 s) let the standby take writes. (It could
// not commit meanwhile anyway: its synchronous standby is gone.)
var KeeperSettings = map[string]string{
	"timeout.network_partition_timeout": "3",
}

func (f *formation) tuneMonitor(ctx context.Context) error {
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@127.0.0.1:%d/pg_auto_failover?sslmode=disable", f.super, f.port[0]))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	for k, v := range MonitorSettings {
		if _, err := c.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", k, v)); err != nil {
			return fmt.Errorf("monitor setting %s: %w", k, err)
		}
	}
	_, err = c.Exec(ctx, "SELECT pg_reload_conf()")
	return err
}

// tuneKeeper applies KeeperSettings to node i's keeper, which reloads
// its configuration.
func (f *formation) tuneKeeper(i int) error {
	for k, v := range KeeperSettings {
		c := f.cmd("config", "set", "--pgdata", filepath.Join(f.dir, "node"+strconv.Itoa(i)), k, v)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("node%d: pg_autoctl config set %s: %w: %s", i, k, err, out)
		}
	}
	return nil
}

// waitMonitor waits until the monitor answers.
func (f *formation) waitMonitor(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if _, err := f.nodes(ctx); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("pg_auto_failover monitor not up after %s: %w (see %s)", within, err, filepath.Join(f.dir, "monitor.log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// nodes is the monitor's view of the data nodes.
func (f *formation) nodes(ctx context.Context) ([]nodeState, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, fmt.Sprintf("postgres://%s@127.0.0.1:%d/pg_auto_failover?sslmode=disable", f.super, f.port[0]))
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	rows, err := c.Query(cctx, `SELECT nodename, nodeport, reportedstate::text, goalstate::text FROM pgautofailover.node ORDER BY nodeid`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (nodeState, error) {
		var n nodeState
		err := r.Scan(&n.name, &n.port, &n.reported, &n.goal)
		return n, err
	})
}

func (f *formation) waitFor(ctx context.Context, within time.Duration, what string, ok func([]nodeState) bool) error {
	deadline := time.Now().Add(within)
	var last []nodeState
	for {
		ns, err := f.nodes(ctx)
		if err == nil {
			if ok(ns) {
				return nil
			}
			last = ns
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("formation: no %s after %s (monitor says %v; logs in %s)", what, within, last, f.dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitHealthy waits for a primary and a secondary that both reached the
// state the monitor assigned: synchronous replication is on again and a
// failover is possible.
func (f *formation) waitHealthy(ctx context.Context, within time.Duration) error {
	return f.waitFor(ctx, within, "primary with a synchronous standby", func(ns []nodeState) bool {
		var p, s int
		for _, n := range ns {
			switch {
			case n.reported == "primary" && n.goal == "primary":
				p++
			case n.reported == "secondary" && n.goal == "secondary":
				s++
			}
		}
		return p == 1 && s == 1
	})
}

// url is the multi-host URL of database db that bcpd uses, with
// deploy/README.md's connect timeout (2 s for each host).
func (f *formation) url(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write&connect_timeout=2&sslmode=disable", f.super, f.port[1], f.port[2], db)
}

// nodeURL is data node i's (1 or 2) own URL.
func (f *formation) nodeURL(i int, db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=3", f.super, f.port[i], db)
}

// writable reports whether node i accepts writes now, as pgx's
// target_session_attrs=read-write asks it: a promoted standby stays
// read-only (default_transaction_read_only) until the monitor knows the
// old primary is demoted.
func (f *formation) writable(ctx context.Context, i int) bool {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, f.nodeURL(i, "postgres"))
	if err != nil {
		return false
	}
	defer c.Close(context.Background())
	var ro string
	return c.QueryRow(cctx, `SHOW transaction_read_only`).Scan(&ro) == nil && ro == "off"
}

// primary is the node (1 or 2) that accepts writes, 0 if none does.
func (f *formation) primary(ctx context.Context) int {
	for i := 1; i <= 2; i++ {
		if f.writable(ctx, i) {
			return i
		}
	}
	return 0
}

// killPostgres SIGKILLs node i's postmaster, leaving its keeper running
// (as on a host whose PostgreSQL crashed), and returns the pid killed.
func (f *formation) killPostgres(i int) (int, error) {
	pid, err := postmasterPID(filepath.Join(f.dir, "node"+strconv.Itoa(i)))
	if err != nil {
		return 0, err
	}
	return pid, syscall.Kill(pid, syscall.SIGKILL)
}

// crash SIGKILLs node i's PostgreSQL and keeps it from coming back until
// released is closed (or within passes): it holds the node's port, so the
// keeper's restarts fail ("could not bind"). A lone SIGKILL is often no
// failover: the keeper restarts PostgreSQL in place within a second or
// two, before the monitor acts, and the primary stays (two failovers in
// three of the first --ha runs); killing each restart again confused the
// keeper's demotion and cost the monitor's 30-s demote timeout. A
// PostgreSQL that cannot start while its keeper reports so, as on a host
// whose disk went away, is what the monitor fails over from at once.
// It returns how many times it killed the postmaster.
func (f *formation) crash(ctx context.Context, i int, released <-chan struct{}, within time.Duration) (int, error) {
	addr := "127.0.0.1:" + strconv.Itoa(f.port[i])
	pid, err := f.killPostgres(i)
	if err != nil {
		return 0, err
	}
	kills := 1
	var ln net.Listener
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		// Still bound: the dying postmaster, or the keeper's restart won
		// the race (then it dies too).
		if p, perr := postmasterPID(filepath.Join(f.dir, "node"+strconv.Itoa(i))); perr == nil && p != pid && syscall.Kill(p, syscall.SIGKILL) == nil {
			pid = p
			kills++
		}
		if time.Now().After(deadline) {
			return kills, fmt.Errorf("node%d: could not take its port after the kill: %w", i, err)
		}
	}
	defer ln.Close()
	// Connections are reset at once, as by a port nothing listens on (a
	// listener that let them wait would look like a hung host, and each
	// client would wait out its connect timeout before the next host).
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			c.Close()
		}
	}()
	select {
	case <-released:
	case <-ctx.Done():
	case <-time.After(within):
	}
	return kills, nil
}

// loseHost SIGKILLs node i's postmaster and its keeper together (the
// pg_autoctl supervisor and its services, one process group with the
// postmaster), as when the host went away: nothing restarts PostgreSQL
// and nothing reports to the monitor, whose health checks alone notice
// (MonitorSettings). Its port is left closed (connections refused, as by
// a host that rebooted; a host that is gone lets connections time out,
// which bcpd's connect timeout bounds). rejoin starts the keeper again.
func (f *formation) loseHost(i int) error {
	f.mu.Lock()
	keeper := f.keepers[i]
	f.mu.Unlock()
	pid, err := postmasterPID(filepath.Join(f.dir, "node"+strconv.Itoa(i)))
	if err != nil {
		return err
	}
	if err := syscall.Kill(-keeper.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("node%d: kill its keeper: %w", i, err)
	}
	// The postmaster is in its keeper's process group; in case a
	// version starts it elsewhere, it is killed by its pid too.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("node%d: kill its postmaster: %w", i, err)
	}
	return nil
}

// rejoin starts node i's keeper again after loseHost (`pg_autoctl run`):
// it asks the monitor before it starts PostgreSQL, finds itself demoted,
// rewinds and follows the new primary.
func (f *formation) rejoin(i int) error {
	name := "node" + strconv.Itoa(i)
	c, err := f.supervise(name, "run", "--pgdata", filepath.Join(f.dir, name))
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.keepers[i] = c
	f.mu.Unlock()
	return nil
}

// timeline is node i's current timeline (one more per promotion).
func (f *formation) timeline(ctx context.Context, i int) int {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, f.nodeURL(i, "postgres"))
	if err != nil {
		return 0
	}
	defer c.Close(context.Background())
	var tli int
	_ = c.QueryRow(cctx, `SELECT timeline_id FROM pg_control_checkpoint()`).Scan(&tli)
	return tli
}

// stop stops the keepers (each stops its PostgreSQL), the standby first:
// stopping the primary first could set off a failover.
func (f *formation) stop(ctx context.Context) {
	f.mu.Lock()
	keepers := f.keepers
	f.keepers = nil
	f.mu.Unlock()
	if len(keepers) == 0 {
		return
	}
	order := []int{2, 1, 0} // node2, node1, monitor (keepers[0])
	if f.primary(ctx) == 2 {
		order = []int{1, 2, 0}
	}
	for _, i := range order {
		if i >= len(keepers) {
			continue
		}
		c := keepers[i]
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		deadline := time.Now().Add(30 * time.Second)
		for syscall.Kill(c.Process.Pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}
