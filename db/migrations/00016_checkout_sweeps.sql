-- +goose Up
-- Two periodic sweeps replace two durable jobs per checkout: one closes
-- open checkouts at their expiry (it was a job inserted with every
-- session), one settles completions nothing has settled a minute after
-- they started, e.g. when the process died after charging (it was a
-- safety-net job inserted with every completion). A create and the
-- completion's claim are now one statement each instead of a transaction
-- with a job insert, and nothing is worked later for the checkouts that
-- completed normally. The sweeps list due sessions of every tenant (ids
-- only) in the 'checkout_sweep' scope, then act on each in its own
-- tenant's scope; the policy below lets that scope read, never write.
ALTER TABLE checkout.sessions ADD COLUMN settle_after timestamptz;

CREATE INDEX sessions_due_expiry ON checkout.sessions (expires_at)
  WHERE status IN ('incomplete', 'requires_escalation', 'ready_for_complete');
CREATE INDEX sessions_due_settle ON checkout.sessions (settle_after)
  WHERE status = 'complete_in_progress' AND settle_after IS NOT NULL;

CREATE POLICY checkout_sweep ON checkout.sessions FOR SELECT
  USING (current_setting('app.scope', true) = 'checkout_sweep');

-- +goose Down
DROP POLICY checkout_sweep ON checkout.sessions;
DROP INDEX checkout.sessions_due_settle;
DROP INDEX checkout.sessions_due_expiry;
ALTER TABLE checkout.sessions DROP COLUMN settle_after;
