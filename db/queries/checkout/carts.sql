-- name: InsertCart :one
-- The idempotency key, if any, kept by the same statement (keep_key).
WITH w AS (
  INSERT INTO checkout.carts (tenant_id, id, status, agent_profile_url, request, state, expires_at)
  VALUES (@tenant_id, @id, 'active', @agent_profile_url, @request, @state, @expires_at)
  RETURNING 1
)
SELECT checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: GetCart :one
SELECT * FROM checkout.carts WHERE tenant_id = @tenant_id AND id = @id;

-- name: UpdateCart :one
-- Optimistic, and only while the cart is active; the idempotency key, if
-- any, kept by the same statement (keep_key).
WITH w AS (
  UPDATE checkout.carts SET request = @request, state = @state, version = version + 1, updated_at = now()
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version AND status = 'active'
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: CancelCart :one
WITH w AS (
  UPDATE checkout.carts SET status = 'canceled', version = version + 1, updated_at = now()
  WHERE tenant_id = @tenant_id AND id = @id AND version = @version AND status = 'active'
  RETURNING 1
)
SELECT count(*)::bigint AS written, checkout.keep_key(@tenant_id, sqlc.narg(idem)::jsonb, sqlc.narg(idem_response)::bytea, count(*) > 0)::boolean AS kept FROM w;

-- name: ConvertCart :execrows
-- Optimistic: the cart becomes the checkout @checkout_id (at most once).
UPDATE checkout.carts SET status = 'converted', checkout_id = @checkout_id, version = version + 1, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND version = @version AND status = 'active';

-- name: RevertCartConversion :execrows
-- A conversion that opened no checkout (none of its items can be bought,
-- or the create failed) gives the cart back, unless the checkout exists.
UPDATE checkout.carts c SET status = 'active', checkout_id = NULL, version = version + 1, updated_at = now()
WHERE c.tenant_id = @tenant_id AND c.id = @id AND c.status = 'converted' AND c.checkout_id = @checkout_id::text
  AND NOT EXISTS (SELECT 1 FROM checkout.sessions s WHERE s.tenant_id = c.tenant_id AND s.id = c.checkout_id);
