-- name: SetSessionPayment :one
-- Optimistic: the one transition that starts a payment attempt; the
-- settle sweep settles it at settle_after if nothing else has. The
-- completion's idempotency key, if any, is claimed (in flight) by the same
-- statement (keep_key). A session this process remembers rather than read
-- is claimed only if its row's xmin is still seen (seen.go).
WITH w AS (
  UPDATE checkout.sessions SET
    status = @status, payment_attempt_id = @payment_attempt_id, order_webhook_url = @order_webhook_url,
    base_url = @base_url, state = @state, settle_after = @settle_after, ap2_mandate = sqlc.narg(ap2_mandate),
    automatic_discount_ids = @automatic_discount_ids,
    version = version + 1, updated_at = now()
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version
    AND (sqlc.narg(seen)::bigint IS NULL OR xmin::text::bigint = sqlc.narg(seen)::bigint)
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, NULL::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: FinishSession :one
-- Optimistic: settle a session (completed with its order, or reopened);
-- with the completion's idempotency key, its answer is stored by the same
-- statement (keep_key).
WITH w AS (
  UPDATE checkout.sessions SET
    status = @status, payment_attempt_id = sqlc.narg(payment_attempt_id), order_id = sqlc.narg(order_id),
    state = @state, version = version + 1, updated_at = now()
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: ListDueSettles :many
-- Every tenant's sessions with money-path work due at settle_after,
-- oldest first (the settle sweep, in the 'checkout_sweep' scope):
-- completions still in progress, and closed checkouts whose stock release
-- has not confirmed yet.
SELECT tenant_id, id, status, payment_attempt_id FROM checkout.sessions
WHERE status IN ('complete_in_progress', 'canceled') AND settle_after IS NOT NULL AND settle_after <= @now::timestamptz
ORDER BY settle_after
LIMIT @max_rows;

-- name: CloseSession :one
-- Optimistic: a checkout ends without an order (canceled or expired).
-- settle_after is when the settle sweep makes sure its stock went back
-- (cleared by ClearSettleAfter once the release confirmed). A cancel's
-- idempotency key, if any, is kept by the same statement (keep_key).
WITH w AS (
  UPDATE checkout.sessions SET
    status = 'canceled', state = @state, settle_after = sqlc.narg(settle_after), version = version + 1, updated_at = now()
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: ClearSettleAfter :execrows
-- A closed checkout's stock release confirmed: nothing is due any more.
UPDATE checkout.sessions SET settle_after = NULL
WHERE tenant_id = @tenant_id AND id = @id AND status = 'canceled';

-- name: SetSettleAfter :execrows
-- After a sweep's settle: NULL when the session left complete_in_progress,
-- a later time when it is still in progress or the settle failed. Only
-- while the session is still on that attempt.
UPDATE checkout.sessions SET settle_after = sqlc.narg(settle_after)
WHERE tenant_id = @tenant_id AND id = @id AND payment_attempt_id = @payment_attempt_id;
