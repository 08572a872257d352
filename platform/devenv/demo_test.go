package devenv

import (
	"fmt"

	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/agentclient"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/services/edge"
)

// bcpd demo (make ha) seeds the demo merchant of a platform it does not
// host, over the services' connect APIs, buys its history through the
// edge's public port, and serves the agent profile its API key is bound
// to; a second start finds the merchant and buys nothing.
func TestDemoRoleSeedsRemotePlatform(t *testing.T) {
	d := testdb.New(t)
	const opToken, intToken = "demo-test-operator", "demo-test-internal"
	// The platform make ha runs: every service, and the PSP simulator the
	// demo's sandbox handlers pay through, with the edge's webhook
	// listener for its Pix notifications.
	services, err := platform.Start(context.Background(), platform.Config{
		Services: platform.DevServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: intToken, OperatorToken: opToken, MasterKey: bytes.Repeat([]byte{3}, 32),
		Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer services.Stop()
	_, port, _ := net.SplitHostPort(services.PublicAddr)
	urls := map[string]string{}
	for _, s := range platform.AllServices {
		urls[s] = "http://" + services.InternalAddr
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "operator-token"), []byte(opToken+"\n"), 0o600); err != nil { // for stats
		t.Fatal(err)
	}
	start := func() (*platform.Running, string) {
		var out bytes.Buffer
		r, err := StartDemo(context.Background(), DemoOptions{DataDir: dir, InternalAddr: "127.0.0.1:0", ServiceURLs: urls,
			InternalToken: intToken, OperatorToken: opToken, PublicScheme: "http", PublicPort: port, Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		return r, out.String()
	}
	demo, banner := start()
	const line = "\n  demo history: 6 orders (R$ 799,94), 9 checkouts (1 Pix pending, 1 canceled, 1 incomplete), 1 shipped, R$ 39,90 refunded\n"
	if !strings.Contains(banner, line) {
		demo.Stop()
		t.Fatalf("banner lacks %q:\n%s", line, banner)
	}
	key := mustRead(t, &Env{dataDir: dir}, "demo-api-key")
	for _, secret := range []string{key, mustRead(t, &Env{dataDir: dir}, "demo-admin-password")} {
		if secret == "" || strings.Contains(banner, secret) {
			t.Fatalf("the banner (a log) holds a secret, or the file is empty:\n%s", banner)
		}
	}
	resp, err := http.Get(DemoAgentProfileURL(demo.InternalAddr))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The profile as bcpd dev serves it: with the demo wallet's public key
	// (AP2 mandates) as its signing key.
	wallet, err := demoWallet(dir)
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := agentclient.PublicJWK(wallet, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || string(body) != fmt.Sprintf(demoAgentProfile, jwk) {
		t.Fatalf("agent profile: %d %s", resp.StatusCode, body)
	}
	tenantID := tenantOf(t, banner)
	f := stats(t, &Env{Platform: services, dataDir: dir}, tenantID)
	if f.orders != 6 || f.gmv != 79994 || f.checkouts != 9 || f.agentOrders != 6 || f.agent != DemoAgentProfileURL(demo.InternalAddr) {
		t.Fatalf("orders %d, GMV %d, checkouts %d, by agent %q %d; want 6, 79994, 9, the demo agent's 6", f.orders, f.gmv, f.checkouts, f.agent, f.agentOrders)
	}
	demo.Stop()

	demo, banner = start()
	defer demo.Stop()
	if strings.Contains(banner, "demo history") || tenantOf(t, banner) != tenantID {
		t.Fatalf("second start:\n%s", banner)
	}
	if g := stats(t, &Env{Platform: services, dataDir: dir}, tenantID); g.orders != 6 || g.checkouts != 9 {
		t.Fatalf("second start changed the figures: %d orders, %d checkouts", g.orders, g.checkouts)
	}
}
