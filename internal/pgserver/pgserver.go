// Package pgserver starts a private PostgreSQL cluster from the PostgreSQL
// server binaries installed on the machine (initdb, postgres). It is what
// `bcpd dev` and the test harness use: no Docker, no downloads, no shared
// system cluster. When the process runs as root, PostgreSQL (which refuses to
// run as root) is run as an unprivileged user.
package pgserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrBinariesMissing means no initdb/postgres could be found. The message
// tells the operator the one command that fixes it.
var ErrBinariesMissing = errors.New("PostgreSQL server binaries (initdb, postgres) not found; install them with: apt-get install -y postgresql")

// SuperUser is the bootstrap superuser of private clusters.
const SuperUser = "bcp_super"

// Options configure a private cluster.
type Options struct {
	// DataDir holds the cluster. It is created (initdb) when empty and
	// reused otherwise.
	DataDir string
	// Port to listen on (127.0.0.1 only). 0 picks a free port.
	Port int
	// Log receives PostgreSQL's server log. Nil discards it.
	Log io.Writer
	// Fsync off trades durability for speed; only tests and the load
	// generator should set it. Commits stay synchronous: with fsync off a
	// synchronous commit costs one write(), while an asynchronous one
	// wakes the WAL writer with a signal on nearly every commit, a cost
	// the durable configuration never pays (docs/performance.md, round 10).
	NoFsync bool
}

// Server is a running private cluster.
type Server struct {
	DataDir   string
	Port      int
	socketDir string // "" when the server has no Unix socket
	password  string
	cmd       *exec.Cmd
	done      chan struct{}
	waitErr   error
	stopOnce  sync.Once
}

// FindBinDir returns the directory holding initdb and postgres: PATH first,
// then the newest /usr/lib/postgresql/<major>/bin (Debian's layout, which
// does not put server binaries on PATH).
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return majorOf(matches[i]) > majorOf(matches[j]) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", ErrBinariesMissing
}

func majorOf(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// Start initialises (if needed) and starts the cluster, waiting until it
// accepts connections.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	cred, err := RunAs()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := checkTraversable(dataDir, cred); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	pwFile := dataDir + ".superuser-password"
	initialised := fileExists(filepath.Join(dataDir, "PG_VERSION"))
	if !initialised {
		if err := initCluster(ctx, bin, dataDir, pwFile, cred, opts.Log); err != nil {
			return nil, err
		}
	}
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		return nil, fmt.Errorf("read superuser password (%s): %w", pwFile, err)
	}
	port := opts.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	// Clients connect over a Unix socket in the data directory when its
	// path fits (sun_path holds 107 bytes): a round trip costs both sides
	// less CPU than over loopback TCP, which stays open too.
	socketDir := ""
	if len(dataDir)+len("/.s.PGSQL.")+len(strconv.Itoa(port)) <= 107 {
		socketDir = dataDir
	}
	args := []string{
		"-D", dataDir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + socketDir,
		"-c", "unix_socket_permissions=0700",
		"-c", "max_connections=200",
		"-c", "shared_buffers=128MB",
		"-c", "log_min_messages=warning",
	}
	if opts.NoFsync {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logOrDiscard(opts.Log), logOrDiscard(opts.Log)
	// Pdeathsig: if we die without stopping it (SIGKILL), the kernel sends
	// postgres SIGINT (fast shutdown) instead of leaving an orphan that holds
	// the data directory lock.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	if cred != nil {
		cmd.SysProcAttr.Credential = cred
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &Server{DataDir: dataDir, Port: port, socketDir: socketDir, password: strings.TrimSpace(string(pw)), cmd: cmd, done: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// URL is a connection URL for database db as the bootstrap superuser.
// It names the Unix socket when there is one, else loopback TCP.
func (s *Server) URL(db string) string {
	if s.socketDir != "" {
		return fmt.Sprintf("postgres://%s:%s@/%s?host=%s&port=%d&sslmode=disable", SuperUser, s.password, db, url.QueryEscape(s.socketDir), s.Port)
	}
	return s.tcpURL(db)
}

func (s *Server) tcpURL(db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", SuperUser, s.password, s.Port, db)
}

// Done is closed when the postgres process exits.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop shuts the cluster down with a fast shutdown (SIGINT), escalating to
// an immediate shutdown (SIGQUIT) if it does not finish in 30 s.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Signal(syscall.SIGQUIT)
			<-s.done
		}
	})
	var ee *exec.ExitError
	if s.waitErr != nil && !errors.As(s.waitErr, &ee) {
		return s.waitErr
	}
	return nil
}

func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited during start-up (%v); is another server using data dir %s?", s.waitErr, s.DataDir)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, s.URL("postgres"))
		cancel()
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("postgres not ready after %s: %w", limit, lastErr)
}

func initCluster(ctx context.Context, bin, dataDir, pwFile string, cred *syscall.Credential, log io.Writer) error {
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	if err := os.WriteFile(pwFile, []byte(hex.EncodeToString(pw)+"\n"), 0o600); err != nil {
		return fmt.Errorf("write password file: %w", err)
	}
	// initdb reads the password file as the unprivileged user, so hand it a
	// copy inside the data directory's parent that user can read, then
	// remove it.
	tmpPw := filepath.Join(dataDir, "..", "."+filepath.Base(dataDir)+".pw.tmp")
	if err := os.WriteFile(tmpPw, []byte(hex.EncodeToString(pw)+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(tmpPw)
	if cred != nil {
		for _, p := range []string{dataDir, tmpPw} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("chown %s: %w", p, err)
			}
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", dataDir, "-U", SuperUser, "--pwfile", tmpPw,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if cred != nil {
		cmd.SysProcAttr.Credential = cred
	}
	out, err := cmd.CombinedOutput()
	if log != nil {
		_, _ = log.Write(out)
	}
	if err != nil {
		// A half-initialised directory would be mistaken for a cluster next time.
		_ = os.RemoveAll(dataDir)
		return fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RunAs returns the credentials to run PostgreSQL with: nil when we are not
// root, otherwise the "postgres" user (created by the OS package) or nobody.
func RunAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")
}

// checkTraversable fails early with a clear message when the unprivileged
// user could not reach the data directory (e.g. a checkout under /root).
func checkTraversable(dataDir string, cred *syscall.Credential) error {
	for dir := filepath.Dir(dataDir); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err == nil {
			st := fi.Sys().(*syscall.Stat_t)
			ok := fi.Mode().Perm()&0o001 != 0 ||
				(st.Uid == cred.Uid && fi.Mode().Perm()&0o100 != 0) ||
				(st.Gid == cred.Gid && fi.Mode().Perm()&0o010 != 0)
			if !ok {
				return fmt.Errorf("PostgreSQL runs as uid %d and cannot enter %s; choose a data directory outside it (--data-dir or BCP_DATA_DIR)", cred.Uid, dir)
			}
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func logOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
