-- name: AddRequestUsage :execrows
-- Adds a batch of counts (parallel arrays); rows of tenants that no longer
-- exist are skipped rather than failing the whole batch.
INSERT INTO tenants.request_usage AS u (tenant_id, day, requests, errors)
SELECT b.tenant_id, b.day, b.requests, b.errors
FROM (SELECT unnest(@tenant_ids::uuid[]) AS tenant_id, unnest(@days::date[]) AS day,
             unnest(@requests::bigint[]) AS requests, unnest(@errors::bigint[]) AS errors) b
JOIN tenants.tenants t ON t.tenant_id = b.tenant_id
ON CONFLICT (tenant_id, day) DO UPDATE
SET requests = u.requests + excluded.requests, errors = u.errors + excluded.errors;

-- name: ListRequestUsage :many
-- Days are São Paulo calendar dates (what the edges count in), like the
-- checkout, order and payment stats: the window [since, until] returns
-- every day it touches there.
SELECT day, requests, errors FROM tenants.request_usage
WHERE tenant_id = @tenant_id
  AND day >= timezone('America/Sao_Paulo', sqlc.arg(since)::timestamptz)::date
  AND day <= timezone('America/Sao_Paulo', sqlc.arg(until)::timestamptz)::date
ORDER BY day;

-- name: SearchTenants :many
-- The operator console's search: a case-insensitive substring of the name,
-- the slug or any domain, in slug order (keyset pagination like ListTenants).
SELECT t.* FROM tenants.tenants t
WHERE (sqlc.narg(after_slug)::text IS NULL OR t.slug > sqlc.narg(after_slug)::text)
  AND (t.name ILIKE '%' || @pattern::text || '%' ESCAPE '\'
       OR t.slug ILIKE '%' || @pattern::text || '%' ESCAPE '\'
       OR EXISTS (SELECT 1 FROM tenants.domains d WHERE d.tenant_id = t.tenant_id AND d.domain ILIKE '%' || @pattern::text || '%' ESCAPE '\'))
ORDER BY t.slug
LIMIT @page_size;
