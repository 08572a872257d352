-- +goose Up
-- Checkout sessions. The request column keeps the last accepted writable
-- payload (what the agent sent, normalised); state is the checkout as last
-- returned (without the ucp envelope). version is the optimistic lock:
-- updates never hold row locks across calls to other services.
CREATE TABLE checkout.sessions (
  tenant_id         uuid NOT NULL,
  id                text NOT NULL,
  status            text NOT NULL CHECK (status IN ('incomplete', 'requires_escalation', 'ready_for_complete', 'complete_in_progress', 'completed', 'canceled')),
  currency          text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  total             bigint NOT NULL,
  buyer_email       text NOT NULL DEFAULT '',
  agent_profile_url text NOT NULL,
  capabilities      text[] NOT NULL,
  request           jsonb NOT NULL,
  state             jsonb NOT NULL,
  version           integer NOT NULL DEFAULT 1,
  expires_at        timestamptz NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX sessions_by_status ON checkout.sessions (tenant_id, status, updated_at DESC);
CREATE INDEX sessions_open_expiry ON checkout.sessions (tenant_id, expires_at)
  WHERE status NOT IN ('completed', 'canceled');

ALTER TABLE checkout.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE checkout.sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON checkout.sessions
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- +goose Down
DROP TABLE checkout.sessions;
