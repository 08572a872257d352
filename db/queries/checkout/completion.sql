-- name: SetSessionPayment :one
-- Optimistic: the one transition that starts a payment attempt; the
-- settle sweep settles it at settle_after if nothing else has. The
-- completion's idempotency key, if any, is claimed (in flight) by the same
-- statement (keep_key). A session this process remembers rather than read
-- is claimed only if its row's xmin is still seen (seen.go). settle_owner
-- is the process incarnation doing the completion and complete_key its
-- key as keep_key reads it (held): if the process dies, whoever settles
-- the session answers the key (migration 00049).
WITH w AS (
  UPDATE checkout.sessions SET
    status = @status, payment_attempt_id = @payment_attempt_id, order_webhook_url = @order_webhook_url,
    base_url = @base_url, state = @state, settle_after = @settle_after, ap2_mandate = sqlc.narg(ap2_mandate),
    automatic_discount_ids = @automatic_discount_ids,
    settle_owner = sqlc.narg(settle_owner), complete_key = sqlc.narg(complete_key),
    version = version + 1, updated_at = now()
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version
    AND (sqlc.narg(seen)::bigint IS NULL OR xmin::text::bigint = sqlc.narg(seen)::bigint)
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, NULL::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: FinishSession :one
-- Optimistic: settle a session (completed with its order, or reopened);
-- with the completion's idempotency key, its answer is stored by the same
-- statement (keep_key). The settle is written: nobody owns the session
-- any more, and a session that left complete_in_progress forgets its
-- completion's key (answered by now, or never to be). A completed
-- session never changes again: its key's answer is the session itself
-- (answer_checkout, migration 00053), not a copy of its state.
WITH w AS (
  UPDATE checkout.sessions SET
    status = @status, payment_attempt_id = sqlc.narg(payment_attempt_id), order_id = sqlc.narg(order_id),
    state = @state, version = version + 1, updated_at = now(), settle_owner = NULL,
    complete_key = CASE WHEN @status::text = 'complete_in_progress' THEN complete_key END
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id,
  CASE WHEN @status::text = 'completed' THEN sqlc.narg(idem)::jsonb || jsonb_build_object('answer', @id::text) ELSE sqlc.narg(idem)::jsonb END,
  sqlc.narg(idem_response)::bytea, count(*) > 0)::boolean AS kept FROM w;

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
-- settle_owner is the process incarnation that releases the stock
-- (migration 00049).
WITH w AS (
  UPDATE checkout.sessions SET
    status = 'canceled', state = @state, settle_after = sqlc.narg(settle_after), version = version + 1, updated_at = now(),
    settle_owner = sqlc.narg(settle_owner), complete_key = NULL
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: ClearSettleAfter :execrows
-- A closed checkout's stock release confirmed: nothing is due any more.
UPDATE checkout.sessions SET settle_after = NULL, settle_owner = NULL
WHERE tenant_id = @tenant_id AND id = @id AND status = 'canceled';

-- name: SetSettleAfter :execrows
-- After a sweep's settle: NULL when the session left complete_in_progress,
-- a later time when it is still in progress or the settle failed. Only
-- while the session is still on that attempt. The sweeps' clock takes it
-- from here: nobody owns it any more.
UPDATE checkout.sessions SET settle_after = sqlc.narg(settle_after), settle_owner = NULL
WHERE tenant_id = @tenant_id AND id = @id AND payment_attempt_id = @payment_attempt_id;

-- name: ListOwnedSessions :many
-- Every tenant's sessions whose money-path work a process incarnation
-- owns (migration 00049): completions claimed and not settled yet,
-- closed checkouts whose stock release has not confirmed. The recovery
-- (in the 'checkout_sweep' scope) keeps those whose owner is gone.
SELECT tenant_id, id, status, payment_attempt_id, settle_owner::text AS owner FROM checkout.sessions
WHERE settle_owner IS NOT NULL AND status IN ('complete_in_progress', 'canceled')
ORDER BY updated_at
LIMIT @max_rows;

-- name: TakeOverSession :execrows
-- The recovery takes over the work of an incarnation that is gone: one
-- process finishes it, and if that one dies too the next takes it over.
UPDATE checkout.sessions SET settle_owner = @owner
WHERE tenant_id = @tenant_id AND id = @id AND settle_owner = @was AND status IN ('complete_in_progress', 'canceled');
