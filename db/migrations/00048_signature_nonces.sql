-- +goose Up
-- Replay-proof agent signatures (issue 32). RFC 9421 §3.2.1 leaves it to
-- the verifier to bound created and to refuse a nonce it has seen; the
-- edge does both, and a merchant may require created (and a nonce) on
-- every signature it verifies.
--
-- signature_nonces is the replay cache, shared by every edge process (the
-- edges hold no database; they claim a nonce through the tenants service,
-- ClaimSignatureNonce). key is the SHA-256 of the signer (agent profile
-- URL and keyid) and the nonce, so a row is small whatever the agent
-- sent. A nonce is remembered for as long as its signature could still be
-- accepted (created + the edge's window + clock skew, or expires + skew
-- when sooner): after expires_at a replay is refused by the window
-- itself, so the row can go. A claim is one INSERT … ON CONFLICT: a live
-- row means "already used"; an expired one is taken over.
CREATE TABLE tenants.signature_nonces (
  tenant_id  uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  key        bytea NOT NULL CHECK (octet_length(key) = 32),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);

-- The sweep finds expired rows of every tenant by expiry.
CREATE INDEX signature_nonces_expiry ON tenants.signature_nonces (expires_at);

ALTER TABLE tenants.signature_nonces ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants.signature_nonces FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants.signature_nonces
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);
-- The sweep (tenants service, 'signature_nonce_sweep' scope) sees and
-- deletes expired rows of every tenant, and nothing else: a live nonce
-- can never be swept away.
CREATE POLICY signature_nonce_sweep_read ON tenants.signature_nonces FOR SELECT
  USING (current_setting('app.scope', true) = 'signature_nonce_sweep' AND expires_at < now());
CREATE POLICY signature_nonce_sweep_delete ON tenants.signature_nonces FOR DELETE
  USING (current_setting('app.scope', true) = 'signature_nonce_sweep' AND expires_at < now());

-- The merchant's requirements, next to its agent auth policy (registry
-- data: they travel with every Tenant and changes go through the
-- notify_change trigger). A nonce is only replay-proof together with
-- created, so requiring one requires the other.
ALTER TABLE tenants.tenants
  ADD COLUMN require_signature_created boolean NOT NULL DEFAULT false,
  ADD COLUMN require_signature_nonce   boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT require_signature_nonce_with_created CHECK (NOT require_signature_nonce OR require_signature_created);

-- +goose Down
ALTER TABLE tenants.tenants
  DROP CONSTRAINT require_signature_nonce_with_created,
  DROP COLUMN require_signature_nonce,
  DROP COLUMN require_signature_created;
DROP TABLE tenants.signature_nonces;
