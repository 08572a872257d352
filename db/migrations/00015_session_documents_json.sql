-- +goose Up
-- A checkout session's request and state documents are written whole and
-- read whole by the checkout service; no query looks inside them. As jsonb
-- every write parsed each document into jsonb's binary form and every read
-- printed it back to text (several KB per statement, up to eight session
-- statements per purchase). As json PostgreSQL only checks that the text
-- is valid JSON on the way in and returns it as stored, byte for byte, in
-- the order the service wrote its keys.
ALTER TABLE checkout.sessions
  ALTER COLUMN request TYPE json USING request::json,
  ALTER COLUMN state TYPE json USING state::json;

-- +goose Down
ALTER TABLE checkout.sessions
  ALTER COLUMN request TYPE jsonb USING request::jsonb,
  ALTER COLUMN state TYPE jsonb USING state::jsonb;
