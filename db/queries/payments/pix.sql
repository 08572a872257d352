-- name: InsertHook :exec
INSERT INTO payments.hooks (tenant_id, id, handler_id, environment)
VALUES (@tenant_id, @id, @handler_id, @environment)
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
-- reconcile_after: when the resolve sweep reconciles it if nothing has
-- (NULL when it is decided in the same transaction).
INSERT INTO payments.pix_receipts (tenant_id, e2e_id, hook_id, handler_id, txid, amount, horario, raw, reconcile_after)
VALUES (@tenant_id, @e2e_id, @hook_id, @handler_id, @txid, @amount, @horario, @raw, sqlc.narg(reconcile_after))
ON CONFLICT (tenant_id, e2e_id) DO NOTHING;

-- name: ListDueReceipts :many
-- Every tenant's receipts still undecided past their reconcile_after,
-- oldest first (the resolve sweep, in the 'payments_sweep' scope).
SELECT tenant_id, e2e_id, reconcile_tries FROM payments.pix_receipts
WHERE status = 'received' AND reconcile_after IS NOT NULL AND reconcile_after <= @now::timestamptz
ORDER BY reconcile_after
LIMIT @max_rows;

-- name: RetryReconcile :execrows
-- A reconciliation that failed: one try more, the next at reconcile_after.
UPDATE payments.pix_receipts SET reconcile_after = @reconcile_after, reconcile_tries = reconcile_tries + 1, updated_at = now()
WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id AND status = 'received';

-- name: GetReceipt :one
SELECT * FROM payments.pix_receipts WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id;

-- name: GetReceiptForReconcile :one
-- A receipt and the id of the attempt whose charge its txid names (NULL
-- when none does), for a reconciliation: one round trip.
SELECT sqlc.embed(r), a.id AS charge_attempt_id
FROM payments.pix_receipts r
LEFT JOIN payments.attempts a ON a.tenant_id = r.tenant_id AND a.txid = r.txid AND a.txid IS NOT NULL AND r.txid <> ''
WHERE r.tenant_id = @tenant_id AND r.e2e_id = @e2e_id;

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

-- name: GetSandboxAccount :one
SELECT * FROM payments.sandbox_accounts WHERE tenant_id = @tenant_id AND handler_id = @handler_id;

-- name: LockSandboxProvisioning :exec
-- Serialises the opening of one handler's simulator account: the
-- simulator hands out new credentials on every call, so two processes
-- opening it at once would each store credentials the other revoked.
SELECT pg_advisory_xact_lock(hashtextextended('payments.sandbox_accounts/' || @tenant_id::text || '/' || @handler_id::text, 0));

-- name: InsertSandboxAccount :exec
INSERT INTO payments.sandbox_accounts (tenant_id, handler_id, client_id, chave, sealed_secrets)
VALUES (@tenant_id, @handler_id, @client_id, @chave, @sealed_secrets);

-- name: KeepListing :exec
-- A Pix charge of the handler: its account is listed for two more days.
UPDATE payments.hooks SET list_until = @list_until WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListHooksToList :many
-- Every tenant's hooks in use whose account was last listed before
-- @before (the resolve sweep, in the 'payments_sweep' scope).
SELECT tenant_id, id, handler_id, environment, listed_until FROM payments.hooks
WHERE list_until > @now::timestamptz AND (listed_until IS NULL OR listed_until <= @before::timestamptz)
ORDER BY listed_until NULLS FIRST
LIMIT @max_rows;

-- name: SetHookListed :exec
UPDATE payments.hooks SET listed_until = @listed_until WHERE tenant_id = @tenant_id AND id = @id;

-- name: AttemptTxidsIn :many
-- Which of these txids are our charges.
SELECT txid::text FROM payments.attempts WHERE tenant_id = @tenant_id AND txid = ANY(@txids::text[]);
