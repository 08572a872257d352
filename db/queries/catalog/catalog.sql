-- name: InsertProduct :one
INSERT INTO catalog.products (tenant_id, id, title, description, image_url, active)
VALUES (@tenant_id, @id, @title, @description, @image_url, @active)
RETURNING *;

-- name: InsertVariant :one
INSERT INTO catalog.variants (tenant_id, id, product_id, sku, title, price, currency, stock, active, image_url)
VALUES (@tenant_id, @id, @product_id, @sku, @title, @price, @currency, @stock, @active, @image_url)
RETURNING *;

-- name: ListProducts :many
SELECT * FROM catalog.products
WHERE tenant_id = @tenant_id AND (sqlc.narg(after_id)::text IS NULL OR id > sqlc.narg(after_id)::text)
ORDER BY id
LIMIT @page_size;

-- name: ListVariantsOfProducts :many
SELECT * FROM catalog.variants
WHERE tenant_id = @tenant_id AND product_id = ANY(@product_ids::text[])
ORDER BY product_id, id;

-- name: CountProducts :one
SELECT count(*) FROM catalog.products WHERE tenant_id = @tenant_id;
