package tenants_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/tenants"
)

const (
	rlInternalToken = "internal-token-for-rate-limit-tests"
	rlOperatorToken = "operator-token-for-rate-limit-tests"
)

// rateEnv serves the tenants service over a real listener behind svcauth,
// as platform.Start mounts it: LeaseRateTokens needs the internal token and
// the tenant header.
func rateEnv(t *testing.T) (internal, operator tenantsv1connect.TenantServiceClient, superURL, appURL string) {
	t.Helper()
	s, d := newService(t)
	log := slog.New(slog.DiscardHandler)
	mux := http.NewServeMux()
	mux.Handle(tenantsv1connect.NewTenantServiceHandler(s, connect.WithInterceptors(apperr.Interceptor(log),
		svcauth.Server(svcauth.Tokens{Internal: rlInternalToken, Operator: rlOperatorToken}, tenants.Policy))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	internal = tenantsv1connect.NewTenantServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(rlInternalToken)))
	operator = tenantsv1connect.NewTenantServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(rlOperatorToken)))
	return internal, operator, d.SuperURL, d.AppURL
}

func agentKey(profile string) string {
	h := sha256.Sum256([]byte(profile))
	return "agent:" + hex.EncodeToString(h[:])
}

func lease(t *testing.T, c tenantsv1connect.TenantServiceClient, tenant, key string, want int64) *tenantsv1.LeaseRateTokensResponse {
	t.Helper()
	r, err := c.LeaseRateTokens(tenancy.With(context.Background(), uuid.MustParse(tenant)), connect.NewRequest(&tenantsv1.LeaseRateTokensRequest{Key: key, Want: want}))
	if err != nil {
		t.Fatalf("lease %s %d: %v", key, want, err)
	}
	return r.Msg
}

// ageBucket moves a bucket's clock back (set-up as superuser): the refill
// the test wants, without waiting for it.
func ageBucket(t *testing.T, superURL, tenant, key string, seconds int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, superURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, `UPDATE tenants.rate_buckets SET updated_at = updated_at - make_interval(secs => $3) WHERE tenant_id = $1 AND key = $2`, tenant, key, seconds)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("age bucket: %v (%d rows)", err, tag.RowsAffected())
	}
}

