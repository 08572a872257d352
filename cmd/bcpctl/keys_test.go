package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

func TestKeysAuthAndAgentCommands(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{5}, 32), Edge: edge.Config{PublicScheme: "http"},
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
	mustOK := func(args ...string) string {
		t.Helper()
		out, err := ctl(args...)
		if err != nil {
			t.Fatalf("bcpctl %v: %v\n%s", args, err, out)
		}
		return out
	}
	wantErr := func(code int, contains string, args ...string) {
		t.Helper()
		_, err := ctl(args...)
		if err == nil || exitCode(err) != code || !strings.Contains(errorMessage(err), contains) {
			t.Fatalf("bcpctl %v: %v (exit %d), want exit %d containing %q", args, err, exitCode(err), code, contains)
		}
	}
	mustOK("tenant", "create", "--name", "Loja Chaves", "--domain", "chaves.localhost")

	// Keys: one current key from onboarding; rotate, revoke.
	list := mustOK("keys", "list", "chaves.localhost")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "ES256") || !strings.Contains(lines[1], "current") {
		t.Fatalf("keys list:\n%s", list)
	}
	k1 := strings.Fields(lines[1])[0]
	out := mustOK("keys", "rotate", "chaves.localhost", "--delay", "0s")
	if !strings.HasPrefix(out, "new key ") || !strings.Contains(out, "key "+k1+" stays published until") {
		t.Fatalf("keys rotate:\n%s", out)
	}
	k2 := strings.Fields(out)[2]
	list = mustOK("keys", "list", "chaves.localhost")
	if !strings.Contains(lineOf(list, k2), "current") || !strings.Contains(lineOf(list, k1), "retiring") {
		t.Fatalf("after rotation:\n%s", list)
	}
	wantErr(2, "invalid_retention", "keys", "rotate", "chaves.localhost", "--retain", "24h")
	wantErr(2, "--delay", "keys", "rotate", "chaves.localhost", "--delay", "soon")
	mustOK("keys", "revoke", "chaves.localhost", k1)
	if !strings.Contains(lineOf(mustOK("keys", "list", "chaves.localhost"), k1), "revoked") {
		t.Fatal("revoked key not listed as revoked")
	}
	wantErr(2, "last_signing_key", "keys", "revoke", "chaves.localhost", k2)
	wantErr(2, "signing_key_not_found", "keys", "revoke", "chaves.localhost", "nope")
	mustOK("keys", "rotate", "chaves.localhost", "--delay", "0s")
	mustOK("keys", "revoke", "chaves.localhost", k2)

	// Policy.
	if out := mustOK("auth", "policy", "chaves.localhost"); !strings.Contains(out, "an API key or a signature") {
		t.Fatalf("auth policy:\n%s", out)
	}
	wantErr(2, "--policy must be", "auth", "policy", "chaves.localhost", "--policy", "password")
	out = mustOK("auth", "policy", "chaves.localhost", "--policy", "api_key", "--sign-all-responses", "true")
	if !strings.Contains(out, "with an API key;") || !strings.Contains(out, "every tool call") {
		t.Fatalf("auth policy set:\n%s", out)
	}
	// Replay-proof signatures: a nonce brings created along.
	if out := mustOK("auth", "policy", "chaves.localhost", "--require-nonce", "true"); !strings.HasSuffix(strings.TrimSpace(out), "every tool call; signatures must carry created and a nonce") {
		t.Fatalf("auth policy --require-nonce:\n%s", out)
	}
	if out := mustOK("auth", "policy", "chaves.localhost", "--require-created", "false"); strings.Contains(out, "must carry") {
		t.Fatalf("auth policy --require-created false:\n%s", out)
	}
	wantErr(2, "nonce_needs_created", "auth", "policy", "chaves.localhost", "--require-created", "false", "--require-nonce", "true")

	// An MCP endpoint behind the authenticator (the edge wires the same),
	// with /.well-known/bcp proxied to the platform.
	var (
		mu        sync.Mutex
		agentJWKs []json.RawMessage // the agent profile's signing_keys
	)
	keys := agentauth.KeySourceFunc(func(context.Context, string, bool, bool) ([]json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		return agentJWKs, nil
	})
	auth := agentauth.New(agentauth.Options{Operations: edge.AuthOperations(), Tenants: r.Clients.Tenants, Keys: keys})
	mcp := auth.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"id":"chk_1","status":"completed"}}}`))
	}))
	public, _ := url.Parse("http://" + r.PublicAddr)
	mux := http.NewServeMux()
	mux.Handle("/.well-known/bcp", httputil.NewSingleHostReverseProxy(public))
	mux.HandleFunc("/bcp/mcp", func(w http.ResponseWriter, req *http.Request) {
		host, _, _ := net.SplitHostPort(req.Host)
		res, err := r.Clients.Tenants.ResolveHost(req.Context(), connect.NewRequest(&tenantsv1.ResolveHostRequest{Host: host}))
		if err != nil {
			http.NotFound(w, req)
			return
		}
		ctx := tenancy.With(req.Context(), uuid.MustParse(res.Msg.GetTenant().GetId()))
		if p, ok := agentauth.PolicyFromTenant(res.Msg.GetTenant()); ok {
			ctx = agentauth.WithTenantPolicy(ctx, p)
		}
		mcp.ServeHTTP(w, req.WithContext(ctx))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	endpoint := srv.URL + "/bcp/mcp"
	hostArg := "chaves.localhost:" + port

	const profile = "https://agent.example/.well-known/bcp"
	out = mustOK("apikey", "create", "chaves.localhost", "--agent-profile", profile)
	secret := strings.TrimSpace(out[strings.Index(out, "bcp_sk_"):])

	agent := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"agent"}, args...), &out) // no operator token
		return out.String(), err
	}
	args := `{"id":"chk_1","checkout":{}}`
	out, err = agent("call", endpoint, "complete_checkout", "--args", args, "--profile", profile, "--api-key", secret,
		"--host", hostArg, "--idempotency-key", "auto", "--verify")
	if err != nil {
		t.Fatalf("agent call with API key: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"status":"completed"`) || !strings.Contains(out, "response signature verified: keyid ") {
		t.Fatalf("agent call output:\n%s", out)
	}
	out, err = agent("call", endpoint, "get_checkout", "--args", `{"id":"chk_1"}`, "--profile", "https://other.example/p.json",
		"--api-key", secret, "--host", hostArg)
	if err == nil || !strings.Contains(err.Error(), "profile_mismatch") || !strings.Contains(out, `"code":-32000`) {
		t.Fatalf("agent call with another profile: %v\n%s", err, out)
	}
	if _, err := agent("call", endpoint, "get_checkout", "--profile", profile); err == nil || exitCode(err) != 2 {
		t.Fatalf("agent call without credentials: %v", err)
	}

	// Signature: a key made by keygen, published in the agent profile.
	mustOK("auth", "policy", "chaves.localhost", "--policy", "signature")
	keyFile := filepath.Join(t.TempDir(), "agent.pem")
	out, err = agent("keygen", "--out", keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	var pub map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &pub); err != nil || pub["kty"] != "EC" || pub["d"] != nil || pub["kid"] == "" {
		t.Fatalf("keygen printed %s", out)
	}
	mu.Lock()
	agentJWKs = []json.RawMessage{json.RawMessage(strings.TrimSpace(out))}
	mu.Unlock()
	out, err = agent("call", endpoint, "get_checkout", "--args", `{"id":"chk_1"}`, "--profile", profile, "--api-key", secret, "--host", hostArg)
	if err == nil || !strings.Contains(err.Error(), "signature_missing") {
		t.Fatalf("API key under the signature policy: %v\n%s", err, out)
	}
	out, err = agent("call", endpoint, "get_checkout", "--args", `{"id":"chk_1"}`, "--profile", profile, "--key-file", keyFile, "--host", hostArg, "--verify")
	if err != nil || !strings.Contains(out, "response signature verified") {
		t.Fatalf("signed agent call: %v\n%s", err, out)
	}
}

func lineOf(text, kid string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, kid+" ") {
			return l
		}
	}
	return ""
}
