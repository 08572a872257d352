-- +goose Up
-- Open checkouts are closed at their expiry by one periodic sweep instead
-- of a durable job per checkout: a create is one statement instead of a
-- transaction with a job insert, and nothing is worked for the checkouts
-- that completed. The sweep lists due sessions of every tenant (ids only)
-- in the 'checkout_expiry' scope, then closes each in its own tenant's
-- scope; the policy below lets that scope read, never write.
CREATE INDEX sessions_due_expiry ON checkout.sessions (expires_at)
  WHERE status IN ('incomplete', 'requires_escalation', 'ready_for_complete');

CREATE POLICY expiry_sweep ON checkout.sessions FOR SELECT
  USING (current_setting('app.scope', true) = 'checkout_expiry');

-- +goose Down
DROP POLICY expiry_sweep ON checkout.sessions;
DROP INDEX checkout.sessions_due_expiry;
