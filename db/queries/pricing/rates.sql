-- name: InsertShippingRate :one
INSERT INTO pricing.shipping_rates (tenant_id, id, title, description, carrier, regions, price, free_above,
  min_subtotal, max_subtotal, min_days, max_days, active, position)
VALUES (@tenant_id, @id, @title, @description, @carrier, @regions, @price, @free_above,
  @min_subtotal, @max_subtotal, @min_days, @max_days, @active, @position)
RETURNING *;

-- name: UpdateShippingRate :one
UPDATE pricing.shipping_rates SET
  title = @title, description = @description, carrier = @carrier, regions = @regions, price = @price,
  free_above = @free_above, min_subtotal = @min_subtotal, max_subtotal = @max_subtotal,
  min_days = @min_days, max_days = @max_days, active = @active, position = @position, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: DeleteShippingRate :execrows
DELETE FROM pricing.shipping_rates WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListShippingRates :many
SELECT * FROM pricing.shipping_rates
WHERE tenant_id = @tenant_id AND (NOT sqlc.arg(only_active)::boolean OR active)
ORDER BY position, id;

-- name: DeleteShippingRateCeps :exec
DELETE FROM pricing.shipping_rate_ceps WHERE tenant_id = @tenant_id AND rate_id = @rate_id;

-- name: InsertShippingRateCep :exec
INSERT INTO pricing.shipping_rate_ceps (tenant_id, rate_id, position, cep_from, cep_to)
VALUES (@tenant_id, @rate_id, @position, @cep_from, @cep_to);

-- name: ListShippingRateCeps :many
SELECT * FROM pricing.shipping_rate_ceps
WHERE tenant_id = @tenant_id AND rate_id = ANY(@rate_ids::text[])
ORDER BY rate_id, position;
