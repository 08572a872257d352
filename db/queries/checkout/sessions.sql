-- name: InsertSession :one
-- With an idempotency key (idem), the key and its answer are kept by the
-- same statement (keep_key, migration 00034): a key already used rolls the
-- insert back with it. seen is the new row's xmin (seen.go). Without a
-- key keep_key would only answer false: it is not called (a PL/pgSQL call
-- saved on most writes).
WITH w AS (
  INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, buyer_email, agent_profile_url, capabilities, request, state, expires_at)
  VALUES (@tenant_id, @id, @status, @currency, @total, @buyer_email, @agent_profile_url, @capabilities, @request, @state, @expires_at)
  RETURNING xmin::text::bigint AS x
)
SELECT (CASE WHEN sqlc.narg(idem)::jsonb IS NULL THEN false
  ELSE checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0) END)::boolean AS kept,
  coalesce(min(x), 0)::bigint AS seen FROM w;

-- name: GetSession :one
SELECT * FROM checkout.sessions WHERE tenant_id = @tenant_id AND id = @id;

-- name: UpdateSession :one
-- Optimistic: only if nobody changed the session since it was read (and,
-- for a session this process remembers rather than read, since it wrote
-- it: the row's xmin is still seen); the idempotency key, if any, kept by
-- the same statement (keep_key, not called without a key, as in
-- InsertSession). seen is the new row's xmin.
WITH w AS (
  UPDATE checkout.sessions SET
    status = @status, total = @total, buyer_email = @buyer_email, capabilities = @capabilities,
    request = @request, state = @state, version = version + 1, updated_at = now()
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version
    AND (sqlc.narg(seen)::bigint IS NULL OR xmin::text::bigint = sqlc.narg(seen)::bigint)
  RETURNING xmin::text::bigint AS x
)
SELECT count(*)::bigint AS written,
  (CASE WHEN sqlc.narg(idem)::jsonb IS NULL THEN false
   ELSE checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0) END)::boolean AS kept,
  coalesce(min(x), 0)::bigint AS now_seen FROM w;

-- name: ListSessions :many
SELECT id, status, currency, total, agent_profile_url, buyer_email, created_at, updated_at
FROM checkout.sessions
WHERE tenant_id = @tenant_id
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status)::text)
  AND (sqlc.narg(before_id)::text IS NULL OR id < sqlc.narg(before_id)::text)
ORDER BY id DESC
LIMIT @page_size;

-- name: ListExpiredOpenSessions :many
-- The tenant's sessions the expiry can close (a completion in flight is
-- left to its payment), oldest first: sessions_due_expiry holds them.
SELECT id FROM checkout.sessions
WHERE tenant_id = @tenant_id AND status IN ('incomplete', 'requires_escalation', 'ready_for_complete') AND expires_at <= @now
ORDER BY expires_at
LIMIT 500;

-- name: ListDueSessions :many
-- Every tenant's open sessions past their expiry, oldest first (the
-- expiry sweep, in the 'checkout_sweep' scope; a completion in flight is
-- left to its payment).
SELECT tenant_id, id FROM checkout.sessions
WHERE status IN ('incomplete', 'requires_escalation', 'ready_for_complete') AND expires_at <= @now
ORDER BY expires_at
LIMIT @max_rows;
