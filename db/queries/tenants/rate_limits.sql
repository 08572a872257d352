-- name: GetRateLimits :one
SELECT merchant_rate_per_second, merchant_burst, agent_rate_per_second, agent_burst
FROM tenants.settings WHERE tenant_id = @tenant_id;

-- name: SetRateLimits :execrows
UPDATE tenants.settings SET
  merchant_rate_per_second = @merchant_rate_per_second,
  merchant_burst = @merchant_burst,
  agent_rate_per_second = @agent_rate_per_second,
  agent_burst = @agent_burst,
  updated_at = now()
WHERE tenant_id = @tenant_id;

-- LeaseRateTokens takes up to @want whole tokens from one bucket in one
-- atomic statement: refill by rate·elapsed (capped at burst), grant
-- least(want, floor(available)), keep the rest. A new bucket starts full.
-- The clock is the database's and never runs backwards for a row
-- (greatest(updated_at, ...)): a statement that waited for the row lock
-- with an earlier timestamp refills nothing rather than counting the same
-- interval twice.
-- name: LeaseRateTokens :one
INSERT INTO tenants.rate_buckets AS b (tenant_id, key, tokens, granted, updated_at)
VALUES (@tenant_id, @key,
        sqlc.arg(burst)::float8 - least(sqlc.arg(want)::float8, floor(sqlc.arg(burst)::float8)),
        least(sqlc.arg(want)::float8, floor(sqlc.arg(burst)::float8))::bigint,
        statement_timestamp())
ON CONFLICT (tenant_id, key) DO UPDATE SET
  granted = least(sqlc.arg(want)::float8, floor(least(sqlc.arg(burst)::float8,
              b.tokens + sqlc.arg(rate)::float8 * extract(epoch FROM greatest(b.updated_at, statement_timestamp()) - b.updated_at)::float8)))::bigint,
  tokens = least(sqlc.arg(burst)::float8,
              b.tokens + sqlc.arg(rate)::float8 * extract(epoch FROM greatest(b.updated_at, statement_timestamp()) - b.updated_at)::float8)
           - least(sqlc.arg(want)::float8, floor(least(sqlc.arg(burst)::float8,
              b.tokens + sqlc.arg(rate)::float8 * extract(epoch FROM greatest(b.updated_at, statement_timestamp()) - b.updated_at)::float8))),
  updated_at = greatest(b.updated_at, statement_timestamp())
RETURNING granted, tokens;
