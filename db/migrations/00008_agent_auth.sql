-- +goose Up
-- Agent authentication policy per merchant (issue 5). Columns on
-- tenants.tenants, so they travel with every Tenant the registry returns
-- (the edge's Host cache already holds it) and changes go through the
-- existing notify_change trigger.
ALTER TABLE tenants.tenants
  ADD COLUMN agent_auth_policy text NOT NULL DEFAULT 'either'
    CHECK (agent_auth_policy IN ('api_key', 'signature', 'either')),
  -- sign every tool response, not only complete_checkout's
  ADD COLUMN sign_all_responses boolean NOT NULL DEFAULT false;

-- Key selection at signing time and published-key listing scan a tenant's
-- live keys; there are a handful per tenant, the index keeps it cheap.
CREATE INDEX signing_keys_live ON tenants.signing_keys (tenant_id, sign_from) WHERE revoked_at IS NULL;

-- +goose Down
DROP INDEX tenants.signing_keys_live;
ALTER TABLE tenants.tenants DROP COLUMN sign_all_responses, DROP COLUMN agent_auth_policy;
