package agentauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

const operatorToken = "agentauth-operator"

// startPlatform runs every service on a fresh database, on loopback
// listeners, as e2e/harness_test.go does.
func startPlatform(t *testing.T) (*platform.Running, tenantsv1connect.TenantServiceClient) {
	t.Helper()
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "agentauth-internal", OperatorToken: operatorToken, MasterKey: []byte("0123456789abcdef0123456789abcdef"),
		Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	op := tenantsv1connect.NewTenantServiceClient(http.DefaultClient, "http://"+r.InternalAddr,
		connect.WithInterceptors(svcauth.Client(operatorToken)))
	return r, op
}

func createTenant(t *testing.T, op tenantsv1connect.TenantServiceClient, name, domain string) *tenantsv1.Tenant {
	t.Helper()
	r, err := op.CreateTenant(context.Background(), connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: name, Domains: []string{domain}}))
	if err != nil {
		t.Fatal(err)
	}
	return r.Msg.GetTenant()
}

// mcpStub stands for the MCP handler: it records that it ran and answers a
// JSON-RPC result echoing the request id.
type mcpStub struct {
	mu    sync.Mutex
	calls int
	last  *agentauth.Principal
}

func (s *mcpStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(b, &req)
	p, _ := agentauth.PrincipalFrom(r.Context())
	s.mu.Lock()
	s.calls++
	s.last = p
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"structuredContent":{"id":"chk_1","status":"completed"},"content":[{"type":"text","text":"{}"}]}}`))
}

func (s *mcpStub) state() (int, *agentauth.Principal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.last
}

// edgeLike routes by Host through the registry and hands the middleware
// the tenant and (when withPolicy) its policy, as the edge does.
func edgeLike(t *testing.T, r *platform.Running, auth *agentauth.Authenticator, next http.Handler, withPolicy bool) *httptest.Server {
	t.Helper()
	h := auth.Handler(next)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		host, _, err := net.SplitHostPort(req.Host)
		if err != nil {
			host = req.Host
		}
		res, err := r.Clients.Tenants.ResolveHost(req.Context(), connect.NewRequest(&tenantsv1.ResolveHostRequest{Host: host}))
		if err != nil {
			http.Error(w, "unknown host", http.StatusNotFound)
			return
		}
		tn := res.Msg.GetTenant()
		ctx := tenancy.With(req.Context(), uuid.MustParse(tn.GetId()))
		if p, ok := agentauth.PolicyFromTenant(tn); ok && withPolicy {
			ctx = agentauth.WithTenantPolicy(ctx, p)
		}
		h.ServeHTTP(w, req.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func apiKey(t *testing.T, op tenantsv1connect.TenantServiceClient, tenant, profile string) (id, secret string) {
	t.Helper()
	r, err := op.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: tenant, AgentProfileUrl: profile}))
	if err != nil {
		t.Fatal(err)
	}
	return r.Msg.GetApiKey().GetId(), r.Msg.GetSecret()
}

func wantRPCError(t *testing.T, resp *agentclient.Response, status, code int, dataCode string) {
	t.Helper()
	if resp.Status != status || resp.Error == nil || resp.Error.Code != code || resp.Error.DataCode() != dataCode {
		t.Fatalf("want HTTP %d %d %s, got HTTP %d %s", status, code, dataCode, resp.Status, resp.Body)
	}
}

func TestAPIKeyOfTenantARefusedAtTenantB(t *testing.T) {
	r, op := startPlatform(t)
	a := createTenant(t, op, "Loja A", "a.localhost")
	createTenant(t, op, "Loja B", "b.localhost")
	keyID, secret := apiKey(t, op, "a.localhost", profileA)
	stub := &mcpStub{}
	auth := agentauth.New(agentauth.Options{Operations: edge.AuthOperations(), Tenants: r.Clients.Tenants, Keys: newFakeKeys()})
	srv := edgeLike(t, r, auth, stub, true)
	ctx := context.Background()
	client := func(host, profile, key string) *agentclient.Client {
		return &agentclient.Client{Endpoint: srv.URL + "/bcp/mcp", Transport: &agentclient.Transport{Host: host, ProfileURL: profile, APIKey: key}}
	}

	resp, err := client("a.localhost", profileA, secret).CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
	if err != nil || resp.Status != 200 || resp.Error != nil {
		t.Fatalf("tenant A with its key: %v %s", err, resp.Body)
	}
	if n, p := stub.state(); n != 1 || p.Method != agentauth.MethodAPIKey || p.KeyID != keyID || p.AgentProfileURL != profileA {
		t.Fatalf("calls %d principal %+v", n, p)
	}

	resp, err = client("b.localhost", profileA, secret).CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, resp, 401, -32000, "invalid_api_key")
	if resp.Header.Get("WWW-Authenticate") == "" || strings.Contains(string(resp.Body), secret) {
		t.Fatalf("401 without challenge or echoing the key: %v %s", resp.Header, resp.Body)
	}
	if n, _ := stub.state(); n != 1 {
		t.Fatal("the MCP handler ran for tenant A's key at tenant B")
	}

	// The key is bound to profileA: naming another profile anywhere is 403.
	resp, _ = client("a.localhost", profileB, secret).CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
	wantRPCError(t, resp, 403, -32000, "profile_mismatch")
	resp, _ = client("a.localhost", profileA, secret).CallTool(ctx, "get_checkout", map[string]any{
		"id": "chk_1", "meta": map[string]any{"ucp-agent": map[string]any{"profile": profileB}}})
	wantRPCError(t, resp, 403, -32000, "profile_mismatch")
	// Bearer works like X-API-Key; a request naming no profile acts for
	// the key's.
	c := client("a.localhost", "", "")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/bcp/mcp", strings.NewReader(noMetaBody))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	hresp, err := c.Transport.RoundTrip(req)
	if err != nil || hresp.StatusCode != 200 {
		t.Fatalf("Bearer: %v %v", err, hresp)
	}
	hresp.Body.Close()
	if n, p := stub.state(); n != 2 || p.AgentProfileURL != profileA {
		t.Fatalf("calls %d principal %+v", n, p)
	}

	// Revoked: refused once the change reaches the authenticator.
	if _, err := op.RevokeAPIKey(ctx, connect.NewRequest(&tenantsv1.RevokeAPIKeyRequest{Tenant: a.GetId(), ApiKeyId: keyID})); err != nil {
		t.Fatal(err)
	}
	auth.Invalidate(a.GetId()) // what the edge's change feed does
	resp, _ = client("a.localhost", profileA, secret).CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
	wantRPCError(t, resp, 401, -32000, "invalid_api_key")
	if n, _ := stub.state(); n != 2 {
		t.Fatal("the MCP handler ran for a refused request")
	}
}

// The tenant's policy comes from the registry: from the Tenant the edge
// resolved, or looked up when the edge passes none.
func TestSignaturePolicyFromRegistry(t *testing.T) {
	r, op := startPlatform(t)
	a := createTenant(t, op, "Loja Assinada", "assinada.localhost")
	_, secret := apiKey(t, op, a.GetId(), profileA)
	ctx := context.Background()
	if _, err := op.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{
		Tenant: a.GetId(), Policy: tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE})); err != nil {
		t.Fatal(err)
	}
	keys := newFakeKeys()
	agentKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys.publish(profileA, jwk(t, agentKey, "agent-a-1"))
	for _, withPolicy := range []bool{true, false} {
		stub := &mcpStub{}
		srv := edgeLike(t, r, agentauth.New(agentauth.Options{Operations: edge.AuthOperations(), Tenants: r.Clients.Tenants, Keys: keys}), stub, withPolicy)
		keyed := &agentclient.Client{Endpoint: srv.URL + "/bcp/mcp", Transport: &agentclient.Transport{Host: "assinada.localhost", ProfileURL: profileA, APIKey: secret}}
		resp, err := keyed.CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
		if err != nil {
			t.Fatal(err)
		}
		wantRPCError(t, resp, 401, -32000, "signature_missing")
		signed := &agentclient.Client{Endpoint: srv.URL + "/bcp/mcp", Transport: &agentclient.Transport{Host: "assinada.localhost", ProfileURL: profileA, Key: agentKey, KeyID: "agent-a-1"}}
		resp, err = signed.CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
		if err != nil || resp.Status != 200 {
			t.Fatalf("signed request (policy in ctx: %v): %v %s", withPolicy, err, resp.Body)
		}
		if n, p := stub.state(); n != 1 || p.Method != agentauth.MethodSignature {
			t.Fatalf("calls %d principal %+v", n, p)
		}
	}
}

// A response signed by the platform verifies with nothing but the public
// JWKs the merchant's /.well-known/bcp publishes.
func TestResponseSignatureVerifiesWithWellKnown(t *testing.T) {
	r, op := startPlatform(t)
	a := createTenant(t, op, "Loja Resposta", "resposta.localhost")
	_, secret := apiKey(t, op, a.GetId(), profileA)
	srv := edgeLike(t, r, agentauth.New(agentauth.Options{Operations: edge.AuthOperations(), Tenants: r.Clients.Tenants}), &mcpStub{}, true)
	ctx := context.Background()
	agent := &agentclient.Client{Endpoint: srv.URL + "/bcp/mcp", Transport: &agentclient.Transport{Host: "resposta.localhost", ProfileURL: profileA, APIKey: secret}}
	// The merchant's profile, fetched from the platform's public listener.
	merchant := &agentclient.Client{Endpoint: "http://" + r.PublicAddr + "/bcp/mcp", Transport: &agentclient.Transport{Host: "resposta.localhost"}}
	published, err := merchant.BusinessSigningKeys(ctx)
	if err != nil || len(published) != 1 {
		t.Fatalf("signing_keys: %v %d", err, len(published))
	}

	resp, err := agent.CallTool(ctx, "complete_checkout", map[string]any{
		"id": "chk_1", "checkout": map[string]any{}, "meta": map[string]any{"idempotency-key": agentclient.NewIdempotencyKey()}})
	if err != nil || resp.Status != 200 {
		t.Fatalf("complete_checkout: %v %s", err, resp.Body)
	}
	res, err := agentclient.VerifyResponse(ctx, resp, published)
	if err != nil {
		t.Fatalf("response signature does not verify with /.well-known/bcp: %v\n%v", err, resp.Header)
	}
	var j httpsig.JWK
	_ = json.Unmarshal(published[0], &j)
	if res.KeyID != j.Kid || res.Created.IsZero() || strings.Join(res.Components, " ") != `"@status" "content-digest" "content-type"` {
		t.Fatalf("signature = %+v, want keyid %s with created over @status content-digest content-type", res, j.Kid)
	}
	if resp.Header.Get("Content-Digest") != httpsig.ContentDigest(resp.Body) {
		t.Fatal("Content-Digest is not the digest of the body")
	}
	tampered := *resp
	tampered.Body = []byte(strings.Replace(string(resp.Body), "completed", "canceled", 1))
	if _, err := agentclient.VerifyResponse(ctx, &tampered, published); err == nil {
		t.Fatal("a tampered response verified")
	}

	// Other tools are signed only when the tenant signs everything.
	resp, _ = agent.CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
	if _, err := agentclient.VerifyResponse(ctx, resp, published); err != agentclient.ErrUnsigned {
		t.Fatalf("get_checkout response: %v, want unsigned", err)
	}
	if _, err := op.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{Tenant: a.GetId(), SignAllResponses: proto.Bool(true)})); err != nil {
		t.Fatal(err)
	}
	resp, _ = agent.CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
	if _, err := agentclient.VerifyResponse(ctx, resp, published); err != nil {
		t.Fatalf("get_checkout with sign-all: %v", err)
	}
	// Public methods are not signed (no tools/call).
	resp, _ = agent.Call(ctx, "tools/list", map[string]any{})
	if resp.Header.Get("Signature") != "" {
		t.Fatal("tools/list response signed")
	}
}

// wellKnownKeys is a KeySource that reads signing_keys from the
// platform's public listener, caching until dropped (a TTL expiring).
type wellKnownKeys struct {
	publicAddr string
	mu         sync.Mutex
	cache      map[string][]json.RawMessage
}

func (k *wellKnownKeys) SigningKeys(ctx context.Context, profileURL string, _ bool, force bool) ([]json.RawMessage, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.cache[profileURL]; ok && !force {
		return c, nil
	}
	keys, err := fetchWellKnown(ctx, k.publicAddr, profileURL)
	if err != nil {
		return nil, &agentauth.ProfileError{Code: "profile_unreachable", Message: err.Error()}
	}
	k.cache[profileURL] = keys
	return keys, nil
}

func (k *wellKnownKeys) drop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.cache)
}

// fetchWellKnown GETs profileURL's path from the platform with its Host.
func fetchWellKnown(ctx context.Context, publicAddr, profileURL string) ([]json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, profileURL, nil)
	if err != nil {
		return nil, err
	}
	c := &agentclient.Client{Endpoint: "http://" + publicAddr + req.URL.Path, Transport: &agentclient.Transport{Host: req.URL.Host}}
	return c.BusinessSigningKeys(ctx)
}

func kidsOf(t *testing.T, keys []json.RawMessage) []string {
	var out []string
	for _, raw := range keys {
		j, err := httpsig.ParseJWK(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j.Kid)
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after 10s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Merchant key rotation seen by a verifier that knows only the merchant's
// /.well-known/bcp: order webhooks signed through SignWithCurrentKey
// verify; after a rotation old signatures still verify; after a revocation
// the key leaves the profile and, once the verifier's cache refreshes,
// its signatures are key_not_found.
func TestMerchantKeyRotationSeenByVerifier(t *testing.T) {
	r, op := startPlatform(t)
	a := createTenant(t, op, "Loja Rotação", "rotacao.localhost")
	ctx := context.Background()
	tid := uuid.MustParse(a.GetId())
	_, port, _ := net.SplitHostPort(r.PublicAddr)
	merchantProfile := "http://rotacao.localhost:" + port + "/.well-known/bcp"
	published := func() []string {
		keys, err := fetchWellKnown(ctx, r.PublicAddr, merchantProfile)
		if err != nil {
			t.Fatal(err)
		}
		return kidsOf(t, keys)
	}
	k1 := published()[0]

	// The agent's webhook receiver verifies with the merchant's profile.
	wk := &wellKnownKeys{publicAddr: r.PublicAddr, cache: map[string][]json.RawMessage{}}
	stub := &mcpStub{}
	recv := agentauth.New(agentauth.Options{Keys: wk, ForceRefreshInterval: -1})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := agentauth.WithTenantPolicy(tenancy.With(req.Context(), uuid.New()), agentauth.TenantPolicy{Auth: agentauth.PolicySignature})
		recv.Middleware(stub).ServeHTTP(w, req.WithContext(ctx))
	}))
	t.Cleanup(receiver.Close)

	signer := &agentauth.RemoteSigner{Tenants: r.Clients.Tenants}
	type webhook struct {
		header http.Header
		body   string
	}
	newWebhook := func(orderID string) (webhook, string) {
		body := `{"id":"` + orderID + `","checkout_id":"chk_1","status":"confirmed"}`
		req, _ := http.NewRequest(http.MethodPost, receiver.URL+"/webhooks/orders", strings.NewReader(body))
		req.Header.Set("Webhook-Id", "evt_"+orderID)
		req.Header.Set("Webhook-Timestamp", "1767225600")
		kid, err := signer.SignWebhook(ctx, tid, req, []byte(body), merchantProfile)
		if err != nil {
			t.Fatal(err)
		}
		return webhook{header: req.Header, body: body}, kid
	}
	deliver := func(w webhook) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, receiver.URL+"/webhooks/orders", strings.NewReader(w.body))
		req.Header = w.header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m struct {
			Error *struct {
				Data struct{ Code string } `json:"data"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &m)
		if m.Error != nil {
			return resp.StatusCode, m.Error.Data.Code
		}
		return resp.StatusCode, ""
	}

	w1, kid := newWebhook("ord_1")
	if kid != k1 {
		t.Fatalf("signed with %s, want the onboarding key %s", kid, k1)
	}
	if si := w1.header.Get("Signature-Input"); !strings.Contains(si, `"webhook-id"`) || !strings.Contains(si, `"bcp-agent"`) || !strings.Contains(si, `"content-digest"`) {
		t.Fatalf("webhook signature covers %s", si)
	}
	if st, code := deliver(w1); st != 200 {
		t.Fatalf("webhook signed by the current key: HTTP %d %s", st, code)
	}
	if _, p := stub.state(); p.KeyID != k1 || p.AgentProfileURL != merchantProfile {
		t.Fatalf("principal %+v", p)
	}

	// Rotate (default delay): the new key is published at once.
	rot, err := op.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: a.GetId()}))
	if err != nil {
		t.Fatal(err)
	}
	k2 := rot.Msg.GetKey().GetKid()
	eventually(t, "new key published", func() bool { return len(published()) == 2 })
	wk.drop()
	if st, code := deliver(w1); st != 200 {
		t.Fatalf("old signature after rotation: HTTP %d %s", st, code)
	}
	w2, kid := newWebhook("ord_2")
	if kid != k1 {
		t.Fatalf("signed with %s during the rotation delay, want %s", kid, k1)
	}
	if st, _ := deliver(w2); st != 200 {
		t.Fatal("webhook during the delay refused")
	}

	// Revoke the old key: it leaves /.well-known/bcp at once.
	if _, err := op.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: a.GetId(), Kid: k1})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "revoked key unpublished", func() bool { ks := published(); return len(ks) == 1 && ks[0] == k2 })
	// A verifier still holding the old profile still accepts it (a listed
	// key verifies) ...
	if st, _ := deliver(w1); st != 200 {
		t.Fatal("cached profile: the old key should still verify until the cache refreshes")
	}
	// ... and refuses it once its cache refreshes.
	wk.drop()
	if st, code := deliver(w1); st != 401 || code != "key_not_found" {
		t.Fatalf("revoked key after refresh: HTTP %d %s, want 401 key_not_found", st, code)
	}
	if n, _ := stub.state(); n != 4 {
		t.Fatalf("receiver handler ran %d times, want 4 (never for refused deliveries)", n)
	}
	// The merchant now signs with the new key.
	w3, kid := newWebhook("ord_3")
	if kid != k2 {
		t.Fatalf("after revocation signed with %s, want %s", kid, k2)
	}
	if st, code := deliver(w3); st != 200 {
		t.Fatalf("webhook signed by the new key: HTTP %d %s", st, code)
	}
}

