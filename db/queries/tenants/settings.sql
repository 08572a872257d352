-- name: GetSettings :one
SELECT * FROM tenants.settings WHERE tenant_id = @tenant_id;

-- name: UpsertSettings :one
INSERT INTO tenants.settings (tenant_id, links, consent_purposes, checkout_ttl_seconds)
VALUES (@tenant_id, @links, @consent_purposes, @checkout_ttl_seconds)
ON CONFLICT (tenant_id) DO UPDATE SET
  links = EXCLUDED.links,
  consent_purposes = EXCLUDED.consent_purposes,
  checkout_ttl_seconds = EXCLUDED.checkout_ttl_seconds,
  updated_at = now()
RETURNING *;
