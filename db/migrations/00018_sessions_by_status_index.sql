-- +goose Up
-- sessions_by_status indexed updated_at, which every session write
-- changes, so no write could be a HOT update and each one added an entry
-- to this index too; no query orders or filters by updated_at. The
-- admin's list filters by status and pages by id (ListSessions), which
-- (tenant_id, status, id) serves directly. Measured with bcpbench (one
-- agent, card purchases): session reads 0.26–0.67 → 0.09–0.10 ms and
-- updates 0.52–1.03 → 0.19–0.21 ms of PostgreSQL execution, PostgreSQL CPU
-- per purchase 11.1–12.2 → 7.1 ms (docs/performance.md, round 4).
DROP INDEX checkout.sessions_by_status;
CREATE INDEX sessions_by_status ON checkout.sessions (tenant_id, status, id DESC);

-- +goose Down
DROP INDEX checkout.sessions_by_status;
CREATE INDEX sessions_by_status ON checkout.sessions (tenant_id, status, updated_at DESC);