// Under the default policy (either) every credential sent must verify.
func TestEitherPolicyChecksEveryCredential(t *testing.T) {
	r, op := startPlatform(t)
	a := createTenant(t, op, "Loja Ambas", "ambas.localhost")
	keyID, secret := apiKey(t, op, a.GetId(), profileA)
	keys := newFakeKeys()
	agentKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys.publish(profileA, jwk(t, agentKey, "agent-a-1"))
	stub := &mcpStub{}
	srv := edgeLike(t, r, agentauth.New(agentauth.Options{Operations: edge.AuthOperations(), Tenants: r.Clients.Tenants, Keys: keys}), stub, true)
	ctx := context.Background()
	call := func(tr *agentclient.Transport) *agentclient.Response {
		t.Helper()
		tr.Host, tr.ProfileURL = "ambas.localhost", profileA
		resp, err := (&agentclient.Client{Endpoint: srv.URL + "/bcp/mcp", Transport: tr}).CallTool(ctx, "get_checkout", map[string]any{"id": "chk_1"})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := call(&agentclient.Transport{APIKey: secret, Key: agentKey, KeyID: "agent-a-1"}); resp.Status != 200 {
		t.Fatalf("both valid: %s", resp.Body)
	}
	if _, p := stub.state(); p.Method != agentauth.MethodSignature || p.SignatureKeyID != "agent-a-1" || p.APIKeyID != keyID {
		t.Fatalf("principal %+v", p)
	}
	stranger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	wantRPCError(t, call(&agentclient.Transport{APIKey: secret, Key: stranger, KeyID: "agent-a-1"}), 401, -32000, "signature_invalid")
	wantRPCError(t, call(&agentclient.Transport{APIKey: "bcp_sk_forged", Key: agentKey, KeyID: "agent-a-1"}), 401, -32000, "invalid_api_key")
	if resp := call(&agentclient.Transport{Key: agentKey, KeyID: "agent-a-1"}); resp.Status != 200 {
		t.Fatalf("signature alone: %s", resp.Body)
	}
	if resp := call(&agentclient.Transport{APIKey: secret}); resp.Status != 200 {
		t.Fatalf("API key alone: %s", resp.Body)
	}
	if n, _ := stub.state(); n != 3 {
		t.Fatalf("MCP handler ran %d times, want 3", n)
	}
}
