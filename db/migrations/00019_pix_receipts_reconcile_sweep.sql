-- +goose Up
-- A stored Pix notification is reconciled against the PSP in the webhook's
-- own request; the resolve sweep is its backstop (a process that died
-- before reconciling, a PSP that did not answer or does not confirm the
-- Pix yet), once reconcile_after has passed, instead of a durable job
-- inserted with every receipt. reconcile_tries counts the failed tries:
-- after five the receipt is left unconfirmed and the merchant alerted.
-- The sweep lists due receipts of every tenant in the 'payments_sweep'
-- scope, which the policy below lets read, never write.
ALTER TABLE payments.pix_receipts ADD COLUMN reconcile_after timestamptz;
ALTER TABLE payments.pix_receipts ADD COLUMN reconcile_tries integer NOT NULL DEFAULT 0;

CREATE INDEX pix_receipts_due_reconcile ON payments.pix_receipts (reconcile_after)
  WHERE status = 'received' AND reconcile_after IS NOT NULL;

CREATE POLICY payments_sweep ON payments.pix_receipts FOR SELECT
  USING (current_setting('app.scope', true) = 'payments_sweep');

-- +goose Down
DROP POLICY payments_sweep ON payments.pix_receipts;
DROP INDEX payments.pix_receipts_due_reconcile;
ALTER TABLE payments.pix_receipts DROP COLUMN reconcile_tries;
ALTER TABLE payments.pix_receipts DROP COLUMN reconcile_after;
