-- name: InsertRefund :one
INSERT INTO payments.refunds (tenant_id, id, attempt_id, kind, handler_id, e2e_id, charge_id, psp_refund_id, amount, reason)
VALUES (@tenant_id, @id, sqlc.narg(attempt_id), @kind, @handler_id, sqlc.narg(e2e_id), sqlc.narg(charge_id), @psp_refund_id, @amount, @reason)
RETURNING *;

-- name: InsertRefundIfAbsent :execrows
-- An automatic refund decided more than once (a stray charge seen by two
-- answers) is recorded once.
INSERT INTO payments.refunds (tenant_id, id, attempt_id, kind, handler_id, e2e_id, charge_id, psp_refund_id, amount, reason)
VALUES (@tenant_id, @id, sqlc.narg(attempt_id), @kind, @handler_id, sqlc.narg(e2e_id), sqlc.narg(charge_id), @psp_refund_id, @amount, @reason)
ON CONFLICT DO NOTHING;

-- name: GetRefund :one
SELECT * FROM payments.refunds WHERE tenant_id = @tenant_id AND id = @id;

-- name: LockRefund :one
SELECT * FROM payments.refunds WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: SumRequestedRefunds :one
-- What is already promised back of the attempt's own money (its Pix
-- @own_e2e_id or card charge @own_charge_id): pending and succeeded
-- refunds, the merchant's and automatic ones (a checkout that ended
-- without an order). Automatic refunds of other money that reached the
-- attempt (a second Pix, a stray charge) are not its own.
SELECT coalesce(sum(amount), 0)::bigint FROM payments.refunds
WHERE tenant_id = @tenant_id AND attempt_id = @attempt_id AND status <> 'failed'
  AND (kind = 'requested' OR e2e_id = sqlc.narg(own_e2e_id)::text OR charge_id = sqlc.narg(own_charge_id)::text);

-- name: SumSucceededRefunds :one
-- The attempt's own money refunded so far (as SumRequestedRefunds).
SELECT coalesce(sum(amount), 0)::bigint FROM payments.refunds
WHERE tenant_id = @tenant_id AND attempt_id = @attempt_id AND status = 'succeeded'
  AND (kind = 'requested' OR e2e_id = sqlc.narg(own_e2e_id)::text OR charge_id = sqlc.narg(own_charge_id)::text);

-- name: FinishRefund :execrows
UPDATE payments.refunds SET status = @status, failure_message = @failure_message, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND status = 'pending';

-- name: ListRefundsByE2E :many
SELECT * FROM payments.refunds WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id ORDER BY created_at;

-- name: InsertTokenUse :execrows
-- A jti already used by another attempt inserts nothing.
INSERT INTO payments.token_uses (tenant_id, jti_hash, attempt_id, expires_at)
VALUES (@tenant_id, @jti_hash, @attempt_id, @expires_at)
ON CONFLICT (tenant_id, jti_hash) DO UPDATE SET expires_at = EXCLUDED.expires_at
  WHERE payments.token_uses.attempt_id = EXCLUDED.attempt_id;

-- name: DeleteExpiredTokenUses :exec
DELETE FROM payments.token_uses WHERE tenant_id = @tenant_id AND expires_at < @now;
