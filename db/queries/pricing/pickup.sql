-- name: InsertPickupLocation :one
INSERT INTO pricing.pickup_locations (tenant_id, id, name, street_address, extended_address, address_locality,
  address_region, postal_code, address_country, price, description, active, position)
VALUES (@tenant_id, @id, @name, @street_address, @extended_address, @address_locality,
  @address_region, @postal_code, @address_country, @price, @description, @active, @position)
RETURNING *;

-- name: UpdatePickupLocation :one
UPDATE pricing.pickup_locations SET
  name = @name, street_address = @street_address, extended_address = @extended_address,
  address_locality = @address_locality, address_region = @address_region, postal_code = @postal_code,
  address_country = @address_country, price = @price, description = @description, active = @active,
  position = @position, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: DeletePickupLocation :execrows
DELETE FROM pricing.pickup_locations WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListPickupLocations :many
SELECT * FROM pricing.pickup_locations
WHERE tenant_id = @tenant_id AND (NOT sqlc.arg(only_active)::boolean OR active)
ORDER BY position, id;
