-- +goose Up
-- Issue 31: the payments service reaches every PSP and card processor
-- through its wire client. A sandbox handler without settings of its own
-- gets an account at the PSP simulator (the pspsim role), opened once and
-- kept here: its credentials sealed under the master key (AAD binds tenant
-- and handler), the simulator's client id (its sandbox controls: "Simular
-- pagamento") and the account's Pix key.
CREATE TABLE payments.sandbox_accounts (
  tenant_id      uuid NOT NULL,
  handler_id     text NOT NULL,
  client_id      text NOT NULL,
  chave          text NOT NULL CHECK (length(chave) BETWEEN 1 AND 77),
  sealed_secrets bytea NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, handler_id)
);
ALTER TABLE payments.sandbox_accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE payments.sandbox_accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON payments.sandbox_accounts
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- Webhooks are authenticated by the PSP's client certificate (or the
-- scheme its settings name), no longer by a secret shared with an
-- in-process simulator: new hooks have none.
ALTER TABLE payments.hooks ALTER COLUMN sealed_secret DROP NOT NULL;

-- +goose Down
DELETE FROM payments.hooks WHERE sealed_secret IS NULL;
ALTER TABLE payments.hooks ALTER COLUMN sealed_secret SET NOT NULL;
DROP TABLE payments.sandbox_accounts;
