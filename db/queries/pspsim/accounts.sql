-- PSP simulator: accounts and OAuth2 tokens.

-- name: UpsertAccount :one
-- Provisioning (scope pspsim): a new reference makes an account; a known
-- one keeps its account, client_id and key and gets the new credentials
-- and details. created says which.
INSERT INTO pspsim.accounts (tenant_id, client_id, reference, client_secret_hash, cert_sha256, nome, cidade, cnpj, chave, scopes, created_at, updated_at)
VALUES (@tenant_id, @client_id, @reference, @client_secret_hash, @cert_sha256, @nome, @cidade, @cnpj, @chave, @scopes, @now, @now)
ON CONFLICT (reference) DO UPDATE SET
  client_secret_hash = EXCLUDED.client_secret_hash, cert_sha256 = EXCLUDED.cert_sha256,
  nome = EXCLUDED.nome, cidade = EXCLUDED.cidade, scopes = EXCLUDED.scopes, updated_at = EXCLUDED.updated_at
RETURNING tenant_id, client_id, reference, nome, cidade, cnpj, chave, scopes, created_at, updated_at, (xmax = 0)::boolean AS created;

-- name: AccountByClientID :one
-- Scope pspsim: the token endpoint and the control API find the account.
SELECT * FROM pspsim.accounts WHERE client_id = @client_id;

-- name: AccountByCert :one
-- Scope pspsim: which account an API client's certificate was issued to.
SELECT tenant_id FROM pspsim.accounts WHERE cert_sha256 = @cert_sha256;

-- name: GetAccount :one
SELECT * FROM pspsim.accounts WHERE tenant_id = @tenant_id;

-- name: InsertToken :exec
INSERT INTO pspsim.tokens (tenant_id, token_hash, scopes, expires_at, created_at)
VALUES (@tenant_id, @token_hash, @scopes, @expires_at, @created_at);

-- name: DeleteExpiredTokens :exec
DELETE FROM pspsim.tokens WHERE tenant_id = @tenant_id AND expires_at <= @now;

-- name: DeleteTokens :execrows
DELETE FROM pspsim.tokens WHERE tenant_id = @tenant_id;

-- name: Authenticate :one
-- An API call: the token of the account whose current certificate the
-- client presented, with what the handlers need of the account.
SELECT t.scopes, t.expires_at, a.chave, a.nome, a.cidade, a.cnpj
FROM pspsim.tokens t JOIN pspsim.accounts a ON a.tenant_id = t.tenant_id
WHERE t.tenant_id = @tenant_id AND t.token_hash = @token_hash AND a.cert_sha256 = @cert_sha256;

-- name: AccountByReference :one
-- Scope pspsim: provisioning finds the account it rotates.
SELECT * FROM pspsim.accounts WHERE reference = @reference;
