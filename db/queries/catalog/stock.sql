-- name: ReserveStock :one
-- Records the checkout's reservations and takes their stock in one
-- statement, all or nothing: nothing changes when the checkout already
-- holds a live reservation (a released one from an earlier attempt does
-- not count, and is reused), when a variant does not exist or when one has
-- too little stock; with @check_prices also when a variant or its product
-- is inactive or a variant's price is not the one the buyer was shown
-- (@prices, per variant); those two are checked even when the checkout
-- already holds its reservation. The variants are locked in id order, as every
-- reservation locks them, so concurrent reservations cannot deadlock, and
-- stock and price are checked on the locked (latest) rows, so the last unit
-- is never sold twice and never at a price the buyer did not see. Stock is
-- taken only for the lines this statement booked: a concurrent call for the
-- same checkout that booked first makes this one book and take nothing, so
-- the stock taken always equals the lines reserved. A closed checkout
-- (ReleaseStock with close) reserves nothing: its checkout_stock row is
-- upserted here first, which waits for a close in flight and then sees it
-- committed (migration 00023); a close waits for this statement likewise.
WITH gate AS (
    INSERT INTO catalog.checkout_stock (tenant_id, checkout_id) VALUES (@tenant_id, @checkout_id)
    ON CONFLICT (tenant_id, checkout_id) DO UPDATE SET updated_at = now() WHERE NOT catalog.checkout_stock.closed
    RETURNING true AS open
), req AS (
    SELECT unnest(@variant_ids::text[]) AS variant_id, unnest(@quantities::bigint[]) AS quantity,
           unnest(@prices::bigint[]) AS price
), held AS (
    SELECT EXISTS (
        SELECT 1 FROM catalog.stock_reservations r
        WHERE r.tenant_id = @tenant_id AND r.checkout_id = @checkout_id AND r.state = 'reserved'
    ) AS yes
), locked AS (
    SELECT v.id, v.stock, req.quantity, v.price = req.price AS price_ok, v.active AND p.active AS active
    FROM catalog.variants v
    JOIN req ON req.variant_id = v.id
    JOIN catalog.products p ON p.tenant_id = v.tenant_id AND p.id = v.product_id
    WHERE v.tenant_id = @tenant_id
    ORDER BY v.id
    FOR UPDATE OF v
), verdict AS (
    SELECT count(*) = (SELECT count(*) FROM req) AND coalesce(bool_and(locked.active), false) AS available,
           coalesce(bool_and(locked.price_ok), false) AS prices_ok,
           coalesce(bool_and(locked.stock >= locked.quantity), false) AS enough
    FROM locked
), ok AS (
    SELECT coalesce(gate.open, false) AND NOT (SELECT yes FROM held) AND
           CASE WHEN @check_prices::boolean THEN available AND prices_ok AND enough
                ELSE (SELECT count(*) FROM locked) = (SELECT count(*) FROM req) AND enough END AS yes
    FROM verdict LEFT JOIN gate ON true
), booked AS (
    INSERT INTO catalog.stock_reservations (tenant_id, checkout_id, variant_id, quantity)
    SELECT @tenant_id, @checkout_id, locked.id, locked.quantity FROM locked, ok WHERE ok.yes
    ON CONFLICT (tenant_id, checkout_id, variant_id) DO UPDATE
      SET quantity = EXCLUDED.quantity, state = 'reserved', released_at = NULL, created_at = now()
      WHERE catalog.stock_reservations.state = 'released'
    RETURNING variant_id, quantity
), took AS (
    UPDATE catalog.variants v SET stock = v.stock - booked.quantity, updated_at = now()
    FROM booked
    WHERE v.tenant_id = @tenant_id AND v.id = booked.variant_id
    RETURNING v.id
)
SELECT (SELECT yes FROM held)::boolean AS already_held,
       (SELECT count(*) FROM gate) = 0 AS closed,
       (SELECT yes FROM ok)::boolean AS reserved_ok,
       (SELECT available FROM verdict)::boolean AS available,
       (SELECT prices_ok FROM verdict)::boolean AS prices_ok,
       (SELECT count(*) FROM booked)::bigint AS lines_booked,
       (SELECT count(*) FROM took)::bigint AS variants_taken;

-- name: CloseCheckoutStock :exec
-- Marks a checkout that ended without an order closed, waiting for a
-- ReserveStock in flight (same row); the release that follows in the
-- same transaction then sees what it booked.
INSERT INTO catalog.checkout_stock (tenant_id, checkout_id, closed) VALUES (@tenant_id, @checkout_id, true)
ON CONFLICT (tenant_id, checkout_id) DO UPDATE SET closed = true, updated_at = now();

-- name: ReleaseReservations :many
UPDATE catalog.stock_reservations SET state = 'released', released_at = now()
WHERE tenant_id = @tenant_id AND checkout_id = @checkout_id AND state = 'reserved'
RETURNING variant_id, quantity;

-- name: ReturnStock :exec
UPDATE catalog.variants SET stock = stock + @quantity, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id;
