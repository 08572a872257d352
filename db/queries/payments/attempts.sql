-- name: InsertAttempt :one
INSERT INTO payments.attempts (
  tenant_id, id, checkout_id, handler_id, handler_name, environment, instrument_id, instrument_type,
  amount, currency, status, failure_code, failure_message, display, action_url, expires_at,
  request_hash, base_url, txid, resolve_after, owner
) VALUES (
  @tenant_id, @id, @checkout_id, @handler_id, @handler_name, @environment, @instrument_id, @instrument_type,
  @amount, @currency, @status, @failure_code, @failure_message, @display, @action_url, sqlc.narg(expires_at),
  @request_hash, @base_url, sqlc.narg(txid), sqlc.narg(resolve_after), sqlc.narg(owner)
)
RETURNING *;

-- name: GetAttempt :one
SELECT * FROM payments.attempts WHERE tenant_id = @tenant_id AND id = @id;

-- name: LockAttempt :one
SELECT * FROM payments.attempts WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: LockAttemptByTxid :one
SELECT * FROM payments.attempts WHERE tenant_id = @tenant_id AND txid = @txid FOR UPDATE;

-- name: GetLiveAttemptForCheckout :one
SELECT * FROM payments.attempts
WHERE tenant_id = @tenant_id AND checkout_id = @checkout_id
  AND status IN ('pending', 'succeeded', 'requires_action', 'refunded', 'partially_refunded');

-- name: UpdateAttempt :one
-- Callers hold the row lock (LockAttempt) or pass the version they read:
-- a transition is a compare-and-swap on version. The start's work is
-- written: nobody owns the attempt any more (migration 00049).
UPDATE payments.attempts SET
  status = @status, failure_code = @failure_code, failure_message = @failure_message,
  display = @display, action_url = @action_url, refunded_amount = @refunded_amount,
  e2e_id = sqlc.narg(e2e_id), charge_id = sqlc.narg(charge_id),
  version = version + 1, updated_at = now(), owner = NULL
WHERE tenant_id = @tenant_id AND id = @id AND version = @version
RETURNING *;

-- name: CountAttempts :one
SELECT count(*) FROM payments.attempts WHERE tenant_id = @tenant_id;

-- name: ListDueResolves :many
-- Every tenant's attempts still pending (or waiting for 3-D Secure) past
-- their resolve_after (card: resolve from the processor; Pix: poll the
-- PSP, or expire), oldest first (the resolve sweep, in the
-- 'payments_sweep' scope).
-- A Pix attempt that ended otherwise than paid is taken once more, to
-- make sure its charge ended too.
SELECT tenant_id, id FROM payments.attempts
WHERE (status IN ('pending', 'requires_action') OR (txid IS NOT NULL AND status IN ('canceled', 'failed', 'expired')))
  AND resolve_after IS NOT NULL AND resolve_after <= @now::timestamptz
ORDER BY resolve_after
LIMIT @max_rows;

-- name: SetResolveAfter :execrows
-- After a sweep's resolve: NULL when it went through, a later time when
-- it failed or (a pending Pix) when to poll again.
UPDATE payments.attempts SET resolve_after = sqlc.narg(resolve_after)
WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListOwnedAttempts :many
-- Every tenant's attempts whose start a process incarnation is still
-- doing (the charge call, the Pix charge's creation; migration 00049).
-- The recovery (in the 'payments_sweep' scope) keeps those whose owner
-- is gone.
SELECT tenant_id, id, owner::text AS owner FROM payments.attempts
WHERE owner IS NOT NULL AND status = 'pending'
ORDER BY created_at
LIMIT @max_rows;

-- name: TakeOverAttempt :execrows
-- The recovery takes over the start of an incarnation that is gone.
UPDATE payments.attempts SET owner = @owner
WHERE tenant_id = @tenant_id AND id = @id AND owner = @was AND status = 'pending';
