package tenants_test

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/tenants"
)

func nonceKey(s string) []byte {
	k := sha256.Sum256([]byte(s))
	return k[:]
}

func claim(t *testing.T, c tenantsv1connect.TenantServiceClient, tenant string, key []byte, validFor time.Duration) (bool, error) {
	t.Helper()
	r, err := c.ClaimSignatureNonce(tenancy.With(context.Background(), uuid.MustParse(tenant)),
		connect.NewRequest(&tenantsv1.ClaimSignatureNonceRequest{Key: key, ValidFor: durationpb.New(validFor)}))
	if err != nil {
		return false, err
	}
	return r.Msg.GetFresh(), nil
}

// The replay cache: a nonce is fresh once per tenant while its row lives;
// an expired row is taken over; only the edges (internal token) claim;
// the sweep deletes expired rows of every tenant and never a live one.
func TestClaimSignatureNonce(t *testing.T) {
	s, d := newService(t)
	log := slog.New(slog.DiscardHandler)
	mux := http.NewServeMux()
	mux.Handle(tenantsv1connect.NewTenantServiceHandler(s, connect.WithInterceptors(apperr.Interceptor(log),
		svcauth.Server(svcauth.Tokens{Internal: rlInternalToken, Operator: rlOperatorToken}, tenants.Policy))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	internal := tenantsv1connect.NewTenantServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(rlInternalToken)))
	operator := tenantsv1connect.NewTenantServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(rlOperatorToken)))
	a, b := mustTenant(t, s, "Loja Nonce A", "nonce-a.localhost").GetId(), mustTenant(t, s, "Loja Nonce B", "nonce-b.localhost").GetId()

	k := nonceKey("n-1")
	for i, want := range []bool{true, false, false} {
		if fresh, err := claim(t, internal, a, k, time.Minute); err != nil || fresh != want {
			t.Fatalf("claim %d: fresh=%v err=%v, want %v", i, fresh, err, want)
		}
	}
	if fresh, err := claim(t, internal, b, k, time.Minute); err != nil || !fresh {
		t.Fatalf("the same key at another tenant: fresh=%v err=%v", fresh, err)
	}
	_, err := claim(t, operator, a, nonceKey("n-2"), time.Minute)
	wantCode(t, err, apperr.KindPermissionDenied, "internal_only")
	_, err = claim(t, internal, a, []byte("short"), time.Minute)
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_nonce_key")
	for _, v := range []time.Duration{0, 999 * time.Millisecond, 25*time.Hour + time.Second} {
		_, err = claim(t, internal, a, nonceKey("n-3"), v)
		wantCode(t, err, apperr.KindInvalidArgument, "invalid_validity")
	}

	// The row's lifetime is the database clock plus valid_for.
	ctx := context.Background()
	super, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	var secs float64
	if err := super.QueryRow(ctx, `SELECT extract(epoch FROM expires_at - now()) FROM tenants.signature_nonces WHERE tenant_id = $1 AND key = $2`, a, k).Scan(&secs); err != nil || secs < 50 || secs > 60 {
		t.Fatalf("row lives %g s more (%v), want ≈ 60", secs, err)
	}
	// Expired (the clock moved past it): the nonce's signature can no
	// longer be accepted, so the key is free again.
	expire := func(tenant string, key []byte) {
		t.Helper()
		if tag, err := super.Exec(ctx, `UPDATE tenants.signature_nonces SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND key = $2`, tenant, key); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("expire: %v (%d rows)", err, tag.RowsAffected())
		}
	}
	expire(a, k)
	if fresh, err := claim(t, internal, a, k, time.Minute); err != nil || !fresh {
		t.Fatalf("after expiry: fresh=%v err=%v", fresh, err)
	}

	// The sweep: expired rows of both tenants go, live ones stay.
	for _, n := range []string{"old-1", "old-2"} {
		if fresh, err := claim(t, internal, a, nonceKey(n), time.Minute); err != nil || !fresh {
			t.Fatal(fresh, err)
		}
		expire(a, nonceKey(n))
	}
	expire(b, k)
	n, err := s.SweepSignatureNonces(ctx)
	if err != nil || n != 3 {
		t.Fatalf("sweep: %d rows (%v), want 3", n, err)
	}
	var left int
	if err := super.QueryRow(ctx, `SELECT count(*) FROM tenants.signature_nonces`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d rows left (%v), want the live one", left, err)
	}

	// As bcp_app, the sweep scope cannot see or delete a live nonce, and a
	// tenant's scope sees only its own.
	app, err := pgx.Connect(ctx, d.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	inScope := func(key, value, sql string) int64 {
		t.Helper()
		tx, err := app.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `SELECT set_config($1, $2, true)`, key, value); err != nil {
			t.Fatal(err)
		}
		tag, err := tx.Exec(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		return tag.RowsAffected()
	}
	if n := inScope("app.scope", "signature_nonce_sweep", `DELETE FROM tenants.signature_nonces`); n != 0 {
		t.Fatalf("the sweep scope deleted %d live nonces", n)
	}
	if n := inScope("app.tenant_id", b, `SELECT FROM tenants.signature_nonces`); n != 0 {
		t.Fatalf("tenant B's scope sees %d of A's nonces", n)
	}
	if n := inScope("app.tenant_id", a, `SELECT FROM tenants.signature_nonces`); n != 1 {
		t.Fatalf("tenant A's scope sees %d nonces, want its 1", n)
	}
}

