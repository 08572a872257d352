package devenv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// bcpd dev on its private PostgreSQL: the postmaster SIGKILLed (its
// backends left to notice) is started again on the same data directory
// and port, and the platform, which never stopped, serves a write through
// its pools again (issue 32: make run used to exit with the database).
func TestDevSurvivesItsPostgresDying(t *testing.T) {
	// PostgreSQL runs as an unprivileged user when the test is root: its
	// data directory's parents must let it through (t.TempDir's are 0700).
	dir, err := os.MkdirTemp("", "bcp-devpg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	var out bytes.Buffer
	e, err := Start(context.Background(), Options{DataDir: dir, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", Out: &out, NoDemoHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	op, err := os.ReadFile(filepath.Join(dir, "operator-token"))
	if err != nil {
		t.Fatal(err)
	}
	ops := e.Platform.ClientsWithToken(strings.TrimSpace(string(op)))
	write := func() error { // a write through the tenants service's pool
		_, err := ops.Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
			Tenant: DemoDomain, AgentProfileUrl: "https://agente.example/perfil.json", Label: "restart"}))
		return err
	}
	if err := write(); err != nil {
		t.Fatalf("before: %v", err)
	}

	first := e.Postgres()
	pidFile, err := os.ReadFile(filepath.Join(first.DataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(pidFile), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the postmaster did not exit")
	}
	// The process goes on; PostgreSQL comes back where it was, and so do
	// the platform's connections.
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for {
		if now := e.Postgres(); now != first && now.Port == first.Port && now.DataDir == first.DataDir {
			if last = write(); last == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write served 90 s after PostgreSQL died (restarted: %v; last error: %v)", e.Postgres() != first, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case err := <-e.Platform.Err():
		t.Fatalf("the platform failed: %v", err)
	default:
	}
}