// The bucket arithmetic: a new bucket starts full, grants are partial when
// it runs low, the retry hint is the time to the next whole token, refill
// is rate·elapsed capped at the burst, and merchant and agent buckets of a
// tenant are separate. Rates are 0.01/s, so the test's own duration refills
// nothing measurable.
func TestLeaseRateTokens(t *testing.T) {
	internal, operator, superURL, _ := rateEnv(t)
	ctx := context.Background()
	a, err := operator.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja Balde", Domains: []string{"balde.localhost"}}))
	if err != nil {
		t.Fatal(err)
	}
	tid := a.Msg.GetTenant().GetId()
	set, err := operator.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tid, Settings: &tenantsv1.Settings{
		RateLimits: &tenantsv1.RateLimits{MerchantRatePerSecond: 0.01, MerchantBurst: 5, AgentRatePerSecond: 0.01, AgentBurst: 3},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	if l := set.Msg.GetSettings().GetRateLimits(); l.GetMerchantRatePerSecond() != 0.01 || l.GetMerchantBurst() != 5 || l.GetAgentRatePerSecond() != 0.01 || l.GetAgentBurst() != 3 {
		t.Fatalf("stored limits %v", l)
	}

	// Full bucket of 5: 2 + 2 + 1 of 2 wanted, then nothing.
	for i, want := range []int64{2, 2, 1, 0} {
		r := lease(t, internal, tid, "merchant", 2)
		if r.GetGranted() != want || r.GetRatePerSecond() != 0.01 || r.GetBurst() != 5 {
			t.Fatalf("lease %d: granted %d (rate %g burst %d), want %d (0.01, 5)", i, r.GetGranted(), r.GetRatePerSecond(), r.GetBurst(), want)
		}
		if i < 2 && r.GetRetryAfterSeconds() != 0 {
			t.Fatalf("lease %d: retry after %g with tokens left", i, r.GetRetryAfterSeconds())
		}
		if i >= 2 && (r.GetRetryAfterSeconds() <= 90 || r.GetRetryAfterSeconds() > 100) {
			// Empty at 0.01/s: 100 s to the next token, less what the
			// test's own milliseconds refilled.
			t.Fatalf("lease %d: retry after %g s, want just under 100", i, r.GetRetryAfterSeconds())
		}
	}
	// 250 s at 0.01/s refill 2.5 tokens: 2 granted, half a token kept.
	ageBucket(t, superURL, tid, "merchant", 250)
	if r := lease(t, internal, tid, "merchant", 5); r.GetGranted() != 2 || math.Abs(r.GetRetryAfterSeconds()-50) > 1 {
		t.Fatalf("after 250 s: granted %d retry %g, want 2 and ≈ 50 s", r.GetGranted(), r.GetRetryAfterSeconds())
	}
	// A very long idle time refills to the burst, not beyond; want above
	// the burst is capped.
	ageBucket(t, superURL, tid, "merchant", 1_000_000)
	if r := lease(t, internal, tid, "merchant", 50); r.GetGranted() != 5 {
		t.Fatalf("after a long idle: granted %d, want the burst 5", r.GetGranted())
	}

	// An agent's bucket is its own, with the agent limits; two agents do
	// not share one.
	k1, k2 := agentKey("https://agente-1.example/profile.json"), agentKey("https://agente-2.example/profile.json")
	if r := lease(t, internal, tid, k1, 10); r.GetGranted() != 3 || r.GetBurst() != 3 {
		t.Fatalf("agent 1: granted %d burst %d, want 3, 3", r.GetGranted(), r.GetBurst())
	}
	if r := lease(t, internal, tid, k1, 1); r.GetGranted() != 0 {
		t.Fatalf("agent 1 again: granted %d, want 0", r.GetGranted())
	}
	if r := lease(t, internal, tid, k2, 1); r.GetGranted() != 1 {
		t.Fatalf("agent 2: granted %d, want 1", r.GetGranted())
	}
}

// Buckets are per tenant: another merchant's empty bucket of the same key
// leaves this one full, and under RLS (as bcp_app) a tenant's scope sees
// and writes only its own buckets.
func TestLeaseRateTokensTenantIsolation(t *testing.T) {
	internal, operator, _, appURL := rateEnv(t)
	ctx := context.Background()
	var ids []string
	for _, host := range []string{"um.localhost", "dois.localhost"} {
		r, err := operator.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja " + host, Domains: []string{host}}))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Msg.GetTenant().GetId())
		if _, err := operator.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: host, Settings: &tenantsv1.Settings{
			RateLimits: &tenantsv1.RateLimits{MerchantRatePerSecond: 0.01, MerchantBurst: 4},
		}})); err != nil {
			t.Fatal(err)
		}
	}
	if r := lease(t, internal, ids[0], "merchant", 4); r.GetGranted() != 4 {
		t.Fatalf("tenant 1: granted %d, want 4", r.GetGranted())
	}
	if r := lease(t, internal, ids[0], "merchant", 1); r.GetGranted() != 0 {
		t.Fatalf("tenant 1 empty: granted %d", r.GetGranted())
	}
	if r := lease(t, internal, ids[1], "merchant", 4); r.GetGranted() != 4 {
		t.Fatalf("tenant 2 after tenant 1 emptied its bucket: granted %d, want 4", r.GetGranted())
	}

	conn, err := pgx.Connect(ctx, appURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(scope string) (n int) {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if scope != "" {
			if _, err := tx.Exec(ctx, `SELECT set_config('app.tenant_id', $1, true)`, scope); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tenants.rate_buckets`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(""); n != 0 {
		t.Fatalf("no tenant scope sees %d buckets, want 0", n)
	}
	if n := count(ids[1]); n != 1 {
		t.Fatalf("tenant 2's scope sees %d buckets, want its 1", n)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT set_config('app.tenant_id', $1, true)`, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tenants.rate_buckets (tenant_id, key, tokens, granted, updated_at) VALUES ($1, 'agent:`+
		hex.EncodeToString(make([]byte, 32))+`', 1, 0, now())`, ids[0]); err == nil {
		t.Fatal("tenant 2's scope wrote a bucket of tenant 1")
	}
}

// Who may lease, and what: the internal token with a tenant header only,
// a well-formed key, at least one token. Limits are validated by the
// tenants service; an absent rate_limits keeps the stored ones.
func TestLeaseRateTokensRefusalsAndSettings(t *testing.T) {
	internal, operator, _, _ := rateEnv(t)
	ctx := context.Background()
	r, err := operator.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja Regras", Domains: []string{"regras.localhost"}}))
	if err != nil {
		t.Fatal(err)
	}
	tctx := tenancy.With(ctx, uuid.MustParse(r.Msg.GetTenant().GetId()))
	leaseErr := func(c tenantsv1connect.TenantServiceClient, ctx context.Context, key string, want int64) error {
		_, err := c.LeaseRateTokens(ctx, connect.NewRequest(&tenantsv1.LeaseRateTokensRequest{Key: key, Want: want}))
		return err
	}
	wantCode(t, leaseErr(operator, tctx, "merchant", 1), apperr.KindPermissionDenied, "internal_only")
	wantCode(t, leaseErr(internal, tctx, "agent:https://x.example/p.json", 1), apperr.KindInvalidArgument, "invalid_bucket_key")
	wantCode(t, leaseErr(internal, tctx, "merchant", 0), apperr.KindInvalidArgument, "invalid_want")
	if err := leaseErr(internal, ctx, "merchant", 1); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("no tenant header: %v, want invalid_argument", err)
	}

	// Defaults until set.
	got, err := internal.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: r.Msg.GetTenant().GetId()}))
	if err != nil {
		t.Fatal(err)
	}
	d := tenants.DefaultRateLimits
	if l := got.Msg.GetSettings().GetRateLimits(); l.GetMerchantRatePerSecond() != d.GetMerchantRatePerSecond() || l.GetMerchantBurst() != d.GetMerchantBurst() ||
		l.GetAgentRatePerSecond() != d.GetAgentRatePerSecond() || l.GetAgentBurst() != d.GetAgentBurst() {
		t.Fatalf("default limits %v, want %v", l, d)
	}
	for _, tc := range []struct {
		l     *tenantsv1.RateLimits
		field string
	}{
		{&tenantsv1.RateLimits{MerchantRatePerSecond: -1}, "settings.rate_limits.merchant_rate_per_second"},
		{&tenantsv1.RateLimits{MerchantRatePerSecond: math.NaN()}, "settings.rate_limits.merchant_rate_per_second"},
		{&tenantsv1.RateLimits{AgentRatePerSecond: 0.0001}, "settings.rate_limits.agent_rate_per_second"},
		{&tenantsv1.RateLimits{AgentRatePerSecond: math.Inf(1)}, "settings.rate_limits.agent_rate_per_second"},
		{&tenantsv1.RateLimits{MerchantBurst: -1}, "settings.rate_limits.merchant_burst"},
		{&tenantsv1.RateLimits{AgentBurst: 1_000_001}, "settings.rate_limits.agent_burst"},
	} {
		_, err := operator.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: "regras.localhost", Settings: &tenantsv1.Settings{RateLimits: tc.l}}))
		if e := apperr.As(err); err == nil || e.Kind != apperr.KindInvalidArgument || e.Code != "invalid_rate_limit" || e.Field != tc.field {
			t.Fatalf("limits %v: %v, want invalid_rate_limit at %s", tc.l, err, tc.field)
		}
	}
	if _, err := operator.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: "regras.localhost", Settings: &tenantsv1.Settings{
		RateLimits: &tenantsv1.RateLimits{MerchantRatePerSecond: 7, MerchantBurst: 9}}})); err != nil {
		t.Fatal(err)
	}
	// Settings without rate_limits (a merchant file import) keep them; the
	// agent limits left at 0 are the defaults.
	kept, err := operator.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: "regras.localhost", Settings: &tenantsv1.Settings{CheckoutTtlSeconds: 3600}}))
	if err != nil {
		t.Fatal(err)
	}
	if l := kept.Msg.GetSettings().GetRateLimits(); l.GetMerchantRatePerSecond() != 7 || l.GetMerchantBurst() != 9 || l.GetAgentRatePerSecond() != d.GetAgentRatePerSecond() || l.GetAgentBurst() != d.GetAgentBurst() {
		t.Fatalf("limits after a settings write without them: %v", l)
	}
	if l := lease(t, internal, r.Msg.GetTenant().GetId(), "merchant", 100); l.GetGranted() != 9 || l.GetRatePerSecond() != 7 {
		t.Fatalf("lease with the stored limits: granted %d rate %g, want 9, 7", l.GetGranted(), l.GetRatePerSecond())
	}
}
