-- name: SetSessionPayment :execrows
-- Optimistic: the one transition that starts a payment attempt.
UPDATE checkout.sessions SET
  status = @status, payment_attempt_id = @payment_attempt_id, order_webhook_url = @order_webhook_url,
  base_url = @base_url, state = @state, version = version + 1, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND version = @version;

-- name: FinishSession :execrows
-- Optimistic: settle a session (completed with its order, or reopened).
UPDATE checkout.sessions SET
  status = @status, payment_attempt_id = sqlc.narg(payment_attempt_id), order_id = sqlc.narg(order_id),
  state = @state, version = version + 1, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND version = @version;
