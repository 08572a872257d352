package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bcpdev/bcp/internal/pgserver"
)

// bcpd is one process of the platform under test (`bcpd all`, or one role
// of the HA run's topology) that the schedule SIGKILLs and starts again on
// the same addresses.
type bcpd struct {
	bin, role, logPath   string
	name                 string // the HA run's instance name (edge-1, …)
	env                  []string
	publicAddr, internal string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	killing  bool
	unexpect int       // exits we did not cause
	lastKill time.Time // when the last SIGKILL landed (orphaned running jobs date from before it)
	starts   int
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs bcpd and waits until its internal listener answers /healthz
// and its public one (if it has one) accepts connections. A process that exits before
// that (e.g. PostgreSQL is down) is an error.
func (b *bcpd) start(ctx context.Context) error {
	logf, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(b.bin, b.role)
	cmd.Env = b.env
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, and SIGKILL if we die: no orphan holds the ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.done, b.killing = cmd, done, false
	b.starts++
	b.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		b.mu.Lock()
		if !b.killing {
			b.unexpect++
		}
		b.mu.Unlock()
		close(done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-done:
			// The run's directory goes with it: say why here.
			tail, _ := os.ReadFile(b.logPath)
			if len(tail) > 2000 {
				tail = tail[len(tail)-2000:]
			}
			return errors.New("bcpd exited during start-up (" + b.logPath + "):\n" + string(tail))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := hc.Get("http://" + b.internal + "/healthz")
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		if b.publicAddr == "" {
			return nil
		}
		if c, err := net.DialTimeout("tcp", b.publicAddr, time.Second); err == nil {
			c.Close()
			return nil
		}
	}
	return errors.New("bcpd not ready after 60 s")
}

// startRetrying starts bcpd, retrying while it cannot (e.g. PostgreSQL is
// still coming back).
func (b *bcpd) startRetrying(ctx context.Context) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = b.start(ctx); err == nil || ctx.Err() != nil {
			return err
		}
		logf("bcpd start failed (%v); retrying", err)
		b.mu.Lock()
		b.unexpect-- // a failed start is not a crash of a running platform
		b.mu.Unlock()
		time.Sleep(500 * time.Millisecond)
	}
	return err
}

// kill SIGKILLs the process group and waits for the exit.
func (b *bcpd) kill() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.killing = true
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	b.mu.Lock()
	b.lastKill = time.Now()
	b.mu.Unlock()
}

// stop ends bcpd cleanly (SIGTERM), escalating to SIGKILL after 15 s.
func (b *bcpd) stop() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.killing = true
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// running reports whether the current process is alive.
func (b *bcpd) running() bool {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// postgres wraps the private cluster so the schedule can stop and start it
// on the same port.
type postgres struct {
	mu      sync.Mutex
	srv     *pgserver.Server
	dataDir string
	port    int
}

func (p *postgres) start(ctx context.Context) error {
	s, err := pgserver.Start(ctx, pgserver.Options{DataDir: p.dataDir, Port: p.port})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.srv, p.port = s, s.Port
	p.mu.Unlock()
	return nil
}

func (p *postgres) server() *pgserver.Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.srv
}

// stop shuts PostgreSQL down: a fast shutdown (SIGINT) or, immediate, a
// crash-like one (SIGQUIT: no checkpoint, WAL replay on the next start).
func (p *postgres) stop(immediate bool) error {
	s := p.server()
	if s == nil {
		return nil
	}
	if immediate {
		pid, err := postmasterPID(s.DataDir)
		if err != nil {
			return err
		}
		if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
			return err
		}
		select {
		case <-s.Done():
		case <-time.After(30 * time.Second):
			return errors.New("postgres did not exit after SIGQUIT")
		}
	}
	return s.Stop()
}

func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	return pid, nil
}
