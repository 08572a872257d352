-- +goose Up
-- Every create_checkout inserts a session, and the table is read by key
-- (tenant and id, status, creation time, the sweeps' partial indexes), so
-- its plans need coarse statistics only. ANALYZE samples 300 rows per
-- point of the largest statistics target: at the default (100) it reads
-- 30 000 rows of nineteen columns, two of them JSON documents, and took
-- 0.3 s of one core on a 27 000-row table; autovacuum runs it every time
-- the table grows by a tenth, and on two cores that stalls the requests
-- queued behind it. At 10 it samples 3 000 rows (20-28 ms). Every column
-- must be lowered: the largest target sets the sample.
ALTER TABLE checkout.sessions
  ALTER COLUMN tenant_id SET STATISTICS 10,
  ALTER COLUMN id SET STATISTICS 10,
  ALTER COLUMN status SET STATISTICS 10,
  ALTER COLUMN currency SET STATISTICS 10,
  ALTER COLUMN total SET STATISTICS 10,
  ALTER COLUMN buyer_email SET STATISTICS 10,
  ALTER COLUMN agent_profile_url SET STATISTICS 10,
  ALTER COLUMN capabilities SET STATISTICS 10,
  ALTER COLUMN request SET STATISTICS 10,
  ALTER COLUMN state SET STATISTICS 10,
  ALTER COLUMN version SET STATISTICS 10,
  ALTER COLUMN expires_at SET STATISTICS 10,
  ALTER COLUMN created_at SET STATISTICS 10,
  ALTER COLUMN updated_at SET STATISTICS 10,
  ALTER COLUMN payment_attempt_id SET STATISTICS 10,
  ALTER COLUMN order_id SET STATISTICS 10,
  ALTER COLUMN order_webhook_url SET STATISTICS 10,
  ALTER COLUMN base_url SET STATISTICS 10,
  ALTER COLUMN settle_after SET STATISTICS 10;

-- +goose Down
ALTER TABLE checkout.sessions
  ALTER COLUMN tenant_id SET STATISTICS -1,
  ALTER COLUMN id SET STATISTICS -1,
  ALTER COLUMN status SET STATISTICS -1,
  ALTER COLUMN currency SET STATISTICS -1,
  ALTER COLUMN total SET STATISTICS -1,
  ALTER COLUMN buyer_email SET STATISTICS -1,
  ALTER COLUMN agent_profile_url SET STATISTICS -1,
  ALTER COLUMN capabilities SET STATISTICS -1,
  ALTER COLUMN request SET STATISTICS -1,
  ALTER COLUMN state SET STATISTICS -1,
  ALTER COLUMN version SET STATISTICS -1,
  ALTER COLUMN expires_at SET STATISTICS -1,
  ALTER COLUMN created_at SET STATISTICS -1,
  ALTER COLUMN updated_at SET STATISTICS -1,
  ALTER COLUMN payment_attempt_id SET STATISTICS -1,
  ALTER COLUMN order_id SET STATISTICS -1,
  ALTER COLUMN order_webhook_url SET STATISTICS -1,
  ALTER COLUMN base_url SET STATISTICS -1,
  ALTER COLUMN settle_after SET STATISTICS -1;
