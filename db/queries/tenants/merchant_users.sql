-- name: InsertMerchantUser :one
INSERT INTO tenants.merchant_users (tenant_id, id, email, password_hash, role)
VALUES (@tenant_id, @id, @email, @password_hash, @role)
RETURNING *;

-- name: GetMerchantUserByEmail :one
SELECT * FROM tenants.merchant_users WHERE tenant_id = @tenant_id AND email = @email FOR UPDATE;

-- name: GetMerchantUser :one
SELECT * FROM tenants.merchant_users WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListMerchantUsers :many
SELECT * FROM tenants.merchant_users WHERE tenant_id = @tenant_id ORDER BY created_at, id;

-- name: RecordMerchantLoginFailure :one
UPDATE tenants.merchant_users
SET failed_attempts = failed_attempts + 1, locked_until = sqlc.narg(locked_until)
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: RecordMerchantLoginSuccess :exec
UPDATE tenants.merchant_users
SET failed_attempts = 0, locked_until = NULL, last_login_at = now(), password_hash = @password_hash
WHERE tenant_id = @tenant_id AND id = @id;

-- name: InsertMerchantSession :exec
INSERT INTO tenants.merchant_sessions (tenant_id, token_hash, user_id, expires_at)
VALUES (@tenant_id, @token_hash, @user_id, @expires_at);

-- name: TouchMerchantSession :one
-- The session and its user, when neither is expired nor disabled.
UPDATE tenants.merchant_sessions s SET last_seen_at = now()
FROM tenants.merchant_users u
WHERE s.tenant_id = @tenant_id AND s.token_hash = @token_hash AND s.expires_at > now()
  AND u.tenant_id = s.tenant_id AND u.id = s.user_id AND u.disabled_at IS NULL
  AND s.last_seen_at > now() - make_interval(secs => @idle_seconds::double precision)
RETURNING u.id, u.email, u.role, s.expires_at;

-- name: DeleteMerchantSession :execrows
DELETE FROM tenants.merchant_sessions WHERE tenant_id = @tenant_id AND token_hash = @token_hash;

-- name: DeleteExpiredMerchantSessions :execrows
DELETE FROM tenants.merchant_sessions WHERE tenant_id = @tenant_id AND expires_at <= now();
