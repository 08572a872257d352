package tenants_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/sealer"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/testdb"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/tenants"
)

func newService(t *testing.T) (*tenants.Service, *testdb.DB) {
	t.Helper()
	d := testdb.New(t)
	s, err := sealer.NewAESGCM(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return tenants.New(d.Pool, s, nil, slog.New(slog.DiscardHandler)), d
}

func mustTenant(t *testing.T, s *tenants.Service, name, domain string) *tenantsv1.Tenant {
	t.Helper()
	r, err := s.CreateTenant(context.Background(), connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: name, Domains: []string{domain}}))
	if err != nil {
		t.Fatal(err)
	}
	return r.Msg.GetTenant()
}

func wantCode(t *testing.T, err error, kind apperr.Kind, code string) {
	t.Helper()
	e := apperr.As(err)
	if err == nil || e.Kind != kind || e.Code != code {
		t.Fatalf("error %v, want kind %v code %s", err, kind, code)
	}
}

func TestAgentAuthPolicy(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Política", "politica.localhost")
	if tn.GetAgentAuthPolicy() != tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_EITHER || tn.GetSignAllResponses() {
		t.Fatalf("new tenant: policy %v sign-all %v, want EITHER/false", tn.GetAgentAuthPolicy(), tn.GetSignAllResponses())
	}
	r, err := s.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{
		Tenant: "politica.localhost", Policy: tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Msg.GetTenant().GetAgentAuthPolicy() != tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE || r.Msg.GetTenant().GetSignAllResponses() {
		t.Fatalf("after set: %v", r.Msg.GetTenant())
	}
	// UNSPECIFIED keeps the policy; the flag changes alone.
	if _, err := s.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{
		Tenant: tn.GetSlug(), SignAllResponses: proto.Bool(true),
	})); err != nil {
		t.Fatal(err)
	}
	g, err := s.GetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.GetAgentAuthPolicyRequest{TenantId: tn.GetId()}))
	if err != nil {
		t.Fatal(err)
	}
	if g.Msg.GetPolicy() != tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE || !g.Msg.GetSignAllResponses() ||
		g.Msg.GetEnvironment() != tenantsv1.Environment_ENVIRONMENT_PRODUCTION {
		t.Fatalf("GetAgentAuthPolicy = %v", g.Msg)
	}
	// The Host lookup the edge does carries the policy too.
	h, err := s.ResolveHost(ctx, connect.NewRequest(&tenantsv1.ResolveHostRequest{Host: "politica.localhost"}))
	if err != nil {
		t.Fatal(err)
	}
	if h.Msg.GetTenant().GetAgentAuthPolicy() != tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE || !h.Msg.GetTenant().GetSignAllResponses() {
		t.Fatalf("ResolveHost tenant = %v", h.Msg.GetTenant())
	}
	_, err = s.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{Tenant: tn.GetId(), Policy: 42}))
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_policy")
	_, err = s.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{Tenant: "nope.localhost", Policy: 1}))
	wantCode(t, err, apperr.KindNotFound, "tenant_not_found")
}

