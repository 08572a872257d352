// Package stripemock runs Stripe's official stripe-mock, the version pinned
// in tools/stripe-mock/go.mod, on loopback for tests (unit and end-to-end
// alike). stripe-mock validates every request against Stripe's OpenAPI
// description and answers fixtures: it checks that what we send is Stripe's
// wire format, and it keeps no state (it cannot decline, ask for 3-D Secure
// or remember an idempotency key).
package stripemock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKey is a secret key stripe-mock accepts (any sk_test_…/rk_test_…).
const TestKey = "sk_test_bcpStripeMock"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds stripe-mock once per test process. `go tool -n` builds the
// tool into Go's build cache (Go ≥ 1.25) and prints its path; the first
// build takes some 15 s, later ones hit the cache.
func binary() (string, error) {
	buildOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", "tool", "-n", "-modfile="+filepath.Join(root, "tools", "stripe-mock", "go.mod"), "stripe-mock")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			buildErr = fmt.Errorf("stripemock: go tool -n stripe-mock: %v: %s", err, strings.TrimSpace(stderr.String()))
			return
		}
		binPath = strings.TrimSpace(string(out))
		if fi, err := os.Stat(binPath); err != nil || fi.IsDir() {
			buildErr = fmt.Errorf("stripemock: go tool -n printed %q, which is not a program", binPath)
		}
	})
	return binPath, buildErr
}

// repoRoot walks up from the working directory (a test's package
// directory) to the module root that pins stripe-mock.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "stripe-mock", "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("stripemock: no go.mod with tools/stripe-mock/go.mod above the working directory")
		}
		dir = parent
	}
}

// Start runs a stripe-mock for the test on 127.0.0.1 (a port the system
// picks), waits until it answers and stops it when the test ends. It
// returns the base URL (http://127.0.0.1:port). stripe-mock's output is
// kept and logged only if the test fails.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	// HTTPS must be pinned to loopback too: with only -http-addr,
	// stripe-mock also listens for HTTPS on :12112 on every interface.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	out := &tailBuffer{max: 64 << 10}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("stripemock: start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		// Read everything, or stripe-mock blocks on a full pipe.
		const prefix = "Listening for HTTP at address: "
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(out, line)
			if a, ok := strings.CutPrefix(line, prefix); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
		_, _ = io.Copy(out, stdout)
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("stripe-mock output (tail):\n%s", out.String())
		}
	})
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-exited:
		t.Fatalf("stripemock: stripe-mock exited before listening:\n%s", out.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("stripemock: stripe-mock did not listen within 2 minutes:\n%s", out.String())
	}
	if err := waitReady(base, exited); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return base
}

// waitReady asks GET /v1/balance until stripe-mock answers 200.
func waitReady(base string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/balance", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+TestKey)
		res, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", res.StatusCode)
		}
		select {
		case <-exited:
			return errors.New("stripemock: stripe-mock exited")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stripemock: stripe-mock at %s did not answer GET /v1/balance: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
