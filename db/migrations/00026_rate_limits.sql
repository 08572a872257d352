-- +goose Up
-- Agent request rate limits (issue 21): token buckets per merchant and per
-- agent of a merchant, shared by every edge process. The edges hold no
-- database, so each bucket is one row here and every token an edge hands
-- out was leased from it (tenants LeaseRateTokens): across any number of
-- edges, what is granted over a window t stays within burst + rate·t.
--
-- key: 'merchant', or 'agent:' + hex SHA-256 of the agent profile URL (a
-- URL can be kilobytes; the hash bounds the key). tokens are fractional:
-- refill is rate·elapsed. granted is what the last lease took, so the one
-- upsert statement can return it (RETURNING sees only the new row); rate
-- and burst are the limits of the last lease (from the merchant's
-- settings, read by the same statement).
--
-- No change-notification trigger: buckets change on nearly every lease and
-- are not registry data.
CREATE TABLE tenants.rate_buckets (
  tenant_id  uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  key        text NOT NULL CHECK (key = 'merchant' OR key ~ '^agent:[0-9a-f]{64}$'),
  tokens     double precision NOT NULL CHECK (tokens >= 0),
  granted    bigint NOT NULL CHECK (granted >= 0),
  rate       double precision NOT NULL CHECK (rate > 0),
  burst      double precision NOT NULL CHECK (burst >= 1),
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);

-- Leases always run in their tenant's scope: unlike the registry tables
-- there is no registry-scope clause (nothing reads buckets across tenants).
ALTER TABLE tenants.rate_buckets ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants.rate_buckets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants.rate_buckets
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- The merchant's limits, in its settings row. 0 means the platform default
-- (tenants.DefaultRateLimits), so defaults can change without rewriting rows.
ALTER TABLE tenants.settings
  ADD COLUMN merchant_rate_per_second double precision NOT NULL DEFAULT 0 CHECK (merchant_rate_per_second >= 0),
  ADD COLUMN merchant_burst           bigint NOT NULL DEFAULT 0 CHECK (merchant_burst >= 0),
  ADD COLUMN agent_rate_per_second    double precision NOT NULL DEFAULT 0 CHECK (agent_rate_per_second >= 0),
  ADD COLUMN agent_burst              bigint NOT NULL DEFAULT 0 CHECK (agent_burst >= 0);

-- +goose Down
ALTER TABLE tenants.settings
  DROP COLUMN merchant_rate_per_second,
  DROP COLUMN merchant_burst,
  DROP COLUMN agent_rate_per_second,
  DROP COLUMN agent_burst;
DROP TABLE tenants.rate_buckets;
