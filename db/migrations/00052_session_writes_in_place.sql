-- +goose Up
-- A purchase writes its checkout session five times (the create, two
-- updates, the claim, the settle), each a whole new version of a 1.5-2.3 KB
-- row (the documents stay inline: below 2 KB a row is neither compressed
-- nor toasted). Three of the four updates change status, which
-- sessions_by_status and the sweeps' partial indexes read, so they can
-- never be heap-only (HOT): each adds an entry to every index whose
-- predicate holds. The fourth (an update that keeps the status) can, but
-- at the default fillfactor (100) the page holding the session was often
-- full by then and its new version moved to another page, with an entry
-- in every index. Inserts now leave a fifth of each page (one version of
-- a session) for the updates of the sessions on it. Measured with bcpbench
-- (card purchases, 4 agents): 20-21 → 25 % of session updates heap-only,
-- the most the status changes allow. Only pages filled from now on keep
-- the room.
ALTER TABLE checkout.sessions SET (fillfactor = 80);

-- sessions_open_expiry served only the operator's ExpireCheckouts
-- (ListExpiredOpenSessions), yet took an entry with every insert and every
-- new version of an open session (~140 bytes of WAL each). That listing
-- now asks for the sessions the expiry can close (end() never closed a
-- completion in flight: its payment decides), which sessions_due_expiry
-- holds.
DROP INDEX checkout.sessions_open_expiry;

-- +goose Down
CREATE INDEX sessions_open_expiry ON checkout.sessions (tenant_id, expires_at)
  WHERE status NOT IN ('completed', 'canceled');
ALTER TABLE checkout.sessions RESET (fillfactor);
