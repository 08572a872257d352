package agentauth_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

const (
	profileA = "https://agent-a.example/.well-known/bcp"
	profileB = "https://agent-b.example/profile.json"
	host     = "loja.example"
)

// fakeKeys is a KeySource over in-memory profiles, with a cache that only a
// forced refresh (or drop) updates, like the real fetcher.
type fakeKeys struct {
	mu       sync.Mutex
	origin   map[string][]json.RawMessage // what the profile hosts publish now
	cache    map[string][]json.RawMessage // what the KeySource serves
	forced   int
	requests int
}

func newFakeKeys() *fakeKeys {
	return &fakeKeys{origin: map[string][]json.RawMessage{}, cache: map[string][]json.RawMessage{}}
}

func (f *fakeKeys) publish(url string, keys ...json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.origin[url] = keys
}

func (f *fakeKeys) SigningKeys(_ context.Context, url string, _ bool, force bool) ([]json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if force {
		f.forced++
	} else if c, ok := f.cache[url]; ok {
		return c, nil
	}
	keys, ok := f.origin[url]
	if !ok {
		return nil, &agentauth.ProfileError{Code: "profile_unreachable", Message: "the agent profile could not be fetched", Status: http.StatusFailedDependency}
	}
	f.cache[url] = keys
	return keys, nil
}

func (f *fakeKeys) forcedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forced
}

