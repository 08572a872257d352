-- +goose Up
-- The settle sweep also finishes closed checkouts whose stock release did
-- not confirm (settle_after stays set on a canceled session until it does).
DROP INDEX checkout.sessions_due_settle;
CREATE INDEX sessions_due_settle ON checkout.sessions (settle_after)
  WHERE settle_after IS NOT NULL AND status IN ('complete_in_progress', 'canceled');

-- +goose Down
DROP INDEX checkout.sessions_due_settle;
CREATE INDEX sessions_due_settle ON checkout.sessions (settle_after)
  WHERE status = 'complete_in_progress' AND settle_after IS NOT NULL;
