-- name: RecordHandlerTest :execrows
INSERT INTO tenants.handler_tests (tenant_id, handler_id, ok, code, message)
SELECT @tenant_id, h.id, @ok, @code, @message
FROM tenants.payment_handlers h WHERE h.tenant_id = @tenant_id AND h.id = @handler_id
ON CONFLICT (tenant_id, handler_id) DO UPDATE SET
  ok = EXCLUDED.ok, code = EXCLUDED.code, message = EXCLUDED.message, tested_at = now();

-- name: DeleteHandlerTest :exec
DELETE FROM tenants.handler_tests WHERE tenant_id = @tenant_id AND handler_id = @handler_id;

-- name: ListHandlerTests :many
SELECT * FROM tenants.handler_tests WHERE tenant_id = @tenant_id ORDER BY handler_id;

-- name: ListLiveAPIKeyProfiles :many
-- The agent profile URLs of the tenant's live API keys.
SELECT agent_profile_url FROM tenants.api_keys WHERE tenant_id = @tenant_id AND revoked_at IS NULL ORDER BY created_at, id;

-- name: SetTenantEnvironment :one
UPDATE tenants.tenants SET environment = @environment WHERE tenant_id = @tenant_id RETURNING *;

-- name: InsertPasswordLink :exec
INSERT INTO tenants.password_links (tenant_id, token_hash, user_id, expires_at)
VALUES (@tenant_id, @token_hash, @user_id, @expires_at);

-- name: GetPasswordLink :one
-- A link that still works, with its user's e-mail.
SELECT l.user_id, l.expires_at, u.email
FROM tenants.password_links l
JOIN tenants.merchant_users u ON u.tenant_id = l.tenant_id AND u.id = l.user_id
WHERE l.tenant_id = @tenant_id AND l.token_hash = @token_hash AND l.used_at IS NULL AND l.expires_at > now()
  AND u.disabled_at IS NULL;

-- name: UsePasswordLink :one
-- Uses up a link that still works (once: a second use finds none).
UPDATE tenants.password_links SET used_at = now()
WHERE tenant_id = @tenant_id AND token_hash = @token_hash AND used_at IS NULL AND expires_at > now()
RETURNING user_id;

-- name: UseUserPasswordLinks :exec
UPDATE tenants.password_links SET used_at = now()
WHERE tenant_id = @tenant_id AND user_id = @user_id AND used_at IS NULL;

-- name: SetMerchantUserPassword :one
UPDATE tenants.merchant_users
SET password_hash = @password_hash, failed_attempts = 0, locked_until = NULL
WHERE tenant_id = @tenant_id AND id = @id AND disabled_at IS NULL
RETURNING *;

-- name: ListOpenPasswordLinks :many
-- The links not used yet (expired ones too), newest first: a user's
-- invitation is pending until one is used.
SELECT user_id, expires_at FROM tenants.password_links
WHERE tenant_id = @tenant_id AND used_at IS NULL
ORDER BY expires_at DESC;
