-- name: ClaimIdempotencyKey :one
-- Inserts an in-flight claim, or returns the existing row untouched —
-- except a claim of the same request still in flight since before
-- @stale_before: the process that held it died mid-request (a crash, or
-- the database went away before it could release the key), so this
-- request takes it over (created_at becomes the new claim's time).
WITH ins AS (
  INSERT INTO checkout.idempotency_keys AS k (tenant_id, scope, key, request_hash, state, created_at, expires_at)
  VALUES (@tenant_id, @scope, @key, @request_hash, 'in_flight', @claimed_at, @expires_at)
  ON CONFLICT (tenant_id, scope, key) DO UPDATE SET created_at = EXCLUDED.created_at
    WHERE k.state = 'in_flight' AND k.created_at < @stale_before AND k.request_hash = EXCLUDED.request_hash
  RETURNING k.request_hash, k.state, k.response, true AS claimed
)
SELECT request_hash, state, response, claimed FROM ins
UNION ALL
SELECT k.request_hash, k.state, k.response, false AS claimed FROM checkout.idempotency_keys k
WHERE k.tenant_id = @tenant_id AND k.scope = @scope AND k.key = @key AND NOT EXISTS (SELECT 1 FROM ins)
LIMIT 1;

-- name: GetIdempotencyKey :one
SELECT request_hash, state, response FROM checkout.idempotency_keys
WHERE tenant_id = @tenant_id AND scope = @scope AND key = @key;

-- name: FinishIdempotencyKey :execrows
UPDATE checkout.idempotency_keys SET state = 'done', response = @response
WHERE tenant_id = @tenant_id AND scope = @scope AND key = @key AND state = 'in_flight';

-- name: ReleaseIdempotencyKey :execrows
-- A request that failed without an outcome gives its key back, so the
-- retry executes.
DELETE FROM checkout.idempotency_keys
WHERE tenant_id = @tenant_id AND scope = @scope AND key = @key AND state = 'in_flight';

-- name: DeleteExpiredIdempotencyKeys :execrows
DELETE FROM checkout.idempotency_keys WHERE tenant_id = @tenant_id AND expires_at < now();
