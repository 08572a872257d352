-- name: KeepIdempotencyKey :one
-- The key of a request whose answer no write of its own stored (a refusal
-- answered with the checkout as it is, an error_response, a completion
-- that ended without a write of its session), stored on its own
-- (keep_key, migration 00034).
SELECT checkout.keep_key(@tenant_id, @idem::jsonb, sqlc.narg(response)::bytea, true)::boolean AS kept;

-- name: GetIdempotencyKey :one
-- An answer kept by reference (state 'answered', answer_checkout: a
-- completed session, migration 00053) is that session's state and status.
SELECT k.request_hash, k.state, k.response, k.answer_checkout, s.state AS answer_state, s.status AS answer_status
FROM checkout.idempotency_keys k
LEFT JOIN checkout.sessions s ON s.tenant_id = k.tenant_id AND s.id = k.answer_checkout
WHERE k.tenant_id = @tenant_id AND k.scope = @scope AND k.key = @key;

-- name: ReleaseIdempotencyKey :execrows
-- A request that claimed its key and failed without an outcome gives the
-- key back, so the retry executes.
DELETE FROM checkout.idempotency_keys
WHERE tenant_id = @tenant_id AND scope = @scope AND key = @key AND state = 'in_flight' AND claim_token = @claim_token;

-- name: DeleteExpiredIdempotencyKeys :execrows
DELETE FROM checkout.idempotency_keys WHERE tenant_id = @tenant_id AND expires_at < now();
