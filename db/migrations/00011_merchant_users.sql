-- +goose Up
-- Merchant users of the admin web and their sessions (issue 6). Owned by
-- the tenants service; the admin web reaches them only through the
-- tenants connect API.
--
-- Passwords are argon2id PHC strings ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
-- Repeated failures lock the user with a growing delay (locked_until).
CREATE TABLE tenants.merchant_users (
  tenant_id       uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  id              text NOT NULL,
  email           text NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
  password_hash   text NOT NULL,
  role            text NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'staff')),
  failed_attempts integer NOT NULL DEFAULT 0,
  locked_until    timestamptz,
  last_login_at   timestamptz,
  disabled_at     timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX merchant_users_email ON tenants.merchant_users (tenant_id, email);

-- Sessions: only the SHA-256 of the 256-bit random cookie value is stored.
CREATE TABLE tenants.merchant_sessions (
  tenant_id    uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  token_hash   bytea NOT NULL CHECK (length(token_hash) = 32),
  user_id      text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, token_hash),
  FOREIGN KEY (tenant_id, user_id) REFERENCES tenants.merchant_users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merchant_sessions_user ON tenants.merchant_sessions (tenant_id, user_id);

-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['merchant_users', 'merchant_sessions'] LOOP
    EXECUTE format('ALTER TABLE tenants.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE tenants.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY tenant_isolation ON tenants.%I
      USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
      WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)$p$, t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE tenants.merchant_sessions, tenants.merchant_users;
