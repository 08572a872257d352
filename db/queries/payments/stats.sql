-- name: PaymentStats :many
-- Attempts by São Paulo day of creation, kind (pix or card) and status
-- class; the service sums the days for the totals.
SELECT
  to_char(created_at AT TIME ZONE 'America/Sao_Paulo', 'YYYY-MM-DD')::text AS day,
  (handler_name = @pix_handler::text)::boolean AS pix,
  (CASE
     WHEN status IN ('succeeded', 'refunded', 'partially_refunded') THEN 'paid'
     WHEN status IN ('pending', 'requires_action') THEN 'pending'
     ELSE status
   END)::text AS outcome,
  count(*)::bigint AS n
FROM payments.attempts
WHERE tenant_id = @tenant_id
  AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR created_at < sqlc.narg(until)::timestamptz)
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;
