-- name: CountReservations :one
-- A checkout's live reservation (a released one from an earlier attempt
-- does not count).
SELECT count(*) FROM catalog.stock_reservations
WHERE tenant_id = @tenant_id AND checkout_id = @checkout_id AND state = 'reserved';

-- name: TakeStock :execrows
-- Decrements stock only if enough is left: never below zero.
UPDATE catalog.variants SET stock = stock - @quantity, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND stock >= @quantity;

-- name: InsertReservation :exec
-- A new attempt after a released one reserves again on the same row.
INSERT INTO catalog.stock_reservations (tenant_id, checkout_id, variant_id, quantity)
VALUES (@tenant_id, @checkout_id, @variant_id, @quantity)
ON CONFLICT (tenant_id, checkout_id, variant_id) DO UPDATE
  SET quantity = EXCLUDED.quantity, state = 'reserved', released_at = NULL, created_at = now()
  WHERE catalog.stock_reservations.state = 'released';

-- name: ReleaseReservations :many
UPDATE catalog.stock_reservations SET state = 'released', released_at = now()
WHERE tenant_id = @tenant_id AND checkout_id = @checkout_id AND state = 'reserved'
RETURNING variant_id, quantity;

-- name: ReturnStock :exec
UPDATE catalog.variants SET stock = stock + @quantity, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id;