func TestAuthenticateAPIKeyIsPerTenant(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	a := mustTenant(t, s, "Loja A", "a.localhost")
	b := mustTenant(t, s, "Loja B", "b.localhost")
	k, err := s.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: a.GetId(), AgentProfileUrl: "https://agent.example/p.json"}))
	if err != nil {
		t.Fatal(err)
	}
	secret := k.Msg.GetSecret()
	auth := func(tenantID, secret string) (*tenantsv1.AuthenticateAPIKeyResponse, error) {
		r, err := s.AuthenticateAPIKey(ctx, connect.NewRequest(&tenantsv1.AuthenticateAPIKeyRequest{TenantId: tenantID, Secret: secret}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	got, err := auth(a.GetId(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetApiKeyId() != k.Msg.GetApiKey().GetId() || got.GetAgentProfileUrl() != "https://agent.example/p.json" {
		t.Fatalf("AuthenticateAPIKey = %v", got)
	}
	_, err = auth(b.GetId(), secret)
	wantCode(t, err, apperr.KindNotFound, "api_key_not_found")
	for _, bad := range []string{"", secret + "x", strings.Repeat("k", 600)} {
		_, err = auth(a.GetId(), bad)
		wantCode(t, err, apperr.KindNotFound, "api_key_not_found")
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Fatal("the error echoes the secret")
		}
	}
	_, err = auth("not-a-uuid", secret)
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_tenant_id")
	if _, err := s.RevokeAPIKey(ctx, connect.NewRequest(&tenantsv1.RevokeAPIKeyRequest{Tenant: a.GetId(), ApiKeyId: k.Msg.GetApiKey().GetId()})); err != nil {
		t.Fatal(err)
	}
	_, err = auth(a.GetId(), secret)
	wantCode(t, err, apperr.KindNotFound, "api_key_not_found")
}

// keysByKid lists the tenant's keys.
func keysByKid(t *testing.T, s *tenants.Service, tenant string) map[string]*tenantsv1.SigningKey {
	t.Helper()
	r, err := s.ListSigningKeys(context.Background(), connect.NewRequest(&tenantsv1.ListSigningKeysRequest{Tenant: tenant}))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tenantsv1.SigningKey{}
	for _, k := range r.Msg.GetKeys() {
		out[k.GetKid()] = k
	}
	return out
}

// published returns the kids GetDiscovery publishes (the profile's
// signing_keys).
func published(t *testing.T, s *tenants.Service, tenantID string) []httpsig.JWK {
	t.Helper()
	d, err := s.GetDiscovery(context.Background(), connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tenantID}))
	if err != nil {
		t.Fatal(err)
	}
	var out []httpsig.JWK
	for _, raw := range d.Msg.GetSigningKeysJson() {
		j, err := httpsig.ParseJWK([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

func kids(jwks []httpsig.JWK) string {
	var ks []string
	for _, j := range jwks {
		ks = append(ks, j.Kid)
	}
	return strings.Join(ks, ",")
}

// signResponse signs a response through SignWithCurrentKey the way the
// edge does and returns the header and the kid.
func signResponse(t *testing.T, s *tenants.Service, tenantID string, body []byte) (http.Header, string, error) {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}, "Content-Digest": {httpsig.ContentDigest(body)}}
	p := httpsig.SignatureParams{Label: "sig1", Components: []string{"@status", "content-digest", "content-type"}, Created: time.Now()}
	base, err := httpsig.ResponseSignatureBase(h, 200, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(base, '\n')
	r, err := s.SignWithCurrentKey(context.Background(), connect.NewRequest(&tenantsv1.SignWithCurrentKeyRequest{
		TenantId: tenantID, SignatureBase: base[:i+1], SignatureParams: strings.TrimPrefix(string(base[i+1:]), `"@signature-params": `),
	}))
	if err != nil {
		return nil, "", err
	}
	if r.Msg.GetAlg() != "ES256" || len(r.Msg.GetSignature()) != 64 {
		t.Fatalf("alg %s, %d signature bytes; want ES256 raw r||s", r.Msg.GetAlg(), len(r.Msg.GetSignature()))
	}
	sig, _ := httpsig.FormatSignature("sig1", r.Msg.GetSignature())
	h.Set("Signature-Input", "sig1="+r.Msg.GetSignatureParams())
	h.Set("Signature", sig)
	return h, r.Msg.GetKid(), nil
}

func verifyWith(t *testing.T, jwks []httpsig.JWK, h http.Header, body []byte) error {
	t.Helper()
	ks, err := httpsig.NewKeySet(jwks)
	if err != nil {
		t.Fatal(err)
	}
	v := &httpsig.Verifier{Keys: ks.Resolve, Requirements: httpsig.ResponseRequirements(), RejectAlgParameter: true}
	_, err = v.VerifyResponse(context.Background(), h, 200, body, nil)
	return err
}

// shiftSignFrom moves a key's sign_from by d, standing in for the clock
// moving forward (the service compares with the database clock).
func shiftSignFrom(t *testing.T, d *testdb.DB, kid string, to string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE tenants.signing_keys SET sign_from = now() + $2::interval WHERE kid = $1`, kid, to); err != nil {
		t.Fatal(err)
	}
}

func TestSigningKeyRotationAndRevocation(t *testing.T) {
	s, d := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Chaves", "chaves.localhost")
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"status":"completed"}}}`)

	keys := keysByKid(t, s, tn.GetId())
	if len(keys) != 1 {
		t.Fatalf("onboarding made %d keys, want 1", len(keys))
	}
	var k1 string
	for kid, k := range keys {
		k1 = kid
		if k.GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_CURRENT || k.GetAlg() != "ES256" || k.GetRetireTime() != nil {
			t.Fatalf("onboarding key = %v", k)
		}
	}
	h1, kid, err := signResponse(t, s, tn.GetId(), body)
	if err != nil || kid != k1 {
		t.Fatalf("sign: kid %s err %v; want %s", kid, err, k1)
	}
	if err := verifyWith(t, published(t, s, tn.GetId()), h1, body); err != nil {
		t.Fatalf("signature by the current key does not verify with the published keys: %v", err)
	}

	// Rotate with the default delay (1 h): published at once, not signing.
	r, err := s.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: "chaves.localhost"}))
	if err != nil {
		t.Fatal(err)
	}
	k2 := r.Msg.GetKey().GetKid()
	if r.Msg.GetKey().GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_PENDING {
		t.Fatalf("new key = %v", r.Msg.GetKey())
	}
	if got := r.Msg.GetKey().GetSignFromTime().AsTime().Sub(r.Msg.GetKey().GetCreateTime().AsTime()); got < time.Hour-time.Second || got > time.Hour+time.Second {
		t.Fatalf("sign_from - created = %s, want the 1 h default delay", got)
	}
	keys = keysByKid(t, s, tn.GetId())
	old := keys[k1]
	if old.GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_CURRENT {
		t.Fatalf("old key during the delay = %v", old)
	}
	if want := r.Msg.GetKey().GetSignFromTime().AsTime().Add(7 * 24 * time.Hour); !old.GetRetireTime().AsTime().Equal(want) {
		t.Fatalf("old key retires at %s, want new sign_from + 7 days = %s", old.GetRetireTime().AsTime(), want)
	}
	if got := kids(published(t, s, tn.GetId())); got != k1+","+k2 {
		t.Fatalf("published %s, want both keys", got)
	}
	if _, kid, _ := signResponse(t, s, tn.GetId(), body); kid != k1 {
		t.Fatalf("signed with %s during the delay, want the old key %s", kid, k1)
	}
	if err := verifyWith(t, published(t, s, tn.GetId()), h1, body); err != nil {
		t.Fatalf("old signature after rotation: %v", err)
	}

	// The delay passes: the new key signs; the old one still verifies.
	shiftSignFrom(t, d, k2, "-1 second")
	h2, kid, err := signResponse(t, s, tn.GetId(), body)
	if err != nil || kid != k2 {
		t.Fatalf("after the delay signed with %s (%v), want %s", kid, err, k2)
	}
	keys = keysByKid(t, s, tn.GetId())
	if keys[k2].GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_CURRENT || keys[k1].GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRING {
		t.Fatalf("statuses after the delay: new %v, old %v", keys[k2].GetStatus(), keys[k1].GetStatus())
	}
	for _, h := range []http.Header{h1, h2} {
		if err := verifyWith(t, published(t, s, tn.GetId()), h, body); err != nil {
			t.Fatalf("verify after the switch: %v", err)
		}
	}

	// Revocation removes the key from the profile at once; old signatures
	// stop verifying (key_not_found).
	if _, err := s.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: k1})); err != nil {
		t.Fatal(err)
	}
	if got := kids(published(t, s, tn.GetId())); got != k2 {
		t.Fatalf("published after revoke = %s, want %s", got, k2)
	}
	if err := verifyWith(t, published(t, s, tn.GetId()), h1, body); !errors.Is(err, httpsig.ErrKeyNotFound) {
		t.Fatalf("signature of a revoked key: %v, want key not found", err)
	}
	if keysByKid(t, s, tn.GetId())[k1].GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_REVOKED {
		t.Fatal("revoked key not listed as revoked")
	}

	// The only usable key is not revoked without force.
	_, err = s.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: k2}))
	wantCode(t, err, apperr.KindFailedPrecondition, "last_signing_key")
	if kid, _ := func() (string, error) { _, k, err := signResponse(t, s, tn.GetId(), body); return k, err }(); kid != k2 {
		t.Fatal("a refused revocation changed the signing key")
	}
	_, err = s.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: "nope"}))
	wantCode(t, err, apperr.KindNotFound, "signing_key_not_found")
	if _, err := s.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: k2, Force: true})); err != nil {
		t.Fatal(err)
	}
	_, _, err = signResponse(t, s, tn.GetId(), body)
	wantCode(t, err, apperr.KindFailedPrecondition, "no_signing_key")
	if got := published(t, s, tn.GetId()); len(got) != 0 {
		t.Fatalf("published after revoking everything: %s", kids(got))
	}

	// A zero delay signs at once.
	r, err = s.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(0)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, kid, err := signResponse(t, s, tn.GetId(), body); err != nil || kid != r.Msg.GetKey().GetKid() {
		t.Fatalf("zero-delay key not used at once: %s %v", kid, err)
	}
}

