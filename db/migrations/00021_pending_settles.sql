-- +goose Up
-- The payments service now tells checkout of a decided Pix with a call
-- after its commit instead of a durable job, and checkout's settle sweep
-- keeps looking at every completion still in progress (it used to clear
-- settle_after after its first look and wait for the payments service's
-- job). Completions left in progress by the old sweep get a settle_after
-- again, so a Pix paid to them after the upgrade is settled even if that
-- call is lost. The table's row security is forced; its owner lifts it
-- for this one statement's transaction.
ALTER TABLE checkout.sessions NO FORCE ROW LEVEL SECURITY;
UPDATE checkout.sessions SET settle_after = now()
WHERE status = 'complete_in_progress' AND settle_after IS NULL AND payment_attempt_id IS NOT NULL;
ALTER TABLE checkout.sessions FORCE ROW LEVEL SECURITY;

-- +goose Down
-- Nothing to undo: a settle_after on a completion in progress is what the
-- settle sweep expects either way.
SELECT 1;
