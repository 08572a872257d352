-- PSP simulator: webhook registrations and the delivery outbox.

-- name: UpsertWebhook :exec
INSERT INTO pspsim.webhooks (tenant_id, chave, url, criacao)
VALUES (@tenant_id, @chave, @url, @criacao)
ON CONFLICT (tenant_id, chave) DO UPDATE SET url = EXCLUDED.url;

-- name: GetWebhook :one
SELECT * FROM pspsim.webhooks WHERE tenant_id = @tenant_id AND chave = @chave;

-- name: DeleteWebhook :execrows
DELETE FROM pspsim.webhooks WHERE tenant_id = @tenant_id AND chave = @chave;

-- name: InsertDelivery :one
INSERT INTO pspsim.deliveries (tenant_id, chave, e2e_ids, reason, next_attempt_at, created_at)
VALUES (@tenant_id, @chave, @e2e_ids, @reason, @now, @now)
RETURNING id;

-- name: ClaimDeliveries :many
-- Scope pspsim: the due deliveries of every account, leased to this
-- process until @lease_until (a process that dies mid-delivery leaves them
-- to another once the lease ends). SKIP LOCKED: processes sharing the
-- outbox never wait for each other or claim the same row.
WITH due AS (
  SELECT d.tenant_id, d.id FROM pspsim.deliveries d
  WHERE d.status = 'pending' AND d.next_attempt_at <= @now
  ORDER BY d.next_attempt_at, d.id
  LIMIT @max
  FOR UPDATE SKIP LOCKED
)
UPDATE pspsim.deliveries d SET next_attempt_at = @lease_until
FROM due WHERE d.tenant_id = due.tenant_id AND d.id = due.id
RETURNING d.*;

-- name: DeliveryContent :one
-- What a delivery posts: the URL registered for its key (empty when none)
-- and its Pix (pix_json, in the order named), in one statement.
SELECT coalesce((SELECT w.url FROM pspsim.webhooks w WHERE w.tenant_id = @tenant_id AND w.chave = @chave), '')::text AS url,
  coalesce((
    SELECT jsonb_agg(pspsim.pix_json(p) ORDER BY array_position(@e2e_ids::text[], p.e2e_id))
    FROM pspsim.pix p WHERE p.tenant_id = @tenant_id AND p.e2e_id = ANY(@e2e_ids::text[])
  ), '[]'::jsonb)::jsonb AS pix;

-- name: RecordDelivery :exec
-- The outcome of handling a claimed delivery.
UPDATE pspsim.deliveries SET
  status = @status, attempts = attempts + @attempted::integer, sends = sends + @sent::integer,
  delayed = delayed OR @delayed::boolean, duplicated = duplicated OR @duplicated::boolean,
  url = @url, last_status = sqlc.narg(last_status), last_error = @last_error,
  next_attempt_at = @next_attempt_at, done_at = sqlc.narg(done_at)
WHERE tenant_id = @tenant_id AND id = @id;

-- name: Ledger :one
-- Everything the account has, in one statement (one snapshot): what tests
-- and the chaos invariants compare with the platform's own records.
SELECT
  coalesce((SELECT jsonb_agg(to_jsonb(c) ORDER BY c.criacao, c.txid) FROM pspsim.charges c WHERE c.tenant_id = @tenant_id), '[]'::jsonb)::jsonb AS charges,
  coalesce((SELECT jsonb_agg(pspsim.pix_json(p) ORDER BY p.horario, p.e2e_id) FROM pspsim.pix p WHERE p.tenant_id = @tenant_id), '[]'::jsonb)::jsonb AS pix,
  coalesce((SELECT jsonb_agg(to_jsonb(w) ORDER BY w.chave) FROM pspsim.webhooks w WHERE w.tenant_id = @tenant_id), '[]'::jsonb)::jsonb AS webhooks,
  coalesce((SELECT jsonb_agg(to_jsonb(d) ORDER BY d.id) FROM pspsim.deliveries d WHERE d.tenant_id = @tenant_id), '[]'::jsonb)::jsonb AS deliveries;
