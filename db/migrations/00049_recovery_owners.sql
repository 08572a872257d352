-- +goose Up
-- Recovery in seconds (issue 32). Work a request leaves half-done when
-- its process dies — a completion's claim, a closed checkout's stock
-- release, a card charge or a Pix charge being created — names the
-- process incarnation that is doing it (internal/lease: an id that is
-- also the application_name of a PostgreSQL session the process holds
-- open, which PostgreSQL ends as soon as the process dies). Every process
-- hosting the service looks, every second and at start-up, for such work
-- whose owner has no session any more (or is itself, when the request
-- ended without finishing it) and finishes it: a completion is settled
-- from the payments service's record, a charge is resolved at the
-- processor by its key, a Pix charge's creation is resumed. The settle
-- and resolve sweeps' settle_after / resolve_after stay the backstop.
--
-- checkout.sessions.settle_owner is set by the claim (and by a close, for
-- its stock release) and cleared by the write that settles or releases
-- it. complete_key is the completion's idempotency key as keep_key reads
-- it (held): the settle that learns the outcome answers the key with it,
-- whoever settles, so a retry with the key gets the outcome instead of
-- request_in_flight until the key's 2-minute lease.
--
-- (IF EXISTS: the tables exist; sqlc reads this file with each service's
-- own migrations only, and skips the other service's table.)
ALTER TABLE IF EXISTS checkout.sessions
  ADD COLUMN settle_owner text,
  ADD COLUMN complete_key jsonb;
-- Every sessions column keeps ANALYZE's sample small (00022).
ALTER TABLE IF EXISTS checkout.sessions
  ALTER COLUMN settle_owner SET STATISTICS 10,
  ALTER COLUMN complete_key SET STATISTICS 10;
CREATE INDEX sessions_owned ON checkout.sessions (settle_owner)
  WHERE settle_owner IS NOT NULL AND status IN ('complete_in_progress', 'canceled');

-- payments.attempts.owner is set at the insert of a card or Pix attempt
-- by the StartPayment that goes on to charge (or create the Pix charge)
-- and cleared by the attempt's next write.
ALTER TABLE IF EXISTS payments.attempts ADD COLUMN owner text;
CREATE INDEX attempts_owned ON payments.attempts (owner)
  WHERE owner IS NOT NULL AND status = 'pending';

-- +goose Down
DROP INDEX payments.attempts_owned;
ALTER TABLE payments.attempts DROP COLUMN owner;
DROP INDEX checkout.sessions_owned;
ALTER TABLE checkout.sessions DROP COLUMN complete_key, DROP COLUMN settle_owner;
