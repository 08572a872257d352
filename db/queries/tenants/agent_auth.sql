-- Agent authentication (issue 5): policy, API key lookup, signing keys.

-- name: SetAgentAuthPolicy :one
UPDATE tenants.tenants SET
  agent_auth_policy = coalesce(sqlc.narg(agent_auth_policy)::text, agent_auth_policy),
  sign_all_responses = coalesce(sqlc.narg(sign_all_responses)::boolean, sign_all_responses),
  -- A nonce needs created: requiring a nonce requires created, and no
  -- longer requiring created no longer requires a nonce (the service
  -- refuses asking for both at once).
  require_signature_created = coalesce(sqlc.narg(require_signature_created)::boolean, require_signature_created)
    OR coalesce(sqlc.narg(require_signature_nonce)::boolean, false),
  require_signature_nonce = coalesce(sqlc.narg(require_signature_nonce)::boolean,
    require_signature_nonce AND coalesce(sqlc.narg(require_signature_created)::boolean, true)),
  updated_at = now()
WHERE tenant_id = @tenant_id
RETURNING *;

-- name: AuthenticateAPIKey :one
-- Looks in one tenant only (RLS scopes it too); revoked keys do not match.
SELECT id, agent_profile_url FROM tenants.api_keys
WHERE tenant_id = @tenant_id AND key_hash = @key_hash AND revoked_at IS NULL;

-- name: LockTenantSigningKeys :one
-- Serialises rotations and revocations of one tenant's keys.
SELECT tenant_id FROM tenants.tenants WHERE tenant_id = @tenant_id FOR UPDATE;

-- name: ListSigningKeys :many
-- Every key of the tenant, oldest first, without the sealed private half.
-- db_now is the database clock every key time is compared with.
SELECT kid, alg, public_jwk, created_at, sign_from, retire_at, revoked_at, now()::timestamptz AS db_now
FROM tenants.signing_keys
WHERE tenant_id = @tenant_id
ORDER BY created_at, kid;

-- name: ListLiveSigningKeys :many
-- Keys that may sign (not revoked, not retired), with their sealed private
-- halves; the service picks the current one (pickCurrent).
SELECT kid, alg, sealed_private, created_at, sign_from, retire_at, now()::timestamptz AS db_now
FROM tenants.signing_keys
WHERE tenant_id = @tenant_id AND revoked_at IS NULL AND (retire_at IS NULL OR retire_at > now())
ORDER BY created_at, kid;

-- name: InsertRotatedSigningKey :one
-- sign_from is computed by the database clock, like every other key time.
INSERT INTO tenants.signing_keys (tenant_id, kid, alg, public_jwk, sealed_private, sign_from)
VALUES (@tenant_id, @kid, @alg, @public_jwk, @sealed_private, now() + make_interval(secs => @delay_seconds::double precision))
RETURNING kid, alg, public_jwk, created_at, sign_from, retire_at, revoked_at;

-- name: RetireSupersededSigningKeys :execrows
-- Keys superseded by a rotation stay published until retire_at; keys that
-- already have an earlier retirement keep it.
UPDATE tenants.signing_keys SET retire_at = @retire_at
WHERE tenant_id = @tenant_id AND kid <> @new_kid AND revoked_at IS NULL
  AND (retire_at IS NULL OR retire_at > @retire_at);

-- name: RevokeSigningKey :one
UPDATE tenants.signing_keys SET revoked_at = coalesce(revoked_at, now())
WHERE tenant_id = @tenant_id AND kid = @kid
RETURNING kid, alg, public_jwk, created_at, sign_from, retire_at, revoked_at;

-- name: CountOtherUsableSigningKeys :one
-- Live keys other than kid: what would be left to sign with.
SELECT count(*) FROM tenants.signing_keys
WHERE tenant_id = @tenant_id AND kid <> @kid AND revoked_at IS NULL AND (retire_at IS NULL OR retire_at > now());
