package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/services/edge"
)

// bcpctl ap2 on|off|status switches the merchant's AP2 mandates and its
// profile follows; bcpctl agent mandate is a wallet whose mandates verify.
func TestAP2Commands(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{3}, 32), Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"--server", "http://" + r.InternalAddr, "--token", "op"}, args...), &out)
		return out.String(), err
	}
	advertised := func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.PublicAddr+"/.well-known/bcp", nil)
		req.Host = "ap2.localhost"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return bytes.Contains(b, []byte(`"br.dev.bcp.shopping.ap2_mandate":[{"version":"2026-07-28"`)) && bytes.Contains(b, []byte(`"vp_formats_supported":{"dc+sd-jwt":{}}`))
	}
	if _, err := ctl("tenant", "create", "--name", "Loja AP2", "--domain", "ap2.localhost"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		verb, want string
		on         bool
	}{{"status", "AP2 mandates off", false}, {"on", "AP2 mandates on", true}, {"status", "AP2 mandates on", true}, {"off", "AP2 mandates off", false}} {
		out, err := ctl("ap2", step.verb, "ap2.localhost")
		if err != nil || !strings.Contains(out, step.want) {
			t.Fatalf("ap2 %s: %q %v", step.verb, out, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for advertised() != step.on {
			if time.Now().After(deadline) {
				t.Fatalf("after ap2 %s the profile advertises AP2: %v", step.verb, !step.on)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := ctl("ap2", "on", "nope.localhost"); exitCode(err) != 2 || !strings.Contains(errorMessage(err), "tenant_not_found") {
		t.Fatalf("unknown tenant: %v", err)
	}

	// The wallet: a JSON-RPC answer in, a mandate out that verifies with
	// the key's JWK (kid: its thumbprint) for the audience and checkout.
	dir := t.TempDir()
	key, _ := agentclient.GenerateES256()
	pemBytes, _ := agentclient.MarshalPrivateKeyPEM(key)
	keyFile := filepath.Join(dir, "wallet.pem")
	_ = os.WriteFile(keyFile, pemBytes, 0o600)
	answer := filepath.Join(dir, "answer.json")
	_ = os.WriteFile(answer, []byte(`{"jsonrpc":"2.0","id":4,"result":{"content":[],"structuredContent":{"id":"chk_w","currency":"BRL","ap2":{"merchant_authorization":"aGVhZGVy..c2ln"}}}}`), 0o600)
	out, err := ctl("agent", "mandate", "--key-file", keyFile, "--audience", "http://ap2.localhost:8080", "--checkout", answer)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := agentclient.PublicJWK(key, "")
	m, err := ap2.Parse(strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Verify(ap2.VerifyOptions{IssuerKeys: []json.RawMessage{pub}, Audience: "http://ap2.localhost:8080", Nonce: "chk_w", Now: time.Now()})
	if err != nil {
		t.Fatalf("the wallet's mandate: %v", err)
	}
	if !strings.Contains(string(v.Checkout), `"merchant_authorization":"aGVhZGVy..c2ln"`) {
		t.Fatalf("embedded checkout %s", v.Checkout)
	}
	_ = os.WriteFile(answer, []byte(`{"id":"chk_w"}`), 0o600)
	if _, err := ctl("agent", "mandate", "--key-file", keyFile, "--audience", "http://x", "--checkout", answer); exitCode(err) != 2 || !strings.Contains(errorMessage(err), "merchant_authorization") {
		t.Fatalf("a checkout without authorization: %v", err)
	}
	if _, err := ctl("agent", "mandate", "--checkout", answer); exitCode(err) != 2 {
		t.Fatalf("no key: %v", err)
	}
}
