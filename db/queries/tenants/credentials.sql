-- name: InsertAPIKey :one
INSERT INTO tenants.api_keys (tenant_id, id, key_hash, display_prefix, agent_profile_url, label)
VALUES (@tenant_id, @id, @key_hash, @display_prefix, @agent_profile_url, @label)
RETURNING *;

-- name: RevokeAPIKey :one
UPDATE tenants.api_keys SET revoked_at = coalesce(revoked_at, now())
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: ListAPIKeys :many
SELECT * FROM tenants.api_keys WHERE tenant_id = @tenant_id ORDER BY created_at, id;

-- name: InsertSigningKey :one
INSERT INTO tenants.signing_keys (tenant_id, kid, alg, public_jwk, sealed_private, sign_from)
VALUES (@tenant_id, @kid, @alg, @public_jwk, @sealed_private, @sign_from)
RETURNING *;

-- name: ListPublishedSigningKeys :many
-- Keys to publish: not revoked and not past their retirement.
SELECT * FROM tenants.signing_keys
WHERE tenant_id = @tenant_id AND revoked_at IS NULL AND (retire_at IS NULL OR retire_at > now())
ORDER BY created_at, kid;

-- name: UpsertPaymentHandler :one
-- Secrets sent (sealed_secrets and connection not null) replace the stored
-- ones; none sent keeps them.
INSERT INTO tenants.payment_handlers (tenant_id, id, name, version, spec, schema_url, available_instruments, config, sealed_secrets, connection, environment, position)
VALUES (@tenant_id, @id, @name, @version, @spec, @schema_url, @available_instruments, @config, @sealed_secrets, coalesce(sqlc.narg(connection)::jsonb, '{}'), @environment, @position)
ON CONFLICT (tenant_id, id) DO UPDATE SET
  name = EXCLUDED.name,
  version = EXCLUDED.version,
  spec = EXCLUDED.spec,
  schema_url = EXCLUDED.schema_url,
  available_instruments = EXCLUDED.available_instruments,
  config = EXCLUDED.config,
  sealed_secrets = coalesce(EXCLUDED.sealed_secrets, tenants.payment_handlers.sealed_secrets),
  connection = coalesce(sqlc.narg(connection)::jsonb, tenants.payment_handlers.connection),
  environment = EXCLUDED.environment,
  position = EXCLUDED.position,
  updated_at = now()
RETURNING *;

-- name: DeletePaymentHandler :execrows
DELETE FROM tenants.payment_handlers WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListPaymentHandlerSecrets :many
SELECT id, sealed_secrets FROM tenants.payment_handlers WHERE tenant_id = @tenant_id AND sealed_secrets IS NOT NULL ORDER BY id;

-- name: ListPaymentHandlers :many
SELECT * FROM tenants.payment_handlers WHERE tenant_id = @tenant_id ORDER BY position, id;
