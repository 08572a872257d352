package tenants

import (
	"context"
	"errors"
	"math"
	"regexp"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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

// validateRateLimits checks limits as sent on SetSettings (0: default).
func validateRateLimits(l *tenantsv1.RateLimits) error {
	for _, r := range []struct {
		field string
		v     float64
	}{{"merchant_rate_per_second", l.GetMerchantRatePerSecond()}, {"agent_rate_per_second", l.GetAgentRatePerSecond()}} {
		if r.v != 0 && !(r.v >= minRatePerSecond && r.v <= maxRatePerSecond) { // NaN fails too
			return apperr.Invalid("settings.rate_limits."+r.field, "invalid_rate_limit",
				"a rate must be between %g and %g requests per second (0: the default)", minRatePerSecond, float64(maxRatePerSecond))
		}
	}
	for _, b := range []struct {
		field string
		v     int64
	}{{"merchant_burst", l.GetMerchantBurst()}, {"agent_burst", l.GetAgentBurst()}} {
		if b.v < 0 || b.v > maxBurst {
			return apperr.Invalid("settings.rate_limits."+b.field, "invalid_rate_limit",
				"a burst must be between 1 and %d requests (0: the default)", maxBurst)
		}
	}
	return nil
}

// effectiveRateLimits fills the defaults into stored limits.
func effectiveRateLimits(row tenantsdb.GetRateLimitsRow) *tenantsv1.RateLimits {
	d := DefaultRateLimits
	out := &tenantsv1.RateLimits{
		MerchantRatePerSecond: row.MerchantRatePerSecond, MerchantBurst: row.MerchantBurst,
		AgentRatePerSecond: row.AgentRatePerSecond, AgentBurst: row.AgentBurst,
	}
	if out.MerchantRatePerSecond == 0 {
		out.MerchantRatePerSecond = d.MerchantRatePerSecond
	}
	if out.MerchantBurst == 0 {
		out.MerchantBurst = d.MerchantBurst
	}
	if out.AgentRatePerSecond == 0 {
		out.AgentRatePerSecond = d.AgentRatePerSecond
	}
	if out.AgentBurst == 0 {
		out.AgentBurst = d.AgentBurst
	}
	return out
}

// rateLimits reads the tenant's effective limits inside tx.
func rateLimits(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*tenantsv1.RateLimits, error) {
	row, err := tenantsdb.New(tx).GetRateLimits(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return effectiveRateLimits(tenantsdb.GetRateLimitsRow{}), nil
	}
	if err != nil {
		return nil, err
	}
	return effectiveRateLimits(row), nil
}

// LeaseRateTokens takes up to want tokens from one bucket. The limits come
// from the tenant's settings, read in the same transaction, rather than
// from the caller: every edge then applies the same limits at once after a
// change, and no edge with a stale or wrong view can refill the shared
// bucket at another rate.
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
	out := &tenantsv1.LeaseRateTokensResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		lim, err := rateLimits(ctx, tx, id)
		if err != nil {
			return err
		}
		out.RatePerSecond, out.Burst = lim.GetMerchantRatePerSecond(), lim.GetMerchantBurst()
		if key != merchantBucket {
			out.RatePerSecond, out.Burst = lim.GetAgentRatePerSecond(), lim.GetAgentBurst()
		}
		row, err := tenantsdb.New(tx).LeaseRateTokens(ctx, tenantsdb.LeaseRateTokensParams{
			TenantID: id, Key: key, Want: float64(min(want, out.Burst)), Rate: out.RatePerSecond, Burst: float64(out.Burst),
		})
		if err != nil {
			return err
		}
		out.Granted = row.Granted
		if row.Tokens < 1 {
			out.RetryAfterSeconds = (1 - row.Tokens) / out.RatePerSecond
		}
		return nil
	})
	if err != nil {
		return nil, err // an unknown tenant fails the foreign key: reference_missing
	}
	if math.IsNaN(out.RetryAfterSeconds) || math.IsInf(out.RetryAfterSeconds, 0) {
		out.RetryAfterSeconds = 1 / minRatePerSecond
	}
	return connect.NewResponse(out), nil
}
