package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// The refusals of replayed signatures, exactly as the agent reads them.
const (
	replayNonceReused     = "signature sig1: the nonce was already used (a replayed signature); sign every request anew, with a fresh nonce"
	replayStale           = "signature sig1: created is older than the 300 s window (30 s of clock skew allowed)"
	replayCreatedRequired = "signature sig1: the created parameter is required"
	replayNonceRequired   = "signature sig1: the nonce parameter is required"
)

// Signed requests cannot be replayed (issue 32): a captured signed
// create_checkout or update_checkout sent again, over REST or MCP, is
// refused before anything runs (its nonce was used; or, without a nonce,
// its created has left the 5-minute window), while freshly signed ones
// pass; a merchant requiring created (and a nonce) refuses signatures
// without them.
func TestSignedReplaysRefused(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	m := setupMerchant(t, r, "Loja Sem Replay", "sem-replay.localhost", 0)
	ctx := context.Background()
	ops := r.ClientsWithToken(operatorToken).Tenants
	if _, err := ops.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{
		Tenant: m.host, Policy: tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE,
	})); err != nil {
		t.Fatal(err)
	}
	key, err := agentclient.GenerateES256()
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := agentclient.PublicJWK(key, "")
	if err != nil {
		t.Fatal(err)
	}
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		doc := strings.TrimSpace(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment"))
		_, _ = w.Write([]byte(doc[:len(doc)-1] + `,"signing_keys":[` + string(jwk) + `]}`))
	}))
	t.Cleanup(profiles.Close)
	profile := profiles.URL + "/agent.json"
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	super, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	checkouts := func() int {
		t.Helper()
		var n int
		if err := super.QueryRow(ctx, `SELECT count(*) FROM checkout.sessions WHERE tenant_id = $1`, m.tenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The agent signs every request with created and a fresh nonce; an
	// eavesdropper keeps a copy of each, byte for byte.
	eve := &tap{}
	signer := &agentclient.Transport{ProfileURL: profile, Key: key, Host: m.host, Nonce: agentclient.NewNonce, Base: eve}
	agent := &http.Client{Transport: signer}
	base := "http://" + r.PublicAddr + "/bcp/rest"
	rest := func(method, path, op string, body any) outcome {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		return restSend(t, agent, v, op, req)
	}

	// REST create, no idempotency key: one checkout. Its copy, sent five
	// times, makes none.
	c := rest("POST", "/checkout-sessions", "create_checkout", map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
	}).checkout(t)
	create := eve.copy()
	for range 5 {
		eve.replay(t, create).want(t, "replayed REST create", http.StatusUnauthorized, 0, "signature_invalid", replayNonceReused)
	}
	if n := checkouts(); n != 1 {
		t.Fatalf("%d checkouts after a create and 5 replays, want 1", n)
	}

	// REST update to ana × 2, then bia × 3; the copy of the first, sent
	// again, does not put the checkout back.
	li := c.LineItems[0].ID
	update := func(email string, qty int) *bcp.Checkout {
		t.Helper()
		return rest("PUT", "/checkout-sessions/"+c.ID, "update_checkout", map[string]any{
			"line_items": []any{map[string]any{"id": li, "item": map[string]any{"id": "var_cam"}, "quantity": qty}},
			"buyer":      map[string]any{"email": email},
		}).checkout(t)
	}
	if got := update("ana@example.com", 2); got.Buyer.Email != "ana@example.com" || got.LineItems[0].Quantity != 2 {
		t.Fatalf("first update: %+v %+v", got.Buyer, got.LineItems)
	}
	first := eve.copy()
	if got := update("bia@example.com", 3); got.Buyer.Email != "bia@example.com" || got.LineItems[0].Quantity != 3 {
		t.Fatalf("second update: %+v %+v", got.Buyer, got.LineItems)
	}
	eve.replay(t, first).want(t, "replayed REST update", http.StatusUnauthorized, 0, "signature_invalid", replayNonceReused)
	if got := rest("GET", "/checkout-sessions/"+c.ID, "get_checkout", nil).checkout(t); got.Buyer.Email != "bia@example.com" || got.LineItems[0].Quantity != 3 {
		t.Fatalf("after the replayed update: %+v %+v, want bia × 3", got.Buyer, got.LineItems)
	}

	// A copy without a nonce, replayed once its created has left the
	// window (signed 30 days ago, or 6 minutes ago): refused, fresh nonce
	// or not.
	for _, age := range []time.Duration{30 * 24 * time.Hour, 6 * time.Minute} {
		for _, nonce := range []func() (string, error){nil, agentclient.NewNonce} {
			old := &http.Client{Transport: &agentclient.Transport{ProfileURL: profile, Key: key, Host: m.host, Nonce: nonce,
				Now: func() time.Time { return time.Now().Add(-age) }}}
			req, _ := http.NewRequest("POST", base+"/checkout-sessions", strings.NewReader(`{"line_items":[{"item":{"id":"var_cam"},"quantity":1}]}`))
			o := restSend(t, old, v, "create_checkout", req)
			if o.httpStatus != http.StatusUnauthorized || o.errCode != "signature_invalid" || !strings.Contains(string(o.raw), replayStale) {
				t.Fatalf("create signed %s ago: HTTP %d %s", age, o.httpStatus, o.raw)
			}
		}
	}
	if n := checkouts(); n != 1 {
		t.Fatalf("%d checkouts after stale signatures, want 1", n)
	}

	// MCP: the same for a tools/call create_checkout and update_checkout.
	mcp := &agentclient.Client{Endpoint: "http://" + r.PublicAddr + "/bcp/mcp", Transport: signer}
	call := func(tool string, args map[string]any) *bcp.Checkout {
		t.Helper()
		resp, err := mcp.CallTool(ctx, tool, args)
		if err != nil || resp.Status != http.StatusOK || resp.Error != nil {
			t.Fatalf("%s: %v HTTP %d %s", tool, err, resp.Status, resp.Body)
		}
		var res struct {
			StructuredContent bcp.Checkout `json:"structuredContent"`
		}
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			t.Fatal(err)
		}
		return &res.StructuredContent
	}
	mc := call("create_checkout", map[string]any{"checkout": map[string]any{"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 1}}}})
	if mc.Status != bcp.StatusIncomplete || totals(mc)["subtotal"] != 3990 {
		t.Fatalf("MCP create: %s %v", mc.Status, totals(mc))
	}
	mcreate := eve.copy()
	for range 5 {
		eve.replay(t, mcreate).want(t, "replayed MCP create", http.StatusUnauthorized, -32000, "signature_invalid", replayNonceReused)
	}
	if n := checkouts(); n != 2 {
		t.Fatalf("%d checkouts after an MCP create and 5 replays, want 2", n)
	}
	mupdate := func(email string, qty int) *bcp.Checkout {
		return call("update_checkout", map[string]any{"id": mc.ID, "checkout": map[string]any{
			"line_items": []any{map[string]any{"id": mc.LineItems[0].ID, "item": map[string]any{"id": "var_can"}, "quantity": qty}},
			"buyer":      map[string]any{"email": email},
		}})
	}
	mupdate("caio@example.com", 1)
	mfirst := eve.copy()
	if got := mupdate("duda@example.com", 2); got.Buyer.Email != "duda@example.com" || got.LineItems[0].Quantity != 2 {
		t.Fatalf("MCP second update: %+v %+v", got.Buyer, got.LineItems)
	}
	eve.replay(t, mfirst).want(t, "replayed MCP update", http.StatusUnauthorized, -32000, "signature_invalid", replayNonceReused)
	if got := call("get_checkout", map[string]any{"id": mc.ID}); got.Buyer.Email != "duda@example.com" || got.LineItems[0].Quantity != 2 {
		t.Fatalf("after the replayed MCP update: %+v %+v, want duda × 2", got.Buyer, got.LineItems)
	}

	// The merchant requires created: a signature without it is refused
	// (once the edges have the new policy), one with it passes.
	setReq := func(created, nonce bool) {
		t.Helper()
		if _, err := ops.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{
			Tenant: m.host, RequireSignatureCreated: &created, RequireSignatureNonce: &nonce,
		})); err != nil {
			t.Fatal(err)
		}
	}
	get := func(tr *agentclient.Transport) refusal {
		req, _ := http.NewRequest("GET", base+"/checkout-sessions/"+c.ID, nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return readRefusal(t, resp)
	}
	noCreated := &agentclient.Transport{ProfileURL: profile, Key: key, Host: m.host, Now: func() time.Time { return time.Time{} }}
	plain := &agentclient.Transport{ProfileURL: profile, Key: key, Host: m.host}
	if got := get(noCreated); got.status != http.StatusOK {
		t.Fatalf("no created, not required: %+v", got)
	}
	setReq(true, false)
	eventually(t, 10*time.Second, "the edge refuses signatures without created", func() bool { return get(noCreated).status == http.StatusUnauthorized })
	get(noCreated).want(t, "signature without created", http.StatusUnauthorized, 0, "signature_invalid", replayCreatedRequired)
	if got := get(plain); got.status != http.StatusOK {
		t.Fatalf("with created: %+v", got)
	}
	// ... and a nonce.
	setReq(true, true)
	eventually(t, 10*time.Second, "the edge refuses signatures without a nonce", func() bool { return get(plain).status == http.StatusUnauthorized })
	get(plain).want(t, "signature without a nonce", http.StatusUnauthorized, 0, "signature_invalid", replayNonceRequired)
	get(noCreated).want(t, "signature without created", http.StatusUnauthorized, 0, "signature_invalid", replayCreatedRequired)
	if got := get(signer); got.status != http.StatusOK {
		t.Fatalf("with created and a nonce: %+v", got)
	}
	eve.replay(t, eve.copy()).want(t, "replayed GET", http.StatusUnauthorized, 0, "signature_invalid", replayNonceReused)
}

// tap sends requests on and keeps a copy of the last one, as sent.
type tap struct {
	mu   sync.Mutex
	last *http.Request
	body []byte
}

func (tp *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	tp.mu.Lock()
	tp.last, tp.body = req.Clone(context.Background()), body
	tp.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	return http.DefaultTransport.RoundTrip(req)
}

type tapped struct {
	req  *http.Request
	body []byte
}

func (tp *tap) copy() tapped {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tapped{req: tp.last, body: tp.body}
}

// replay sends a copy again, unchanged.
func (tp *tap) replay(t *testing.T, c tapped) refusal {
	t.Helper()
	req := c.req.Clone(context.Background())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(c.body)), int64(len(c.body))
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return readRefusal(t, resp)
}

// refusal is a response read as an authentication failure: REST's flat
// body or MCP's JSON-RPC error (rpc is then its code).
type refusal struct {
	status        int
	rpc           int64
	code, content string
	raw           string
}

func readRefusal(t *testing.T, resp *http.Response) refusal {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b struct {
		Code    string `json:"code"`
		Content string `json:"content"`
		Error   *struct {
			Code int64 `json:"code"`
			Data struct {
				Code    string `json:"code"`
				Content string `json:"content"`
			} `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &b)
	out := refusal{status: resp.StatusCode, code: b.Code, content: b.Content, raw: string(raw)}
	if b.Error != nil {
		out.rpc, out.code, out.content = b.Error.Code, b.Error.Data.Code, b.Error.Data.Content
	}
	return out
}

func (r refusal) want(t *testing.T, what string, status int, rpc int64, code, content string) {
	t.Helper()
	if r.status != status || r.rpc != rpc || r.code != code || r.content != content {
		t.Fatalf("%s: HTTP %d %s, want HTTP %d rpc %d %s %q", what, r.status, r.raw, status, rpc, code, content)
	}
}
