-- +goose Up
-- Issue 31: notifications are hints and can be lost; besides polling each
-- pending charge, the resolve sweep lists the Pix each handler's account
-- received (GET /pix?inicio&fim) while it is in use, and reconciles those
-- of our charges that no notification brought. list_until: keep listing
-- until then (a Pix charge pushes it two days ahead); listed_until: the
-- end of the last window listed.
ALTER TABLE payments.hooks ADD COLUMN list_until timestamptz;
ALTER TABLE payments.hooks ADD COLUMN listed_until timestamptz;
-- The sweep finds the hooks to list across tenants, read-only, like the
-- attempts and receipts it resolves.
CREATE POLICY payments_sweep ON payments.hooks FOR SELECT
  USING (current_setting('app.scope', true) = 'payments_sweep');

-- +goose Down
DROP POLICY payments_sweep ON payments.hooks;
ALTER TABLE payments.hooks DROP COLUMN listed_until;
ALTER TABLE payments.hooks DROP COLUMN list_until;
