-- +goose Up
-- Onboarding (issue 34): the go-live checklist and the merchant's
-- one-time password link.
--
-- handler_tests keeps the last connection test of each payment handler
-- (payments' TestHandler records it through the tenants service), so the
-- checklist can say "passed at …" without calling the PSP. A row of its
-- own, not columns of payment_handlers: a test is not a registry change
-- and must not fire notify_change (every cache would drop the tenant). A
-- change to the handler deletes its test (setPaymentHandler): a result
-- says nothing about settings it did not see.
CREATE TABLE tenants.handler_tests (
  tenant_id  uuid NOT NULL,
  handler_id text NOT NULL,
  ok         boolean NOT NULL,
  code       text NOT NULL DEFAULT '',
  message    text NOT NULL DEFAULT '',
  tested_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, handler_id),
  FOREIGN KEY (tenant_id, handler_id) REFERENCES tenants.payment_handlers (tenant_id, id) ON DELETE CASCADE
);

-- password_links are the one-time links an invitation gives a merchant
-- user to choose a password (bcpctl user invite): only the SHA-256 of the
-- 256-bit token is stored; a link works once (used_at) and until
-- expires_at. Setting the password through one uses up every link of the
-- user.
CREATE TABLE tenants.password_links (
  tenant_id  uuid NOT NULL,
  token_hash bytea NOT NULL CHECK (octet_length(token_hash) = 32),
  user_id    text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at    timestamptz,
  PRIMARY KEY (tenant_id, token_hash),
  FOREIGN KEY (tenant_id, user_id) REFERENCES tenants.merchant_users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX password_links_user ON tenants.password_links (tenant_id, user_id);

-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['handler_tests', 'password_links'] LOOP
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
DROP TABLE tenants.password_links, tenants.handler_tests;
