package agentauth_test

import (
	"context"
	"crypto"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

// memNonces is a NonceStore in memory on the test's clock; it records the
// lifetimes it is asked for.
type memNonces struct {
	mu       sync.Mutex
	now      func() time.Time
	until    map[[32]byte]time.Time
	validFor []time.Duration
	err      error
}

func newMemNonces(now func() time.Time) *memNonces {
	return &memNonces{now: now, until: map[[32]byte]time.Time{}}
}

func (m *memNonces) Claim(_ context.Context, key [32]byte, validFor time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return false, m.err
	}
	m.validFor = append(m.validFor, validFor)
	if u, ok := m.until[key]; ok && m.now().Before(u) {
		return false, nil
	}
	m.until[key] = m.now().Add(validFor)
	return true, nil
}

func (m *memNonces) lifetimes() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Duration(nil), m.validFor...)
}

// signAt signs req as the agent does, at created (zero: no created), with
// expires after created when positive and nonce when not empty.
func signAt(t *testing.T, req *http.Request, body string, key crypto.Signer, kid string, created time.Time, expires time.Duration, nonce string) {
	t.Helper()
	s := &httpsig.Signer{Key: key, KeyID: kid, Expires: expires, CoverIfPresent: []string{"bcp-agent", "ucp-agent", "idempotency-key"},
		Created: func() time.Time { return created }}
	if nonce != "" {
		s.Nonce = func() (string, error) { return nonce, nil }
	}
	if err := s.SignRequest(req, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// wantRefused expects the exact failure: HTTP status, JSON-RPC code,
// data.code and data.content.
func (e *env) wantRefused(t *testing.T, req *http.Request, status, code int, dataCode, content string) http.Header {
	t.Helper()
	before := e.rec.count()
	gotStatus, h, r := send(t, req, callBody)
	if gotStatus != status || r.code != code || r.dataCode != dataCode || r.content != content {
		t.Fatalf("want HTTP %d %d %s %q, got HTTP %d %s", status, code, dataCode, content, gotStatus, r.raw)
	}
	if e.rec.count() != before {
		t.Fatal("the protected handler ran for a refused request")
	}
	return h
}

var clock = time.Unix(1767225600, 0)

func fixedNow() time.Time { return clock }

// created is bounded to the window (5 min by default) plus 30 s of clock
// skew both ways, and expires to the present plus the skew; each refusal
// names its reason.
func TestSignatureWindow(t *testing.T) {
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{Now: fixedNow, Nonces: newMemNonces(fixedNow)})
	signed := func(created time.Time, expires time.Duration) *http.Request {
		req := e.request(t, callBody)
		signAt(t, req, callBody, e.kA, "agent-a-1", created, expires, "")
		return req
	}
	e.wantAccepted(t, signed(clock.Add(-330*time.Second), 0), callBody) // the window and the skew, to the second
	e.wantAccepted(t, signed(clock.Add(30*time.Second), 0), callBody)   // a signer's clock ahead within the skew
	e.wantAccepted(t, signed(time.Time{}, 0), callBody)                 // no created: not required here
	e.wantRefused(t, signed(clock.Add(-331*time.Second), 0), http.StatusUnauthorized, -32000, "signature_invalid",
		"signature sig1: created is older than the 300 s window (30 s of clock skew allowed)")
	e.wantRefused(t, signed(clock.Add(-30*24*time.Hour), 0), http.StatusUnauthorized, -32000, "signature_invalid",
		"signature sig1: created is older than the 300 s window (30 s of clock skew allowed)")
	e.wantRefused(t, signed(clock.Add(31*time.Second), 0), http.StatusUnauthorized, -32000, "signature_invalid",
		"signature sig1: created is in the future, beyond the 30 s of clock skew allowed")
	e.wantRefused(t, signed(clock.Add(-time.Minute), 29*time.Second), http.StatusUnauthorized, -32000, "signature_invalid",
		"signature sig1: the signature expired: expires is past, beyond the 30 s of clock skew allowed")

	// The window and the skew are the edge's to set.
	wide := newEnv(t, agentauth.PolicySignature, agentauth.Options{Now: fixedNow, SignatureWindow: time.Hour, ClockSkew: -1})
	req := wide.request(t, callBody)
	signAt(t, req, callBody, wide.kA, "agent-a-1", clock.Add(-59*time.Minute), 0, "")
	wide.wantAccepted(t, req, callBody)
	req = wide.request(t, callBody)
	signAt(t, req, callBody, wide.kA, "agent-a-1", clock.Add(-61*time.Minute), 0, "")
	wide.wantRefused(t, req, http.StatusUnauthorized, -32000, "signature_invalid",
		"signature sig1: created is older than the 3600 s window (0 s of clock skew allowed)")
}

// A nonce is accepted once per signer, for as long as its signature could
// be accepted; a replay, or a new signature reusing the nonce, is refused.
func TestNonceAcceptedOnce(t *testing.T) {
	store := newMemNonces(fixedNow)
	e := newEnv(t, agentauth.PolicySignature, agentauth.Options{Now: fixedNow, Nonces: store})
	req := e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock.Add(-10*time.Second), 0, "n-1")
	replay := req.Clone(context.Background())
	e.wantAccepted(t, req, callBody)
	const reused = "signature sig1: the nonce was already used (a replayed signature); sign every request anew, with a fresh nonce"
	e.wantRefused(t, replay, http.StatusUnauthorized, -32000, "signature_invalid", reused)

	// Signed again (another created), same nonce: refused too.
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock, 0, "n-1")
	e.wantRefused(t, req, http.StatusUnauthorized, -32000, "signature_invalid", reused)
	// The same nonce from another key of the profile is that signer's own.
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kB, "agent-a-2", clock, 0, "n-1")
	e.wantAccepted(t, req, callBody)
	// expires sooner than the window bounds the lifetime instead.
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock.Add(-10*time.Second), time.Minute, "n-2")
	e.wantAccepted(t, req, callBody)
	// Without created, the window from now.
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", time.Time{}, 0, "n-3")
	e.wantAccepted(t, req, callBody)

	// Lifetimes: created + 300 s + 30 s from now (created 10 s ago), the
	// same for the refused ones (claimed, found), expires + 30 s, and the
	// window + skew.
	want := []time.Duration{320 * time.Second, 320 * time.Second, 330 * time.Second, 330 * time.Second, 80 * time.Second, 330 * time.Second}
	if got := store.lifetimes(); len(got) != len(want) {
		t.Fatalf("lifetimes = %v, want %v", got, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("lifetimes = %v, want %v", got, want)
			}
		}
	}

	// The replay cache unreachable: refused (503), never let through.
	store.err = apperr.New(apperr.KindUnavailable, "unavailable", "tenants down")
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock, 0, "n-4")
	e.wantRefused(t, req, http.StatusServiceUnavailable, -32000, "unavailable", "the platform is temporarily unavailable, retry shortly")
	store.err = errors.New("boom")
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock, 0, "n-5")
	e.wantRefused(t, req, http.StatusInternalServerError, -32603, "internal_error", "internal error")
}

