-- name: CheckoutStats :many
-- One scan, two groupings: rows with by_day = false count a status, rows
-- with by_day = true count a São Paulo day (the other column is empty).
SELECT
  (GROUPING(s.day) = 0)::boolean AS by_day,
  COALESCE(s.status, '')::text AS status,
  COALESCE(s.day, '')::text AS day,
  count(*)::bigint AS n
FROM (
  SELECT status, to_char(created_at AT TIME ZONE 'America/Sao_Paulo', 'YYYY-MM-DD') AS day
  FROM checkout.sessions
  WHERE tenant_id = @tenant_id
    AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since)::timestamptz)
    AND (sqlc.narg(until)::timestamptz IS NULL OR created_at < sqlc.narg(until)::timestamptz)
) s
GROUP BY GROUPING SETS ((s.status), (s.day))
ORDER BY 1, 2, 3;

-- name: CompletionsInFlight :one
-- Every tenant's completions in flight, for /metrics (in the
-- 'checkout_sweep' scope): how many there are, how many the settle sweep
-- is due to settle (settle_after passed), and how long past due the
-- oldest of those is, in seconds (0: none due). A claim always sets
-- settle_after, so the partial index sessions_due_settle serves it.
SELECT
  count(*)::bigint AS in_progress,
  count(*) FILTER (WHERE settle_after <= now())::bigint AS due,
  COALESCE(EXTRACT(EPOCH FROM now() - min(settle_after) FILTER (WHERE settle_after <= now())), 0)::float8 AS overdue_seconds
FROM checkout.sessions
WHERE status = 'complete_in_progress' AND settle_after IS NOT NULL;
