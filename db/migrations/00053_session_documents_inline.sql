-- +goose Up
-- A purchase's claim and settle each wrote its session's state twice over
-- (issue 35), measured with pg_walinspect on one card purchase:
--
-- 1. The claim's and the settle's row (state 2.2 KB, lz4 1.35 KB, and
--    the small columns) stayed above the 2 KB PostgreSQL toasts at once
--    the state was compressed, so the state went out of line: a TOAST
--    row and a TOAST index entry per write (1 378 + 64 bytes of WAL), the
--    previous version's TOAST row deleted (54), a TOAST index descent and
--    a TOAST page on every write and every read. With every variable
--    column stored MAIN, PostgreSQL still compresses the documents (the
--    largest first, only until the row fits) but keeps them in the row
--    unless a row passes a whole page; nothing reads a session without
--    its documents. Only versions written from now on; stored values stay
--    readable as they are.
-- 2. The settle of a completed checkout stored its idempotent answer
--    (the checkout as the session's state, 1.4 KB of WAL after lz4) in
--    checkout.idempotency_keys as well as in the session. A completed
--    session never changes again, so the key keeps the session's id
--    (answer_checkout) instead of a copy, and a replay reads the
--    answer from the session (GetIdempotencyKey). keep_key stores the id
--    its caller puts in p_idem ("answer"), with the state 'answered'; every
--    other answer is stored as before. A process of the release still
--    running while the pods roll takes an 'answered' key for one in flight
--    (request_in_flight: the agent retries, and a new process replays it),
--    never for an empty answer.
ALTER TABLE checkout.sessions
  ALTER COLUMN id SET STORAGE MAIN,
  ALTER COLUMN status SET STORAGE MAIN,
  ALTER COLUMN currency SET STORAGE MAIN,
  ALTER COLUMN buyer_email SET STORAGE MAIN,
  ALTER COLUMN agent_profile_url SET STORAGE MAIN,
  ALTER COLUMN capabilities SET STORAGE MAIN,
  ALTER COLUMN request SET STORAGE MAIN,
  ALTER COLUMN state SET STORAGE MAIN,
  ALTER COLUMN payment_attempt_id SET STORAGE MAIN,
  ALTER COLUMN order_id SET STORAGE MAIN,
  ALTER COLUMN order_webhook_url SET STORAGE MAIN,
  ALTER COLUMN base_url SET STORAGE MAIN,
  ALTER COLUMN ap2_mandate SET STORAGE MAIN,
  ALTER COLUMN automatic_discount_ids SET STORAGE MAIN,
  ALTER COLUMN settle_owner SET STORAGE MAIN,
  ALTER COLUMN complete_key SET STORAGE MAIN;

ALTER TABLE checkout.idempotency_keys ADD COLUMN answer_checkout text;
ALTER TABLE checkout.idempotency_keys DROP CONSTRAINT idempotency_keys_state_check,
  ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('in_flight', 'done', 'answered'));

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION checkout.keep_key(p_tenant uuid, p_idem jsonb, p_response bytea, p_wrote boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
BEGIN
  IF p_idem IS NULL OR NOT p_wrote THEN
    RETURN false;
  END IF;
  v_now := (p_idem->>'now')::timestamptz;
  IF (p_idem->>'held')::boolean THEN
    -- The answer of the request that claimed the key: a plain update
    -- (ON CONFLICT's speculative insertion costs more), which finds
    -- nothing if the key was taken over meanwhile.
    UPDATE checkout.idempotency_keys
    SET state = CASE WHEN p_idem->>'answer' IS NULL THEN 'done' ELSE 'answered' END, response = p_response, answer_checkout = p_idem->>'answer'
    WHERE tenant_id = p_tenant AND scope = p_idem->>'scope' AND key = p_idem->>'key'
      AND state = 'in_flight' AND claim_token = p_idem->>'token';
    RETURN FOUND;
  END IF;
  INSERT INTO checkout.idempotency_keys AS k (tenant_id, scope, key, request_hash, state, response, answer_checkout, claim_token, created_at, expires_at)
  VALUES (p_tenant, p_idem->>'scope', p_idem->>'key', decode(p_idem->>'hash', 'hex'),
          CASE WHEN p_idem->>'answer' IS NOT NULL THEN 'answered' WHEN p_response IS NULL THEN 'in_flight' ELSE 'done' END, p_response, p_idem->>'answer',
          p_idem->>'token', v_now, v_now + interval '48 hours')
  ON CONFLICT (tenant_id, scope, key) DO UPDATE
    SET state = EXCLUDED.state, response = EXCLUDED.response, answer_checkout = EXCLUDED.answer_checkout,
        claim_token = EXCLUDED.claim_token, created_at = EXCLUDED.created_at
    WHERE k.state = 'in_flight' AND k.request_hash = EXCLUDED.request_hash AND k.created_at < v_now - interval '2 minutes';
  IF FOUND THEN
    RETURN true;
  END IF;
  RAISE EXCEPTION 'idempotency key taken' USING ERRCODE = 'BCK01';
END $$;
-- +goose StatementEnd

-- +goose Down
-- Answers kept by reference get their copy back (a CheckoutResult in
-- protobuf: field 1 the checkout's JSON, field 3 its status, each after
-- its length as a varint) before the column goes.
-- +goose StatementBegin
CREATE FUNCTION checkout.proto_varint(n integer) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN n < 128 THEN set_byte('\x00'::bytea, 0, n)
    WHEN n < 16384 THEN set_byte(set_byte('\x0000'::bytea, 0, (n & 127) | 128), 1, n >> 7)
    ELSE set_byte(set_byte(set_byte('\x000000'::bytea, 0, (n & 127) | 128), 1, ((n >> 7) & 127) | 128), 2, n >> 14) END
$$;
-- +goose StatementEnd
ALTER TABLE checkout.idempotency_keys NO FORCE ROW LEVEL SECURITY;
ALTER TABLE checkout.sessions NO FORCE ROW LEVEL SECURITY;
UPDATE checkout.idempotency_keys k SET state = 'done', response =
    '\x0a'::bytea || checkout.proto_varint(octet_length(convert_to(s.state::text, 'UTF8'))) || convert_to(s.state::text, 'UTF8')
    || '\x1a'::bytea || checkout.proto_varint(octet_length(s.status)) || convert_to(s.status, 'UTF8')
  FROM checkout.sessions s
  WHERE k.state = 'answered' AND s.tenant_id = k.tenant_id AND s.id = k.answer_checkout;
-- (a key whose checkout is gone has no answer to give back)
DELETE FROM checkout.idempotency_keys WHERE state = 'answered';
ALTER TABLE checkout.sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE checkout.idempotency_keys FORCE ROW LEVEL SECURITY;
DROP FUNCTION checkout.proto_varint(integer);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION checkout.keep_key(p_tenant uuid, p_idem jsonb, p_response bytea, p_wrote boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
BEGIN
  IF p_idem IS NULL OR NOT p_wrote THEN
    RETURN false;
  END IF;
  v_now := (p_idem->>'now')::timestamptz;
  IF (p_idem->>'held')::boolean THEN
    UPDATE checkout.idempotency_keys SET state = 'done', response = p_response
    WHERE tenant_id = p_tenant AND scope = p_idem->>'scope' AND key = p_idem->>'key'
      AND state = 'in_flight' AND claim_token = p_idem->>'token';
    RETURN FOUND;
  END IF;
  INSERT INTO checkout.idempotency_keys AS k (tenant_id, scope, key, request_hash, state, response, claim_token, created_at, expires_at)
  VALUES (p_tenant, p_idem->>'scope', p_idem->>'key', decode(p_idem->>'hash', 'hex'),
          CASE WHEN p_response IS NULL THEN 'in_flight' ELSE 'done' END, p_response, p_idem->>'token',
          v_now, v_now + interval '48 hours')
  ON CONFLICT (tenant_id, scope, key) DO UPDATE
    SET state = EXCLUDED.state, response = EXCLUDED.response, claim_token = EXCLUDED.claim_token, created_at = EXCLUDED.created_at
    WHERE k.state = 'in_flight' AND k.request_hash = EXCLUDED.request_hash AND k.created_at < v_now - interval '2 minutes';
  IF FOUND THEN
    RETURN true;
  END IF;
  RAISE EXCEPTION 'idempotency key taken' USING ERRCODE = 'BCK01';
END $$;
-- +goose StatementEnd
ALTER TABLE checkout.idempotency_keys DROP COLUMN answer_checkout,
  DROP CONSTRAINT idempotency_keys_state_check,
  ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('in_flight', 'done'));

ALTER TABLE checkout.sessions
  ALTER COLUMN id SET STORAGE EXTENDED,
  ALTER COLUMN status SET STORAGE EXTENDED,
  ALTER COLUMN currency SET STORAGE EXTENDED,
  ALTER COLUMN buyer_email SET STORAGE EXTENDED,
  ALTER COLUMN agent_profile_url SET STORAGE EXTENDED,
  ALTER COLUMN capabilities SET STORAGE EXTENDED,
  ALTER COLUMN request SET STORAGE EXTENDED,
  ALTER COLUMN state SET STORAGE EXTENDED,
  ALTER COLUMN payment_attempt_id SET STORAGE EXTENDED,
  ALTER COLUMN order_id SET STORAGE EXTENDED,
  ALTER COLUMN order_webhook_url SET STORAGE EXTENDED,
  ALTER COLUMN base_url SET STORAGE EXTENDED,
  ALTER COLUMN ap2_mandate SET STORAGE EXTENDED,
  ALTER COLUMN automatic_discount_ids SET STORAGE EXTENDED,
  ALTER COLUMN settle_owner SET STORAGE EXTENDED,
  ALTER COLUMN complete_key SET STORAGE EXTENDED;