// The merchant's signature requirements: a nonce needs created, so asking
// for a nonce sets created and dropping created drops the nonce; asking
// for a nonce without created is refused.
func TestSignatureRequirements(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Exigente", "exigente.localhost")
	if tn.GetRequireSignatureCreated() || tn.GetRequireSignatureNonce() {
		t.Fatalf("a new tenant requires created=%v nonce=%v", tn.GetRequireSignatureCreated(), tn.GetRequireSignatureNonce())
	}
	yes, no := true, false
	set := func(created, nonce *bool) (*tenantsv1.Tenant, error) {
		r, err := s.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{Tenant: tn.GetId(),
			RequireSignatureCreated: created, RequireSignatureNonce: nonce}))
		if err != nil {
			return nil, err
		}
		return r.Msg.GetTenant(), nil
	}
	for i, c := range []struct {
		created, nonce         *bool
		wantCreated, wantNonce bool
	}{
		{nil, &yes, true, true},  // a nonce sets created
		{nil, nil, true, true},   // nothing given: kept
		{&no, nil, false, false}, // no created: no nonce either
		{&yes, nil, true, false}, // created alone
		{nil, &yes, true, true},  //
		{nil, &no, true, false},  // nonce dropped, created kept
		{&yes, &yes, true, true}, //
		{&no, &no, false, false}, //
	} {
		got, err := set(c.created, c.nonce)
		if err != nil || got.GetRequireSignatureCreated() != c.wantCreated || got.GetRequireSignatureNonce() != c.wantNonce {
			t.Fatalf("step %d: created=%v nonce=%v (%v), want %v %v", i, got.GetRequireSignatureCreated(), got.GetRequireSignatureNonce(), err, c.wantCreated, c.wantNonce)
		}
	}
	_, err := set(&no, &yes)
	wantCode(t, err, apperr.KindInvalidArgument, "nonce_needs_created")

	if _, err := set(nil, &yes); err != nil {
		t.Fatal(err)
	}
	g, err := s.GetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.GetAgentAuthPolicyRequest{TenantId: tn.GetId()}))
	if err != nil || !g.Msg.GetRequireSignatureCreated() || !g.Msg.GetRequireSignatureNonce() {
		t.Fatalf("GetAgentAuthPolicy: %v (%v)", g, err)
	}
	// The policy itself is untouched by the requirements.
	if g.Msg.GetPolicy() != tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_EITHER {
		t.Fatalf("policy = %v", g.Msg.GetPolicy())
	}
}
