-- +goose Up
-- Issue 31. Notifications are hints and can be lost; besides polling each
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

-- A card attempt waiting for 3-D Secure is asked about by the resolve
-- sweep too (the processor tells nobody when the buyer answers), and a
-- Pix attempt that ended otherwise than paid is taken once more, to make
-- sure its charge ended too (a creation that landed after a cancel, a
-- removal that failed).
DROP INDEX payments.attempts_due_resolve;
CREATE INDEX attempts_due_resolve ON payments.attempts (resolve_after)
  WHERE resolve_after IS NOT NULL
    AND (status IN ('pending', 'requires_action') OR (txid IS NOT NULL AND status IN ('canceled', 'failed', 'expired')));

-- +goose Down
DROP INDEX payments.attempts_due_resolve;
CREATE INDEX attempts_due_resolve ON payments.attempts (resolve_after)
  WHERE status = 'pending' AND resolve_after IS NOT NULL;
DROP POLICY payments_sweep ON payments.hooks;
ALTER TABLE payments.hooks DROP COLUMN listed_until;
ALTER TABLE payments.hooks DROP COLUMN list_until;
