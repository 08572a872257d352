-- name: SetRateLimits :execrows
UPDATE tenants.settings SET
  merchant_rate_per_second = @merchant_rate_per_second,
  merchant_burst = @merchant_burst,
  agent_rate_per_second = @agent_rate_per_second,
  agent_burst = @agent_burst,
  updated_at = now()
WHERE tenant_id = @tenant_id;

-- LeaseRateTokens takes up to @want whole tokens from one bucket in one
-- atomic statement: it reads the bucket's limits from the merchant's
-- settings (0 or no row: the defaults given), refills by rate·elapsed
-- capped at burst, grants least(want, floor(available)) and keeps the
-- rest. A new bucket starts full. The clock is the database's and never
-- runs backwards for a row (greatest(updated_at, ...)): a statement that
-- waited for the row lock with an earlier timestamp refills nothing rather
-- than counting the same interval twice.
-- name: LeaseRateTokens :one
WITH lim AS (
  SELECT
    coalesce(nullif(CASE WHEN sqlc.arg(is_merchant)::bool THEN s.merchant_rate_per_second ELSE s.agent_rate_per_second END, 0),
             sqlc.arg(default_rate)::float8) AS rate,
    coalesce(nullif(CASE WHEN sqlc.arg(is_merchant)::bool THEN s.merchant_burst ELSE s.agent_burst END, 0),
             sqlc.arg(default_burst)::bigint)::float8 AS burst
  FROM (VALUES (1)) AS one (x) LEFT JOIN tenants.settings s ON s.tenant_id = @tenant_id
)
INSERT INTO tenants.rate_buckets AS b (tenant_id, key, tokens, granted, rate, burst, updated_at)
SELECT @tenant_id, @key,
       lim.burst - least(sqlc.arg(want)::float8, floor(lim.burst)),
       least(sqlc.arg(want)::float8, floor(lim.burst))::bigint,
       lim.rate, lim.burst, statement_timestamp()
FROM lim
ON CONFLICT (tenant_id, key) DO UPDATE SET
  granted = least(sqlc.arg(want)::float8, floor(least(EXCLUDED.burst,
              b.tokens + EXCLUDED.rate * extract(epoch FROM greatest(b.updated_at, statement_timestamp()) - b.updated_at)::float8)))::bigint,
  tokens = least(EXCLUDED.burst,
              b.tokens + EXCLUDED.rate * extract(epoch FROM greatest(b.updated_at, statement_timestamp()) - b.updated_at)::float8)
           - least(sqlc.arg(want)::float8, floor(least(EXCLUDED.burst,
              b.tokens + EXCLUDED.rate * extract(epoch FROM greatest(b.updated_at, statement_timestamp()) - b.updated_at)::float8))),
  rate = EXCLUDED.rate,
  burst = EXCLUDED.burst,
  updated_at = greatest(b.updated_at, statement_timestamp())
RETURNING granted, tokens, rate, burst;
