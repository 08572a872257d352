-- name: InsertTenant :one
INSERT INTO tenants.tenants (tenant_id, slug, name, environment, capabilities)
VALUES (@tenant_id, @slug, @name, @environment, @capabilities)
RETURNING *;

-- name: GetTenantByID :one
SELECT * FROM tenants.tenants WHERE tenant_id = @tenant_id;

-- name: GetTenantBySlug :one
SELECT * FROM tenants.tenants WHERE slug = @slug;

-- name: GetTenantByDomain :one
SELECT t.* FROM tenants.tenants t
JOIN tenants.domains d ON d.tenant_id = t.tenant_id
WHERE d.domain = @domain;

-- name: ListTenants :many
SELECT * FROM tenants.tenants
WHERE (sqlc.narg(after_slug)::text IS NULL OR slug > sqlc.narg(after_slug)::text)
ORDER BY slug
LIMIT @page_size;

-- name: SetTenantStatus :one
UPDATE tenants.tenants SET status = @status, updated_at = now()
WHERE tenant_id = @tenant_id
RETURNING *;

-- name: InsertDomain :exec
INSERT INTO tenants.domains (tenant_id, domain, is_primary) VALUES (@tenant_id, @domain, @is_primary);

-- name: ClearPrimaryDomain :exec
UPDATE tenants.domains SET is_primary = false WHERE tenant_id = @tenant_id AND is_primary;

-- name: DeleteDomain :execrows
DELETE FROM tenants.domains WHERE tenant_id = @tenant_id AND domain = @domain;

-- name: PromoteOldestDomain :exec
UPDATE tenants.domains AS t SET is_primary = true
WHERE t.tenant_id = @tenant_id AND t.domain = (
  SELECT d.domain FROM tenants.domains d WHERE d.tenant_id = @tenant_id ORDER BY d.created_at, d.domain LIMIT 1
) AND NOT EXISTS (SELECT 1 FROM tenants.domains p WHERE p.tenant_id = @tenant_id AND p.is_primary);

-- name: ListDomains :many
SELECT * FROM tenants.domains WHERE tenant_id = @tenant_id ORDER BY is_primary DESC, created_at, domain;

-- name: ListDomainsForTenants :many
SELECT * FROM tenants.domains WHERE tenant_id = ANY(@tenant_ids::uuid[]) ORDER BY tenant_id, is_primary DESC, created_at, domain;

-- name: CountDomains :one
SELECT count(*) FROM tenants.domains WHERE tenant_id = @tenant_id;

-- name: SetTenantName :one
UPDATE tenants.tenants SET name = @name, updated_at = now()
WHERE tenant_id = @tenant_id
RETURNING *;

-- name: SetTenantCapability :one
-- Adds (once) or removes one opt-in capability, e.g. AP2 mandates.
UPDATE tenants.tenants
SET capabilities = CASE
      WHEN NOT @enabled::boolean THEN array_remove(capabilities, @capability::text)
      WHEN @capability::text = ANY (capabilities) THEN capabilities
      ELSE capabilities || @capability::text
    END,
    updated_at = now()
WHERE tenant_id = @tenant_id
RETURNING *;
