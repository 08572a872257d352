-- name: OrderStats :many
-- One scan, three groupings: kind 'total' (one row, also when there are
-- no orders), 'day' (a São Paulo day) and 'agent' (an agent profile URL).
SELECT
  (CASE WHEN GROUPING(o.day) = 0 THEN 'day' WHEN GROUPING(o.agent_profile_url) = 0 THEN 'agent' ELSE 'total' END)::text AS kind,
  COALESCE(o.day, o.agent_profile_url, '')::text AS key,
  count(o.total)::bigint AS orders,
  COALESCE(sum(o.total), 0)::bigint AS gmv,
  COALESCE(sum(o.refunded), 0)::bigint AS refunded
FROM (
  SELECT total, refunded, agent_profile_url,
         to_char(created_at AT TIME ZONE 'America/Sao_Paulo', 'YYYY-MM-DD') AS day
  FROM orders.orders
  WHERE tenant_id = @tenant_id
    AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since)::timestamptz)
    AND (sqlc.narg(until)::timestamptz IS NULL OR created_at < sqlc.narg(until)::timestamptz)
) o
GROUP BY GROUPING SETS ((o.day), (o.agent_profile_url), ())
ORDER BY 1, 2;
