package tenants

import (
	"context"
	"math"
	"regexp"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// Rate limits (issue 21). The defaults are sized for the benchmark with
// room to spare: bcpbench runs one agent profile against 20 merchants and
// its create_checkout-only phase peaked at ≈ 1 400 calls/s on the 2-core
// reference machine, ≈ 70/s per merchant (and per agent, one profile);
// whole purchases (≈ 150/s × 5 calls) are ≈ 40/s per merchant. A merchant
// gets 200/s with bursts of 400, an agent 100/s with bursts of 200: an
// abusive agent cannot take more than half of a merchant's budget.
var DefaultRateLimits = &tenantsv1.RateLimits{
	MerchantRatePerSecond: 200, MerchantBurst: 400,
	AgentRatePerSecond: 100, AgentBurst: 200,
}

// Bounds of a merchant's limits. The lowest rate is one request per
// 1 000 s (a merchant can all but close the door); the highest are far
// above what one platform serves.
const (
	minRatePerSecond = 0.001
	maxRatePerSecond = 100_000
	maxBurst         = 1_000_000
)

// Rate bucket keys: the merchant's, or an agent's (hex SHA-256 of its
// profile URL; the edge hashes).
const merchantBucket = "merchant"

var agentBucket = regexp.MustCompile(`^agent:[0-9a-f]{64}$`)

// rateLimitViolations checks limits as sent on SetSettings (0: default).
func rateLimitViolations(l *tenantsv1.RateLimits) apperr.Violations {
	var v apperr.Violations
	for _, r := range []struct {
		field string
		v     float64
	}{{"merchant_rate_per_second", l.GetMerchantRatePerSecond()}, {"agent_rate_per_second", l.GetAgentRatePerSecond()}} {
		if r.v != 0 && !(r.v >= minRatePerSecond && r.v <= maxRatePerSecond) { // NaN fails too
			v.Add(apperr.Invalid("settings.rate_limits."+r.field, "invalid_rate_limit",
				"a rate must be between %g and %g requests per second (0: the default)", minRatePerSecond, float64(maxRatePerSecond)))
		}
	}
	for _, b := range []struct {
		field string
		v     int64
	}{{"merchant_burst", l.GetMerchantBurst()}, {"agent_burst", l.GetAgentBurst()}} {
		if b.v < 0 || b.v > maxBurst {
			v.Add(apperr.Invalid("settings.rate_limits."+b.field, "invalid_rate_limit",
				"a burst must be between 1 and %d requests (0: the default)", maxBurst))
		}
	}
	return v
}

// effectiveRateLimits fills the defaults into stored limits (0: default).
func effectiveRateLimits(merchantRate float64, merchantBurst int64, agentRate float64, agentBurst int64) *tenantsv1.RateLimits {
	d := DefaultRateLimits
	orDefault := func(v, def float64) float64 {
		if v == 0 {
			return def
		}
		return v
	}
	orInt := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	return &tenantsv1.RateLimits{
		MerchantRatePerSecond: orDefault(merchantRate, d.MerchantRatePerSecond), MerchantBurst: orInt(merchantBurst, d.MerchantBurst),
		AgentRatePerSecond: orDefault(agentRate, d.AgentRatePerSecond), AgentBurst: orInt(agentBurst, d.AgentBurst),
	}
}

// LeaseRateTokens takes up to want tokens from one bucket. The limits come
// from the tenant's settings, read by the same statement, rather than from
// the caller: every edge then applies the same limits at once after a
// change, and no edge with a stale or wrong view can refill the shared
// bucket at another rate. One statement in one round trip, committed
// without waiting for the WAL flush (pgstore.SingleUnsynced): the edges
// lease often (≈ 10 times a second per busy bucket and edge), and a crash
// losing the last updates only lets a few requests more through.
func (s *Service) LeaseRateTokens(ctx context.Context, req *connect.Request[tenantsv1.LeaseRateTokensRequest]) (*connect.Response[tenantsv1.LeaseRateTokensResponse], error) {
	if svcauth.Principal(ctx) != "service" {
		return nil, apperr.New(apperr.KindPermissionDenied, "internal_only", "rate tokens are leased by the edges only")
	}
	id, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	key := req.Msg.GetKey()
	if key != merchantBucket && !agentBucket.MatchString(key) {
		return nil, apperr.Invalid("key", "invalid_bucket_key", `key must be "merchant" or "agent:" + 64 lowercase hex digits`)
	}
	want := req.Msg.GetWant()
	if want < 1 || want > maxBurst {
		return nil, apperr.Invalid("want", "invalid_want", "want must be between 1 and %d", maxBurst)
	}
	def := DefaultRateLimits
	p := tenantsdb.LeaseRateTokensParams{TenantID: id, Key: key, Want: float64(want), IsMerchant: key == merchantBucket,
		DefaultRate: def.GetMerchantRatePerSecond(), DefaultBurst: def.GetMerchantBurst()}
	if !p.IsMerchant {
		p.DefaultRate, p.DefaultBurst = def.GetAgentRatePerSecond(), def.GetAgentBurst()
	}
	var row tenantsdb.LeaseRateTokensRow
	err = pgstore.SingleUnsynced(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		var err error
		row, err = tenantsdb.New(q).LeaseRateTokens(ctx, p)
		return err
	})
	if err != nil {
		return nil, err // an unknown tenant fails the foreign key: reference_missing
	}
	out := &tenantsv1.LeaseRateTokensResponse{Granted: row.Granted, RatePerSecond: row.Rate, Burst: int64(row.Burst)}
	if row.Tokens < 1 {
		out.RetryAfterSeconds = (1 - row.Tokens) / row.Rate
	}
	if math.IsNaN(out.RetryAfterSeconds) || math.IsInf(out.RetryAfterSeconds, 0) {
		out.RetryAfterSeconds = 1 / minRatePerSecond
	}
	return connect.NewResponse(out), nil
}
