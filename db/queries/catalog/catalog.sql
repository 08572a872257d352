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

-- name: LockCatalogWrites :exec
-- Serializes the catalog writers of one tenant (create, update, import) so
-- that what an import validated is exactly what it then changes. Stock
-- reservation must not take this lock: it works on single variant rows.
SELECT pg_advisory_xact_lock(hashtextextended('catalog.write:' || sqlc.arg(tenant_id)::uuid::text, 0));

-- name: GetProduct :one
SELECT * FROM catalog.products WHERE tenant_id = @tenant_id AND id = @id;

-- name: GetProductsByIDs :many
SELECT * FROM catalog.products WHERE tenant_id = @tenant_id AND id = ANY(@ids::text[]);

-- name: GetVariantsByIDs :many
SELECT * FROM catalog.variants WHERE tenant_id = @tenant_id AND id = ANY(@ids::text[]);

-- name: GetVariantsBySKUs :many
SELECT * FROM catalog.variants WHERE tenant_id = @tenant_id AND sku = ANY(@skus::text[]);

-- name: LookupVariants :many
-- Variants with what checkout needs from their product. Each id is one
-- primary-key probe (ids come deduplicated), whatever the statistics say,
-- so the generic plan is always right (pgstore.SingleGenericPlan).
SELECT sqlc.embed(v), p.title AS product_title, p.active AS product_active
FROM unnest(@ids::text[]) AS want (id)
JOIN catalog.variants v ON v.tenant_id = @tenant_id AND v.id = want.id
JOIN catalog.products p ON p.tenant_id = v.tenant_id AND p.id = v.product_id;

-- name: UpdateProduct :execrows
UPDATE catalog.products
SET title = @title, description = @description, image_url = @image_url, active = @active, category = @category,
    variant_text = @variant_text, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id;

-- name: SetVariantText :execrows
-- What search reads of the product's variants changed, not the product:
-- its updated_at stays.
UPDATE catalog.products SET variant_text = @variant_text WHERE tenant_id = @tenant_id AND id = @id;

-- name: UpdateVariant :execrows
UPDATE catalog.variants
SET sku = @sku, title = @title, price = @price, currency = @currency, stock = @stock, active = @active,
    image_url = @image_url, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND product_id = @product_id;

-- name: SetVariantSKU :execrows
-- Parks a variant on a temporary SKU so two variants can swap SKUs inside
-- one transaction despite the (non-deferrable) unique constraint.
UPDATE catalog.variants SET sku = @sku WHERE tenant_id = @tenant_id AND id = @id;

-- name: DeactivateVariants :execrows
UPDATE catalog.variants SET active = false, updated_at = now()
WHERE tenant_id = @tenant_id AND id = ANY(@ids::text[]) AND active;

-- name: InsertProducts :batchexec
-- Imports send their inserts in one round trip (COPY is not allowed on
-- tables with row-level security).
INSERT INTO catalog.products (tenant_id, id, title, description, image_url, active, category, variant_text)
VALUES (@tenant_id, @id, @title, @description, @image_url, @active, @category, @variant_text);

-- name: InsertVariants :batchexec
INSERT INTO catalog.variants (tenant_id, id, product_id, sku, title, price, currency, stock, active, image_url)
VALUES (@tenant_id, @id, @product_id, @sku, @title, @price, @currency, @stock, @active, @image_url);

-- name: SalesReadiness :one
-- The go-live checklist's product item: active products, and one of them
-- with an active variant in stock (its title, '' when none).
SELECT
    (SELECT count(*) FROM catalog.products p WHERE p.tenant_id = @tenant_id AND p.active)::bigint AS active_products,
    coalesce((
        SELECT p.title FROM catalog.products p
        JOIN catalog.variants v ON v.tenant_id = p.tenant_id AND v.product_id = p.id
        WHERE p.tenant_id = @tenant_id AND p.active AND v.active AND v.stock > 0
        ORDER BY p.created_at, p.id
        LIMIT 1
    ), '')::text AS in_stock_title;