// A merchant requiring created (and a nonce) refuses signatures without
// them and asks for them in Accept-Signature.
func TestMerchantRequiresCreatedAndNonce(t *testing.T) {
	store := newMemNonces(fixedNow)
	e := newEnvPolicy(t, agentauth.TenantPolicy{Auth: agentauth.PolicySignature, RequireCreated: true}, agentauth.Options{Now: fixedNow, Nonces: store})
	req := e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", time.Time{}, 0, "")
	e.wantRefused(t, req, http.StatusUnauthorized, -32000, "signature_invalid", "signature sig1: the created parameter is required")
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock, 0, "")
	e.wantAccepted(t, req, callBody)
	h := e.wantRefused(t, e.request(t, callBody), http.StatusUnauthorized, -32000, "signature_missing",
		"this merchant requires an RFC 9421 signature made with a key of the agent profile")
	if got := h.Get("Accept-Signature"); got != `sig1=("@method" "@authority" "@path" "bcp-agent" "content-digest" "content-type");created` {
		t.Fatalf("Accept-Signature = %s", got)
	}

	e = newEnvPolicy(t, agentauth.TenantPolicy{Auth: agentauth.PolicyEither, RequireCreated: true, RequireNonce: true}, agentauth.Options{Now: fixedNow, Nonces: store})
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock, 0, "")
	e.wantRefused(t, req, http.StatusUnauthorized, -32000, "signature_invalid", "signature sig1: the nonce parameter is required")
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", time.Time{}, 0, "n-6")
	e.wantRefused(t, req, http.StatusUnauthorized, -32000, "signature_invalid", "signature sig1: the created parameter is required")
	req = e.request(t, callBody)
	signAt(t, req, callBody, e.kA, "agent-a-1", clock, 0, "n-6")
	e.wantAccepted(t, req, callBody)
	h = e.wantRefused(t, e.request(t, callBody), http.StatusUnauthorized, -32000, "unauthenticated",
		"send an agent API key (X-API-Key or Authorization: Bearer) or an RFC 9421 signature")
	if got := h.Get("Accept-Signature"); got != `sig1=("@method" "@authority" "@path" "bcp-agent" "content-digest" "content-type");created;nonce` {
		t.Fatalf("Accept-Signature = %s", got)
	}
}

// Nonce keys are scoped to the signer and unambiguous.
func TestNonceKey(t *testing.T) {
	k := agentauth.NonceKey("https://a.example/p", "k1", "n")
	for _, other := range [][3]string{{"https://a.example/p", "k1", "m"}, {"https://a.example/p", "k2", "n"}, {"https://b.example/p", "k1", "n"}, {"https://a.example/p", "k1n", ""}} {
		if agentauth.NonceKey(other[0], other[1], other[2]) == k {
			t.Fatalf("NonceKey%v collides with NonceKey(a, k1, n)", other)
		}
	}
	if agentauth.NonceKey("https://a.example/p", "k1", "n") != k {
		t.Fatal("NonceKey is not deterministic")
	}
}
