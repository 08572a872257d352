package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/services/edge"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain()) // a bcpd process of a test (recovery_test.go)
	}
	os.Exit(testdb.Main(m))
}

const (
	operatorToken = "test-operator-token"
	internalToken = "test-internal-token"
)

var masterKey = []byte("0123456789abcdef0123456789abcdef")

// startPlatform runs a bcpd process in-process on real loopback listeners.
func startPlatform(t testing.TB, services []string, dbURL string, urls map[string]string) *platform.Running {
	t.Helper()
	return startPlatformWith(t, services, dbURL, urls, nil)
}

// startPlatformWith is startPlatform with the configuration adjusted by
// adjust (nil: as is) before the start.
func startPlatformWith(t testing.TB, services []string, dbURL string, urls map[string]string, adjust func(*platform.Config)) *platform.Running {
	t.Helper()
	cfg := platform.Config{
		Services: services, DatabaseURL: dbURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		ServiceURLs: urls, InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: masterKey,
		Edge: edge.Config{PublicScheme: "http"},
		// Webhook retries a second apart keep retry tests short.
		WebhookBackoff: func(int) time.Duration { return time.Second },
		// A sweep a second keeps the sweep tests short.
		SweepEvery: time.Second,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	r, err := platform.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start platform %v: %v", services, err)
	}
	t.Cleanup(r.Stop)
	return r
}

// startPSPSim runs a process hosting only the PSP simulator, as `bcpd
// pspsim` does, for tests whose payments process is another one: give that
// process ServiceURLs[platform.PSPSim] = the returned process's
// PSPSim.ControlURL() (every platform of the test binary shares the
// in-memory dev PKI, so they trust each other).
func startPSPSim(t *testing.T, dbURL string) *platform.Running {
	t.Helper()
	return startPlatform(t, []string{platform.PSPSim}, dbURL, nil)
}

func operatorClient(r *platform.Running) tenantsv1connect.TenantServiceClient {
	return tenantsv1connect.NewTenantServiceClient(http.DefaultClient, "http://"+r.InternalAddr,
		connect.WithInterceptors(svcauth.Client(operatorToken)))
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// get sends method to path on the public listener with the given Host.
func get(t *testing.T, r *platform.Running, method, host, path string, header http.Header) response {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+r.PublicAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// eventually polls cond until it holds or the deadline passes. Used only
// to wait for asynchronous propagation, never to assert speed.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s", what, within)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