// A revocation during a rotation's delay leaves the pending key, which is
// published already; it signs at once rather than nothing signing.
func TestRevokeCurrentDuringDelay(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Comprometida", "comp.localhost")
	var k1 string
	for kid := range keysByKid(t, s, tn.GetId()) {
		k1 = kid
	}
	r, err := s.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(6 * time.Hour)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: k1})); err != nil {
		t.Fatalf("revoking the current key while another is pending: %v", err)
	}
	if _, kid, err := signResponse(t, s, tn.GetId(), []byte(`{}`)); err != nil || kid != r.Msg.GetKey().GetKid() {
		t.Fatalf("signed with %s (%v), want the pending key", kid, err)
	}
}

// Two rotations in a row: the later one wins even if the earlier one's
// (longer) delay ends after it.
func TestLaterRotationWins(t *testing.T) {
	s, d := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Duas", "duas.localhost")
	rot := func(delay time.Duration) string {
		r, err := s.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(delay)}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetKey().GetKid()
	}
	k2 := rot(2 * time.Hour)
	k3 := rot(0)
	if _, kid, _ := signResponse(t, s, tn.GetId(), []byte(`{}`)); kid != k3 {
		t.Fatalf("signed with %s, want the latest rotation %s", kid, k3)
	}
	shiftSignFrom(t, d, k2, "-1 second") // k2's own delay has passed
	if _, kid, _ := signResponse(t, s, tn.GetId(), []byte(`{}`)); kid != k3 {
		t.Fatalf("superseded pending key %s took over from %s", kid, k3)
	}
	keys := keysByKid(t, s, tn.GetId())
	if keys[k2].GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRING || keys[k2].GetRetireTime() == nil {
		t.Fatalf("superseded pending key = %v", keys[k2])
	}
}

