-- name: InsertDiscount :one
INSERT INTO pricing.discounts (tenant_id, id, code, title, kind, value, automatic, min_subtotal, starts_at, ends_at,
  usage_limit, usage_limit_per_buyer, priority, combinable, active)
VALUES (@tenant_id, @id, @code, @title, @kind, @value, @automatic, @min_subtotal, @starts_at, @ends_at,
  @usage_limit, @usage_limit_per_buyer, @priority, @combinable, @active)
RETURNING *;

-- name: UpdateDiscount :one
UPDATE pricing.discounts SET
  code = @code, title = @title, kind = @kind, value = @value, automatic = @automatic, min_subtotal = @min_subtotal,
  starts_at = @starts_at, ends_at = @ends_at, usage_limit = @usage_limit,
  usage_limit_per_buyer = @usage_limit_per_buyer, priority = @priority, combinable = @combinable,
  active = @active, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: DeleteDiscount :execrows
DELETE FROM pricing.discounts WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListDiscounts :many
SELECT sqlc.embed(d),
  (SELECT count(*) FROM pricing.discount_redemptions r
   WHERE r.tenant_id = d.tenant_id AND r.discount_id = d.id)::bigint AS times_used
FROM pricing.discounts d
WHERE d.tenant_id = @tenant_id
ORDER BY d.priority, d.id;

-- name: GetDiscountUsage :one
SELECT count(*) FROM pricing.discount_redemptions WHERE tenant_id = @tenant_id AND discount_id = @discount_id;

-- QuoteDiscounts loads the active discounts a quote may apply: every
-- automatic one and those whose code was submitted. Usage excludes the
-- quoted checkout's own redemptions, so re-pricing a redeemed checkout
-- does not count it against itself.
-- name: QuoteDiscounts :many
SELECT sqlc.embed(d),
  (SELECT count(*) FROM pricing.discount_redemptions r
   WHERE r.tenant_id = d.tenant_id AND r.discount_id = d.id AND r.checkout_id <> @checkout_id)::bigint AS times_used,
  (SELECT count(*) FROM pricing.discount_redemptions r
   WHERE r.tenant_id = d.tenant_id AND r.discount_id = d.id AND r.checkout_id <> @checkout_id
     AND @buyer_email::text <> '' AND r.buyer_email = @buyer_email::text)::bigint AS buyer_used
FROM pricing.discounts d
WHERE d.tenant_id = @tenant_id AND d.active AND (d.automatic OR lower(d.code) = ANY(@codes::text[]))
ORDER BY d.priority, d.id;

-- ResolveDiscountRef finds a discount by id or (case-insensitively) by
-- code; an id wins over a code that happens to equal it.
-- name: ResolveDiscountRef :one
SELECT id FROM pricing.discounts
WHERE tenant_id = @tenant_id AND (id = @ref OR (code <> '' AND lower(code) = lower(@ref)))
ORDER BY (id = @ref) DESC
LIMIT 1;

-- RedeemUnlimited records, in one statement, the redemption of discounts
-- that have no usage limits, which need no lock: the primary key makes it
-- idempotent. Each ref (an id, or a code in any case; an id wins) gives a
-- row with the discount it names, an empty id when none. Nothing is
-- written when a ref names nothing or a named discount has a limit: the
-- caller then fails, or redeems under the discount's lock.
-- name: RedeemUnlimited :many
-- Each ref is looked up once, by primary key first, then (only when no id
-- matches) by the unique code index; the discount's row is carried along,
-- so its limits are not read a second time.
WITH r AS (
  SELECT u.ref, u.n, coalesce(
    (SELECT d FROM pricing.discounts d WHERE d.tenant_id = @tenant_id AND d.id = u.ref),
    (SELECT d FROM pricing.discounts d WHERE d.tenant_id = @tenant_id AND d.code <> '' AND lower(d.code) = lower(u.ref))
  ) AS d
  FROM unnest(@refs::text[]) WITH ORDINALITY AS u (ref, n)
), ins AS (
  INSERT INTO pricing.discount_redemptions (tenant_id, discount_id, checkout_id, buyer_email)
  SELECT @tenant_id, (r.d).id, @checkout_id, @buyer_email FROM r
  WHERE NOT EXISTS (SELECT 1 FROM r l WHERE (l.d).id IS NULL OR (l.d).usage_limit > 0 OR (l.d).usage_limit_per_buyer > 0)
  ON CONFLICT (tenant_id, discount_id, checkout_id) DO NOTHING
)
SELECT r.ref::text AS ref, coalesce((r.d).id, '')::text AS discount_id,
       coalesce((r.d).usage_limit > 0 OR (r.d).usage_limit_per_buyer > 0, false)::boolean AS limited
FROM r
ORDER BY r.n;

-- LockDiscount locks a discount row so concurrent redemptions of a
-- limited discount serialise on it.
-- name: LockDiscount :one
SELECT * FROM pricing.discounts WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: RedemptionExists :one
SELECT EXISTS (SELECT 1 FROM pricing.discount_redemptions
  WHERE tenant_id = @tenant_id AND discount_id = @discount_id AND checkout_id = @checkout_id);

-- name: CountBuyerRedemptions :one
SELECT count(*) FROM pricing.discount_redemptions
WHERE tenant_id = @tenant_id AND discount_id = @discount_id AND buyer_email = @buyer_email;

-- name: InsertRedemption :exec
INSERT INTO pricing.discount_redemptions (tenant_id, discount_id, checkout_id, buyer_email)
VALUES (@tenant_id, @discount_id, @checkout_id, @buyer_email)
ON CONFLICT (tenant_id, discount_id, checkout_id) DO NOTHING;