// recorder is the protected handler: it must never run for a request that
// fails authentication.
type recorder struct {
	mu        sync.Mutex
	calls     int
	principal *agentauth.Principal
	body      []byte
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p, _ := agentauth.PrincipalFrom(r.Context())
	rec.mu.Lock()
	rec.calls++
	rec.principal, rec.body = p, b
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`))
}

func (rec *recorder) last() (*agentauth.Principal, []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.principal, rec.body
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.calls
}

type env struct {
	srv  *httptest.Server
	rec  *recorder
	keys *fakeKeys
	kA   *ecdsa.PrivateKey // published by profileA (kid "agent-a-1")
	kB   *ecdsa.PrivateKey // published by profileA too (kid "agent-a-2")
	ed   ed25519.PrivateKey
}

// newEnv serves the middleware for one tenant whose policy the "edge"
// (this wrapper) puts in the context, as Host routing does.
func newEnv(t *testing.T, pol agentauth.Policy, opts agentauth.Options) *env {
	t.Helper()
	return newEnvPolicy(t, agentauth.TenantPolicy{Auth: pol}, opts)
}

// newEnvPolicy is newEnv with the tenant's whole policy.
func newEnvPolicy(t *testing.T, pol agentauth.TenantPolicy, opts agentauth.Options) *env {
	t.Helper()
	e := &env{rec: &recorder{}, keys: newFakeKeys()}
	e.kA, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	e.kB, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, e.ed, _ = ed25519.GenerateKey(rand.Reader)
	e.keys.publish(profileA, jwk(t, e.kA, "agent-a-1"), jwk(t, e.kB, "agent-a-2"), jwk(t, e.ed, "agent-a-ed"))
	e.keys.publish(profileB, jwk(t, e.kA, "agent-a-1")) // same key, other profile
	opts.Keys = e.keys
	auth := agentauth.New(opts)
	tid := uuid.New()
	mw := auth.Middleware(e.rec)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := agentauth.WithTenantPolicy(tenancy.With(r.Context(), tid), pol)
		mw.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func jwk(t *testing.T, key crypto.Signer, kid string) json.RawMessage {
	t.Helper()
	j, err := agentclient.PublicJWK(key, kid)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

const callBody = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"complete_checkout","arguments":{"meta":{"ucp-agent":{"profile":"` +
	profileA + `"},"idempotency-key":"550e8400-e29b-41d4-a716-446655440000"},"id":"chk_1","checkout":{}}}}`

// request builds the agent's POST with BCP-Agent and Idempotency-Key.
func (e *env) request(t *testing.T, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/bcp/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("BCP-Agent", `profile="`+profileA+`"`)
	if k := agentclient.IdempotencyKeyOf([]byte(body)); k != "" {
		req.Header.Set("Idempotency-Key", k)
	}
	return req
}

func sign(t *testing.T, req *http.Request, body string, key crypto.Signer, kid string) {
	t.Helper()
	s := &httpsig.Signer{Key: key, KeyID: kid, CoverIfPresent: []string{"bcp-agent", "ucp-agent", "idempotency-key"}}
	if err := s.SignRequest(req, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// send posts req with body (which may differ from what was signed).
func send(t *testing.T, req *http.Request, body string) (int, http.Header, rpcErr) {
	t.Helper()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code    string `json:"code"`
				Content string `json:"content"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatalf("response is not JSON-RPC: %s", b)
	}
	out := rpcErr{id: string(msg.ID), raw: string(b)}
	if msg.Error != nil {
		out.code, out.dataCode, out.content = msg.Error.Code, msg.Error.Data.Code, msg.Error.Data.Content
	}
	return resp.StatusCode, resp.Header, out
}

type rpcErr struct {
	code     int
	dataCode string
	content  string
	id       string
	raw      string
}

func (e *env) wantAccepted(t *testing.T, req *http.Request, body string) *agentauth.Principal {
	t.Helper()
	before := e.rec.count()
	status, _, r := send(t, req, body)
	if status != http.StatusOK || r.code != 0 || e.rec.count() != before+1 {
		t.Fatalf("want accepted, got HTTP %d %s", status, r.raw)
	}
	p, got := e.rec.last()
	if string(got) != body {
		t.Fatalf("next saw body %q, want the original bytes", got)
	}
	return p
}

func (e *env) wantRejected(t *testing.T, req *http.Request, body string, status, code int, dataCode string) {
	t.Helper()
	before := e.rec.count()
	gotStatus, _, r := send(t, req, body)
	if gotStatus != status || r.code != code || r.dataCode != dataCode {
		t.Fatalf("want HTTP %d %d %s, got HTTP %d %s", status, code, dataCode, gotStatus, r.raw)
	}
	if e.rec.count() != before {
		t.Fatal("the protected handler ran for a rejected request")
	}
}

func TestSignedRequestAccepted(t *testing.T) {
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{})
	req := e.request(t, callBody)
	sign(t, req, callBody, e.kA, "agent-a-1")
	p := e.wantAccepted(t, req, callBody)
	if p == nil || p.Method != agentauth.MethodSignature || p.KeyID != "agent-a-1" || p.AgentProfileURL != profileA {
		t.Fatalf("principal = %+v", p)
	}
	if got := req.Header.Get("Signature-Input"); !strings.Contains(got, `"bcp-agent"`) || !strings.Contains(got, `"idempotency-key"`) || !strings.Contains(got, `"content-digest"`) {
		t.Fatalf("the signature does not cover the BCP set: %s", got)
	}

	// Ed25519 is optional in UCP and supported here.
	req = e.request(t, callBody)
	sign(t, req, callBody, e.ed, "agent-a-ed")
	if p := e.wantAccepted(t, req, callBody); p.KeyID != "agent-a-ed" {
		t.Fatalf("principal = %+v", p)
	}

	// UCP-Agent is accepted as an alias of BCP-Agent (and must be signed).
	req = e.request(t, callBody)
	req.Header.Del("BCP-Agent")
	req.Header.Set("UCP-Agent", `profile="`+profileA+`"`)
	sign(t, req, callBody, e.kA, "agent-a-1")
	e.wantAccepted(t, req, callBody)
}

// Every single tampering after signing is rejected with its protocol code,
// before the protected handler runs.
func TestTamperingRejected(t *testing.T) {
	const (
		unauthorized = http.StatusUnauthorized
		badRequest   = http.StatusBadRequest
	)
	otherBody := strings.Replace(callBody, `"chk_1"`, `"chk_2"`, 1)
	cases := []struct {
		name     string
		body     string                                        // signed body (default callBody)
		prepare  func(t *testing.T, e *env, req *http.Request) // before signing
		tamper   func(t *testing.T, e *env, req *http.Request) string
		status   int
		rpcCode  int
		dataCode string
	}{
		{name: "method", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string { r.Method = http.MethodPut; return callBody }},
		{name: "authority", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string { r.Host = "outra-loja.example"; return callBody }},
		{name: "authority port", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string { r.Host = host + ":8443"; return callBody }},
		{name: "path", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string { r.URL.Path = "/bcp/rest"; return callBody }},
		{name: "query added", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string { r.URL.RawQuery = "x=1"; return callBody }},
		{name: "body, digest kept", status: badRequest, rpcCode: -32600, dataCode: "digest_mismatch",
			tamper: func(_ *testing.T, _ *env, _ *http.Request) string { return otherBody }},
		{name: "body and digest", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Content-Digest", httpsig.ContentDigest([]byte(otherBody)))
				return otherBody
			}},
		{name: "content-type", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Content-Type", "application/json; charset=utf-8")
				return callBody
			}},
		{name: "bcp-agent re-serialised", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("BCP-Agent", `profile="`+profileA+`";v=1`)
				return callBody
			}},
		{name: "bcp-agent other profile with the same key", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			body: noMetaBody, // no meta profile to disagree with the header
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("BCP-Agent", `profile="`+profileB+`"`)
				return noMetaBody
			}},
		{name: "bcp-agent disagrees with meta", status: http.StatusForbidden, rpcCode: -32000, dataCode: "profile_mismatch",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("BCP-Agent", `profile="`+profileB+`"`)
				return callBody
			}},
		{name: "bcp-agent removed", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Del("BCP-Agent")
				return callBody // the profile still comes from meta; the signature covered the header
			}},
		{name: "idempotency-key changed", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Idempotency-Key", "6ba7b810-9dad-11d1-80b4-00c04fd430c8")
				return callBody
			}},
		{name: "idempotency-key removed", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string { r.Header.Del("Idempotency-Key"); return callBody }},
		{name: "idempotency-key added unsigned", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			prepare: func(_ *testing.T, _ *env, r *http.Request) { r.Header.Del("Idempotency-Key") },
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Idempotency-Key", "550e8400-e29b-41d4-a716-446655440000")
				return callBody
			}},
		{name: "signature bytes", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(t *testing.T, _ *env, r *http.Request) string {
				sigs, err := httpsig.ParseSignature(r.Header.Values("Signature"))
				if err != nil {
					t.Fatal(err)
				}
				s := sigs["sig1"]
				s[len(s)-1] ^= 1
				v, _ := httpsig.FormatSignature("sig1", s)
				r.Header.Set("Signature", v)
				return callBody
			}},
		{name: "signature DER-length", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Signature", "sig1=:"+base64.StdEncoding.EncodeToString(make([]byte, 70))+":")
				return callBody
			}},
		{name: "signature-input params", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `"@path" `, "", 1))
				return callBody
			}},
		{name: "kid unknown", status: unauthorized, rpcCode: -32000, dataCode: "key_not_found",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `keyid="agent-a-1"`, `keyid="agent-a-9"`, 1))
				return callBody
			}},
		{name: "kid of another key", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `keyid="agent-a-1"`, `keyid="agent-a-2"`, 1))
				return callBody
			}},
		{name: "kid missing", status: unauthorized, rpcCode: -32000, dataCode: "key_not_found",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `;keyid="agent-a-1"`, ``, 1))
				return callBody
			}},
		{name: "algorithm unknown", status: badRequest, rpcCode: -32600, dataCode: "algorithm_unsupported",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Signature-Input", r.Header.Get("Signature-Input")+`;alg="rsa-pss-sha512"`)
				return callBody
			}},
		{name: "algorithm of another key type", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Set("Signature-Input", r.Header.Get("Signature-Input")+`;alg="ed25519"`)
				return callBody
			}},
		{name: "algorithm of the published key", status: badRequest, rpcCode: -32600, dataCode: "algorithm_unsupported",
			tamper: func(t *testing.T, e *env, r *http.Request) string {
				// The agent profile now publishes agent-a-1 on a curve
				// nobody supports (P-521): the kid resolves to a key of an
				// unsupported algorithm.
				p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
				pt, _ := p521.PublicKey.Bytes()
				raw, _ := json.Marshal(map[string]string{"kty": "EC", "crv": "P-521", "kid": "agent-a-1",
					"x": base64.RawURLEncoding.EncodeToString(pt[1:67]), "y": base64.RawURLEncoding.EncodeToString(pt[67:])})
				e.keys.mu.Lock()
				e.keys.cache[profileA] = []json.RawMessage{raw}
				e.keys.mu.Unlock()
				return callBody
			}},
		{name: "signature removed", status: unauthorized, rpcCode: -32000, dataCode: "signature_missing",
			tamper: func(_ *testing.T, _ *env, r *http.Request) string {
				r.Header.Del("Signature")
				r.Header.Del("Signature-Input")
				return callBody
			}},
		{name: "expired", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			prepare: func(t *testing.T, e *env, r *http.Request) {
				s := &httpsig.Signer{Key: e.kA, KeyID: "agent-a-1", Expires: time.Minute,
					Created:        func() time.Time { return time.Now().Add(-time.Hour) },
					CoverIfPresent: []string{"bcp-agent", "idempotency-key"}}
				if err := s.SignRequest(r, []byte(callBody)); err != nil {
					t.Fatal(err)
				}
			},
			tamper: func(_ *testing.T, _ *env, _ *http.Request) string { return callBody }},
		{name: "created in the future", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			prepare: func(t *testing.T, e *env, r *http.Request) {
				s := &httpsig.Signer{Key: e.kA, KeyID: "agent-a-1",
					Created:        func() time.Time { return time.Now().Add(time.Hour) },
					CoverIfPresent: []string{"bcp-agent", "idempotency-key"}}
				if err := s.SignRequest(r, []byte(callBody)); err != nil {
					t.Fatal(err)
				}
			},
			tamper: func(_ *testing.T, _ *env, _ *http.Request) string { return callBody }},
		{name: "bcp-agent not covered", status: unauthorized, rpcCode: -32000, dataCode: "signature_invalid",
			prepare: func(t *testing.T, e *env, r *http.Request) {
				s := &httpsig.Signer{Key: e.kA, KeyID: "agent-a-1", CoverIfPresent: []string{"idempotency-key"}}
				if err := s.SignRequest(r, []byte(callBody)); err != nil {
					t.Fatal(err)
				}
			},
			tamper: func(_ *testing.T, _ *env, _ *http.Request) string { return callBody }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, agentauth.PolicySignature, agentauth.Options{})
			body := tc.body
			if body == "" {
				body = callBody
			}
			req := e.request(t, body)
			if tc.prepare != nil {
				tc.prepare(t, e, req)
			}
			if req.Header.Get("Signature") == "" {
				sign(t, req, body, e.kA, "agent-a-1")
				// Control: the same request untampered is accepted, so the
				// tampering alone causes the rejection.
				e.wantAccepted(t, req.Clone(context.Background()), body)
			}
			sent := tc.tamper(t, e, req)
			e.wantRejected(t, req, sent, tc.status, tc.rpcCode, tc.dataCode)
		})
	}
}

const noMetaBody = `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_checkout","arguments":{"id":"chk_1"}}}`

func TestAlgorithmsAllowList(t *testing.T) {
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{Algorithms: []httpsig.Algorithm{httpsig.ES256}})
	req := e.request(t, callBody)
	sign(t, req, callBody, e.ed, "agent-a-ed")
	e.wantRejected(t, req, callBody, http.StatusBadRequest, -32600, "algorithm_unsupported")
	req = e.request(t, callBody)
	sign(t, req, callBody, e.kA, "agent-a-1")
	e.wantAccepted(t, req, callBody)
}

// An unknown kid forces one profile refresh: a key the agent just added is
// found; an unknown one is key_not_found, refreshed at most once per
// interval.
func TestUnknownKidForcesOneRefresh(t *testing.T) {
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{})
	req := e.request(t, callBody)
	sign(t, req, callBody, e.kA, "agent-a-1")
	e.wantAccepted(t, req, callBody) // profile now cached
	if e.keys.forcedCount() != 0 {
		t.Fatal("a known kid forced a refresh")
	}

	rotated, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	e.keys.publish(profileA, jwk(t, e.kA, "agent-a-1"), jwk(t, rotated, "agent-a-3"))
	req = e.request(t, callBody)
	sign(t, req, callBody, rotated, "agent-a-3")
	if p := e.wantAccepted(t, req, callBody); p.KeyID != "agent-a-3" {
		t.Fatalf("principal = %+v", p)
	}
	if e.keys.forcedCount() != 1 {
		t.Fatalf("forced refreshes = %d, want 1", e.keys.forcedCount())
	}

	// Unknown kids within the interval do not hit the profile host again.
	for i := 0; i < 3; i++ {
		stranger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		req = e.request(t, callBody)
		sign(t, req, callBody, stranger, "agent-a-404")
		e.wantRejected(t, req, callBody, http.StatusUnauthorized, -32000, "key_not_found")
	}
	if e.keys.forcedCount() != 1 {
		t.Fatalf("forced refreshes = %d after unknown kids, want still 1", e.keys.forcedCount())
	}
}

func TestPolicyAndCredentials(t *testing.T) {
	t.Run("signature policy rejects unsigned", func(t *testing.T) {
		e := newEnv(t, agentauth.PolicySignature, agentauth.Options{})
		req := e.request(t, callBody)
		status, h, r := send(t, req, callBody)
		if status != 401 || r.code != -32000 || r.dataCode != "signature_missing" || r.id != "7" {
			t.Fatalf("HTTP %d %s", status, r.raw)
		}
		if h.Get("Accept-Signature") == "" || h.Get("WWW-Authenticate") != "" {
			t.Fatalf("challenge headers: %v", h)
		}
		// An API key does not replace the signature under this policy.
		req = e.request(t, callBody)
		req.Header.Set("X-API-Key", "bcp_sk_whatever")
		e.wantRejected(t, req, callBody, 401, -32000, "signature_missing")
	})
	t.Run("either rejects no credentials", func(t *testing.T) {
		e := newEnv(t, agentauth.PolicyEither, agentauth.Options{})
		status, h, r := send(t, e.request(t, callBody), callBody)
		if status != 401 || r.code != -32000 || r.dataCode != "unauthenticated" {
			t.Fatalf("HTTP %d %s", status, r.raw)
		}
		if h.Get("WWW-Authenticate") != `Bearer realm="bcp"` || h.Get("Accept-Signature") == "" {
			t.Fatalf("challenge headers: %v", h)
		}
	})
	t.Run("api_key policy rejects a signature alone", func(t *testing.T) {
		e := newEnv(t, agentauth.PolicyAPIKey, agentauth.Options{})
		req := e.request(t, callBody)
		sign(t, req, callBody, e.kA, "agent-a-1")
		e.wantRejected(t, req, callBody, 401, -32000, "unauthenticated")
	})
	t.Run("signed request must name its profile", func(t *testing.T) {
		e := newEnv(t, agentauth.PolicyEither, agentauth.Options{})
		req := e.request(t, noMetaBody)
		req.Header.Del("BCP-Agent")
		sign(t, req, noMetaBody, e.kA, "agent-a-1")
		e.wantRejected(t, req, noMetaBody, 400, -32001, "invalid_profile_url")
	})
	t.Run("malformed BCP-Agent", func(t *testing.T) {
		e := newEnv(t, agentauth.PolicyEither, agentauth.Options{})
		req := e.request(t, callBody)
		req.Header.Set("BCP-Agent", profileA) // not a dictionary
		sign(t, req, callBody, e.kA, "agent-a-1")
		e.wantRejected(t, req, callBody, 400, -32001, "invalid_profile_url")
	})
	t.Run("profile fetch failure", func(t *testing.T) {
		e := newEnv(t, agentauth.PolicyEither, agentauth.Options{})
		body := strings.ReplaceAll(callBody, profileA, "https://gone.example/p.json")
		req := e.request(t, body)
		req.Header.Set("BCP-Agent", `profile="https://gone.example/p.json"`)
		sign(t, req, body, e.kA, "agent-a-1")
		e.wantRejected(t, req, body, http.StatusFailedDependency, -32001, "profile_unreachable")
	})
}

// The handshake and tool discovery pass without credentials; nothing else.
func TestPublicMethods(t *testing.T) {
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{})
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`,
	} {
		req := e.request(t, body)
		req.Header.Del("BCP-Agent")
		if p := e.wantAccepted(t, req, body); p != nil {
			t.Fatalf("public method got a principal: %+v", p)
		}
	}
	for _, body := range []string{
		noMetaBody,
		`{"jsonrpc":"2.0","id":5,"method":"resources/list"}`,
		`[{"jsonrpc":"2.0","id":3,"method":"ping"},` + noMetaBody + `]`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list"`, // not JSON: never public
	} {
		e.wantRejected(t, e.request(t, body), body, 401, -32000, "signature_missing")
	}
	// A repeated member could make authentication and the MCP SDK read
	// different methods.
	smuggle := `{"jsonrpc":"2.0","id":9,"method":"tools/list","method":"tools/call","params":{"name":"complete_checkout","arguments":{}}}`
	e.wantRejected(t, e.request(t, smuggle), smuggle, 400, -32600, "invalid_request")
	// Member names are matched exactly: "Method" is not "method".
	folded := `{"jsonrpc":"2.0","id":9,"Method":"tools/list","method":"tools/call","params":{"name":"complete_checkout","arguments":{}}}`
	e.wantRejected(t, e.request(t, folded), folded, 401, -32000, "signature_missing")

	// GET carries no JSON-RPC message: it needs credentials too.
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/bcp/mcp", nil)
	req.Host = host
	e.wantRejected(t, req, "", 401, -32000, "signature_missing")
}

