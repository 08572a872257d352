-- name: ClaimIdempotencyKey :one
-- Inserts an in-flight claim, or returns the existing row untouched.
WITH ins AS (
  INSERT INTO checkout.idempotency_keys (tenant_id, scope, key, request_hash, state, expires_at)
  VALUES (@tenant_id, @scope, @key, @request_hash, 'in_flight', @expires_at)
  ON CONFLICT (tenant_id, scope, key) DO NOTHING
  RETURNING request_hash, state, response, true AS claimed
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
