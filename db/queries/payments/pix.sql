-- name: InsertHook :exec
INSERT INTO payments.hooks (tenant_id, id, handler_id, environment, sealed_secret)
VALUES (@tenant_id, @id, @handler_id, @environment, @sealed_secret)
ON CONFLICT (tenant_id, handler_id) DO NOTHING;

-- name: SetHookEnvironment :exec
UPDATE payments.hooks SET environment = @environment WHERE tenant_id = @tenant_id AND id = @id;

-- name: GetHookByHandler :one
SELECT * FROM payments.hooks WHERE tenant_id = @tenant_id AND handler_id = @handler_id;

-- name: GetHook :one
SELECT * FROM payments.hooks WHERE tenant_id = @tenant_id AND id = @id;

-- name: SetHookURL :exec
UPDATE payments.hooks SET registered_url = @registered_url WHERE tenant_id = @tenant_id AND id = @id;

-- name: InsertReceipt :execrows
-- A duplicate notification of the same Pix is a no-op (0 rows).
INSERT INTO payments.pix_receipts (tenant_id, e2e_id, hook_id, handler_id, txid, amount, horario, raw)
VALUES (@tenant_id, @e2e_id, @hook_id, @handler_id, @txid, @amount, @horario, @raw)
ON CONFLICT (tenant_id, e2e_id) DO NOTHING;

-- name: GetReceipt :one
SELECT * FROM payments.pix_receipts WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id;

-- name: LockReceipt :one
SELECT * FROM payments.pix_receipts WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id FOR UPDATE;

-- name: SetReceiptStatus :exec
UPDATE payments.pix_receipts SET status = @status, attempt_id = sqlc.narg(attempt_id), note = @note, updated_at = now()
WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id;

-- name: CountReceipts :one
SELECT count(*) FROM payments.pix_receipts WHERE tenant_id = @tenant_id;

-- name: InsertAlert :exec
INSERT INTO payments.alerts (tenant_id, id, kind, message, attempt_id, e2e_id)
VALUES (@tenant_id, @id, @kind, @message, @attempt_id, @e2e_id);

-- name: ListAlerts :many
SELECT * FROM payments.alerts WHERE tenant_id = @tenant_id ORDER BY created_at DESC, id DESC LIMIT 200;