func TestRotationInputAndSigningOracleLimits(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Limites", "limites.localhost")
	for _, c := range []struct {
		req  *tenantsv1.RotateSigningKeyRequest
		code string
	}{
		{&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(-time.Second)}, "invalid_delay"},
		{&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(31 * 24 * time.Hour)}, "invalid_delay"},
		{&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Retention: durationpb.New(6 * 24 * time.Hour)}, "invalid_retention"},
	} {
		_, err := s.RotateSigningKey(ctx, connect.NewRequest(c.req))
		wantCode(t, err, apperr.KindInvalidArgument, c.code)
	}
	if len(keysByKid(t, s, tn.GetId())) != 1 {
		t.Fatal("a refused rotation made a key")
	}
	sign := func(base, params string) error {
		_, err := s.SignWithCurrentKey(ctx, connect.NewRequest(&tenantsv1.SignWithCurrentKeyRequest{TenantId: tn.GetId(), SignatureBase: []byte(base), SignatureParams: params}))
		return err
	}
	good := "\"@status\": 200\n"
	for _, c := range []struct{ base, params, code string }{
		{"", `("@status");created=1`, "invalid_signature_base"},
		{`"@status": 200`, `("@status");created=1`, "invalid_signature_base"},
		{"\"@status\": 200\n\"@signature-params\": (\"@status\")\n", `("@status");created=1`, "invalid_signature_base"},
		{"\"@status\": 2\r00\n", `("@status");created=1`, "invalid_signature_base"},
		{good, `("@status");keyid="mine"`, "invalid_signature_params"},
		{good, `("@status");alg="ed25519"`, "invalid_signature_params"},
		{good, `"@status"`, "invalid_signature_params"},
		{good, ``, "invalid_signature_params"},
	} {
		wantCode(t, sign(c.base, c.params), apperr.KindInvalidArgument, c.code)
	}
	if err := sign(good, `("@status");created=1`); err != nil {
		t.Fatal(err)
	}
}

