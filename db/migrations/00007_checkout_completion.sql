-- +goose Up
-- Completion: the session remembers its one payment attempt and its order.
ALTER TABLE checkout.sessions
  ADD COLUMN payment_attempt_id text,
  ADD COLUMN order_id           text,
  ADD COLUMN order_webhook_url  text NOT NULL DEFAULT '',
  ADD COLUMN base_url           text NOT NULL DEFAULT '';

-- Idempotency keys of agent requests (complete, cancel, and create/update
-- when a key is sent). Scope = agent profile + operation, so keys of
-- different agents or operations never collide. The hash is SHA-256 of the
-- request; the response is kept for replays.
CREATE TABLE checkout.idempotency_keys (
  tenant_id    uuid NOT NULL,
  scope        text NOT NULL,
  key          text NOT NULL,
  request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
  state        text NOT NULL CHECK (state IN ('in_flight', 'done')),
  response     bytea,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, scope, key)
);
CREATE INDEX idempotency_keys_expiry ON checkout.idempotency_keys (tenant_id, expires_at);
ALTER TABLE checkout.idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE checkout.idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON checkout.idempotency_keys
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- +goose Down
DROP TABLE checkout.idempotency_keys;
ALTER TABLE checkout.sessions DROP COLUMN payment_attempt_id, DROP COLUMN order_id, DROP COLUMN order_webhook_url, DROP COLUMN base_url;
