-- name: KeepIdempotencyKey :one
-- The key of a request whose answer no write of its own stored (a refusal
-- answered with the checkout as it is, an error_response, a completion
-- that ended without a write of its session), stored on its own
-- (keep_key, migration 00034).
SELECT checkout.keep_key(@tenant_id, @idem::jsonb, sqlc.narg(response)::bytea, true)::boolean AS kept;

-- name: GetIdempotencyKey :one
SELECT request_hash, state, response FROM checkout.idempotency_keys
WHERE tenant_id = @tenant_id AND scope = @scope AND key = @key;

-- name: ReleaseIdempotencyKey :execrows
-- A request that claimed its key and failed without an outcome gives the
-- key back, so the retry executes.
DELETE FROM checkout.idempotency_keys
WHERE tenant_id = @tenant_id AND scope = @scope AND key = @key AND state = 'in_flight' AND claim_token = @claim_token;

-- name: DeleteExpiredIdempotencyKeys :execrows
DELETE FROM checkout.idempotency_keys WHERE tenant_id = @tenant_id AND expires_at < now();