func TestBodyLimitAndIDs(t *testing.T) {
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{MaxBodyBytes: 256})
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	e.wantRejected(t, e.request(t, big), big, http.StatusRequestEntityTooLarge, -32600, "request_too_large")

	e = newEnv(t, agentauth.PolicySignature, agentauth.Options{})
	body := strings.Replace(noMetaBody, `"id":8`, `"id":"req-8"`, 1)
	_, _, r := send(t, e.request(t, body), body)
	if r.id != `"req-8"` {
		t.Fatalf("error answers id %s, want the request's", r.id)
	}
	body = strings.Replace(noMetaBody, `"id":8`, `"id":{"x":1}`, 1)
	if _, _, r = send(t, e.request(t, body), body); r.id != "null" {
		t.Fatalf("error answers id %s, want null for an invalid id", r.id)
	}
}

// The client package signs exactly what the middleware verifies.
func TestAgentClientTransport(t *testing.T) {
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{})
	c := &agentclient.Client{Endpoint: e.srv.URL + "/bcp/mcp",
		Transport: &agentclient.Transport{ProfileURL: profileA, Key: e.kB, KeyID: "agent-a-2", Host: host}}
	resp, err := c.CallTool(context.Background(), "complete_checkout", map[string]any{
		"meta": map[string]any{"idempotency-key": agentclient.NewIdempotencyKey()}, "id": "chk_1", "checkout": map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || resp.Error != nil {
		t.Fatalf("HTTP %d %s", resp.Status, resp.Body)
	}
	p, body := e.rec.last()
	if p.KeyID != "agent-a-2" || p.AgentProfileURL != profileA || !bytes.Contains(body, []byte(`"ucp-agent":{"profile":"`+profileA+`"}`)) {
		t.Fatalf("principal %+v, body %s", p, body)
	}

	// Key id defaults to the RFC 7638 thumbprint the JWK publishes.
	thumb := jwk(t, e.kB, "")
	var j struct{ Kid string }
	_ = json.Unmarshal(thumb, &j)
	e.keys.publish(profileA, thumb)
	c.Transport.KeyID = ""
	resp, err = c.CallTool(context.Background(), "get_checkout", map[string]any{"id": "chk_1"})
	if err != nil || resp.Status != 200 {
		t.Fatalf("thumbprint kid: %v %s", err, resp.Body)
	}
	if p, _ := e.rec.last(); p.KeyID != j.Kid {
		t.Fatalf("kid %s, want thumbprint %s", p.KeyID, j.Kid)
	}
}
