-- +goose Up
-- Idempotency keys are kept by the statement that writes the operation's
-- outcome (issue 23), not by commits of their own before and after it: a
-- keyed create, update or cancel stores its key and answer in the
-- statement that writes the checkout or cart; a completion claims its key
-- in the statement that claims the payment (the fence) and stores its
-- answer in the one that settles it. Each write calls keep_key with the
-- key (NULL: the request has none) and whether the write happened.
--
-- claim_token says which request holds a key in flight, so the request
-- that claimed it can store its answer and no other can.
ALTER TABLE checkout.idempotency_keys ADD COLUMN claim_token text NOT NULL DEFAULT '';

-- keep_key records the key of the request p_idem describes:
--   {"scope", "key", "hash" (hex SHA-256 of the request), "token" (the
--    request's own), "now" (timestamptz), "held" (boolean: this request
--    claimed the key in flight)}
-- as done with p_response (the answer to replay), or in flight when
-- p_response is NULL; it records nothing when p_wrote is false (the
-- outcome's write did not happen: nothing to answer yet). A request that
-- holds its key stores its answer (false if the key was taken over
-- meanwhile: its write stands, the key is the other request's). Any other
-- writes a new key, or takes over one whose holder died mid-request (in
-- flight with the same request for longer than the 2-minute lease: the
-- holder's process died, and a retry takes the key over). A key another
-- request holds or answered is not touched: that raises SQLSTATE BCK01,
-- so the statement's own write is rolled back with it (the request then
-- replays the stored answer, or is told the key is in flight or was used
-- for another request). Keys are kept 48 hours (the protocol
-- asks for at least 24).
-- +goose StatementBegin
CREATE FUNCTION checkout.keep_key(p_tenant uuid, p_idem jsonb, p_response bytea, p_wrote boolean) RETURNS boolean
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
GRANT EXECUTE ON FUNCTION checkout.keep_key(uuid, jsonb, bytea, boolean) TO bcp_app;

-- +goose Down
DROP FUNCTION checkout.keep_key(uuid, jsonb, bytea, boolean);
ALTER TABLE checkout.idempotency_keys DROP COLUMN claim_token;
