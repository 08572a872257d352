-- +goose Up
-- A card attempt whose charge call never answered (the process died, the
-- processor timed out) is resolved from the processor's record by a
-- periodic sweep once its resolve_after has passed, instead of by a
-- durable job inserted with every card attempt (one statement less in
-- every card payment's first transaction, and no job worked later for the
-- charges that answered). The sweep lists due attempts of every tenant
-- (ids only) in the 'payments_sweep' scope and resolves each in its own
-- tenant's scope; the policy below lets that scope read, never write.
ALTER TABLE payments.attempts ADD COLUMN resolve_after timestamptz;

CREATE INDEX attempts_due_resolve ON payments.attempts (resolve_after)
  WHERE status = 'pending' AND resolve_after IS NOT NULL;

CREATE POLICY payments_sweep ON payments.attempts FOR SELECT
  USING (current_setting('app.scope', true) = 'payments_sweep');

-- +goose Down
DROP POLICY payments_sweep ON payments.attempts;
DROP INDEX payments.attempts_due_resolve;
ALTER TABLE payments.attempts DROP COLUMN resolve_after;