// SetTenantName renames (trimmed, 1 to 200 characters) and leaves the slug
// and domains alone; the admin web reaches it, the signing keys, payment
// handlers and the agent policy with the internal token.
func TestSetTenantNameAndAdminAccess(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Nome", "nome.localhost")
	r, err := s.SetTenantName(ctx, connect.NewRequest(&tenantsv1.SetTenantNameRequest{Tenant: "nome.localhost", Name: "  Nome Novo  "}))
	if err != nil || r.Msg.GetTenant().GetName() != "Nome Novo" || r.Msg.GetTenant().GetSlug() != tn.GetSlug() || r.Msg.GetTenant().GetPrimaryDomain() != "nome.localhost" {
		t.Fatalf("rename: %v %v", r, err)
	}
	_, err = s.SetTenantName(ctx, connect.NewRequest(&tenantsv1.SetTenantNameRequest{Tenant: tn.GetId(), Name: " "}))
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_name")
	_, err = s.SetTenantName(ctx, connect.NewRequest(&tenantsv1.SetTenantNameRequest{Tenant: "nope.localhost", Name: "X"}))
	wantCode(t, err, apperr.KindNotFound, "tenant_not_found")
	for _, p := range []string{
		tenantsv1connect.TenantServiceSetTenantNameProcedure, tenantsv1connect.TenantServiceListSigningKeysProcedure,
		tenantsv1connect.TenantServiceRotateSigningKeyProcedure, tenantsv1connect.TenantServiceRevokeSigningKeyProcedure,
		tenantsv1connect.TenantServiceSetPaymentHandlerProcedure, tenantsv1connect.TenantServiceRemovePaymentHandlerProcedure,
		tenantsv1connect.TenantServiceSetAgentAuthPolicyProcedure,
	} {
		if tenants.Policy(p) != svcauth.Internal {
			t.Errorf("%s needs the operator token", p)
		}
	}
	for _, p := range []string{tenantsv1connect.TenantServiceCreateTenantProcedure, tenantsv1connect.TenantServiceGetTenantProcedure, tenantsv1connect.TenantServiceAddDomainProcedure} {
		if tenants.Policy(p) != svcauth.Operator {
			t.Errorf("%s is open to the internal token", p)
		}
	}
}
