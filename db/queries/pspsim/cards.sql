-- Card simulator (sim/pspsim/cardsim): a Stripe-compatible subset.

-- name: CardAccountByKey :one
-- Scope pspsim: the account whose secret key hashes to this.
SELECT tenant_id FROM pspsim.accounts WHERE stripe_key_hash = @stripe_key_hash;

-- name: SetCardKey :execrows
-- Provisioning: the new secret key of the account, as its hash.
UPDATE pspsim.accounts SET stripe_key_hash = @stripe_key_hash, updated_at = @now WHERE tenant_id = @tenant_id;

-- name: CardTryLockKey :one
-- Stripe answers 409 idempotency_key_in_use while another request with the
-- key runs: the transaction that serves a key holds this lock.
SELECT pg_try_advisory_xact_lock(hashtextextended('pspsim.card_idempotency/' || sqlc.arg(tenant_id)::uuid::text || '/' || @key::text, 0))::boolean;

-- name: CardClaimKey :one
-- The first request with a key claims it (claimed = true) and saves its
-- answer later in the same transaction (CardSaveAnswer); a later one gets
-- the saved request and answer. No row: a concurrent claim committed after
-- the snapshot of this statement (answer 409; a retry finds it).
WITH ins AS (
  INSERT INTO pspsim.card_idempotency (tenant_id, key, method, path, fingerprint, request_id, created_at)
  VALUES (@tenant_id, @key, @method, @path, @fingerprint, @request_id, @now)
  ON CONFLICT (tenant_id, key) DO NOTHING
  RETURNING method, path, fingerprint, request_id, status, body
)
SELECT true AS claimed, method, path, fingerprint, request_id, status, body FROM ins
UNION ALL
SELECT false, k.method, k.path, k.fingerprint, k.request_id, k.status, k.body FROM pspsim.card_idempotency k
WHERE k.tenant_id = @tenant_id AND k.key = @key AND NOT EXISTS (SELECT 1 FROM ins);

-- name: CardSaveAnswer :exec
UPDATE pspsim.card_idempotency SET status = @status, body = @body WHERE tenant_id = @tenant_id AND key = @key;

-- name: CardTokenPaid :one
-- Whether a card token paid (or waits for 3-D Secure) in some intent.
SELECT EXISTS (
  SELECT 1 FROM pspsim.card_intents
  WHERE tenant_id = @tenant_id AND token_hash = @token_hash
    AND status IN ('requires_action', 'processing', 'requires_capture', 'succeeded')
)::boolean;

-- name: CardInsertPaymentMethod :one
INSERT INTO pspsim.card_payment_methods (tenant_id, id, token_hash, brand, last4, metadata, created_at)
VALUES (@tenant_id, @id, @token_hash, @brand, @last4, @metadata, @created_at)
RETURNING *;

-- name: CardGetPaymentMethod :one
SELECT * FROM pspsim.card_payment_methods WHERE tenant_id = @tenant_id AND id = @id;

-- name: CardInsertIntent :one
-- A new intent, in one statement. With check_token, a token that already
-- paid (or waits for 3-D Secure) in another intent inserts nothing (no
-- row: token_already_used), and the partial unique index
-- card_intents_token stops a concurrent second payer the same way.
INSERT INTO pspsim.card_intents (
  tenant_id, id, idempotency_key, client_secret, amount, currency, status, capture_method, payment_method,
  card_brand, card_last4, token_hash, payment_method_types, automatic_payment_methods, description, return_url,
  metadata, decline_code, last_payment_error, latest_charge, amount_received, created_at, updated_at)
SELECT @tenant_id, @id, sqlc.narg(idempotency_key), @client_secret, @amount, @currency, @status, @capture_method,
  sqlc.narg(payment_method), @card_brand, @card_last4, sqlc.narg(token_hash), @payment_method_types,
  sqlc.narg(automatic_payment_methods), sqlc.narg(description), sqlc.narg(return_url), @metadata, @decline_code,
  sqlc.narg(last_payment_error), sqlc.narg(latest_charge), @amount_received, @created_at, @created_at
WHERE NOT @check_token::boolean OR NOT EXISTS (
  SELECT 1 FROM pspsim.card_intents p
  WHERE p.tenant_id = @tenant_id AND p.token_hash = sqlc.narg(token_hash)
    AND p.status IN ('requires_action', 'processing', 'requires_capture', 'succeeded')
)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: CardGetIntent :one
SELECT * FROM pspsim.card_intents WHERE tenant_id = @tenant_id AND id = @id;

-- name: CardLockIntent :one
SELECT * FROM pspsim.card_intents WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: CardFindIntent :one
-- Scope pspsim: the 3-D Secure page knows only the id of the intent.
SELECT * FROM pspsim.card_intents WHERE id = @id;

-- name: CardCancelIntent :one
-- Cancels an intent in a state Stripe lets cancel; no row otherwise.
UPDATE pspsim.card_intents SET status = 'canceled', cancellation_reason = sqlc.narg(cancellation_reason),
  canceled_at = @now::timestamptz, updated_at = @now::timestamptz
WHERE tenant_id = @tenant_id AND id = @id
  AND status IN ('requires_payment_method', 'requires_capture', 'requires_confirmation', 'requires_action', 'processing')
RETURNING *;

-- name: CardAuthenticate :one
-- The answer of the buyer to the 3-D Secure challenge of an intent still
-- waiting for it (no row otherwise): approved takes the money, denied
-- sends the intent back to requires_payment_method.
UPDATE pspsim.card_intents SET
  status = CASE WHEN @approve::boolean THEN 'succeeded' ELSE 'requires_payment_method' END,
  amount_received = CASE WHEN @approve::boolean THEN amount ELSE 0 END,
  latest_charge = @latest_charge,
  decline_code = @decline_code,
  last_payment_error = sqlc.narg(last_payment_error),
  updated_at = @now
WHERE tenant_id = @tenant_id AND id = @id AND status = 'requires_action'
RETURNING *;

-- name: CardAddRefunded :exec
UPDATE pspsim.card_intents SET amount_refunded = amount_refunded + @amount, updated_at = @now
WHERE tenant_id = @tenant_id AND id = @id;

-- name: CardInsertRefund :one
INSERT INTO pspsim.card_refunds (tenant_id, id, payment_intent, charge, amount, currency, reason, metadata, idempotency_key, created_at)
VALUES (@tenant_id, @id, @payment_intent, @charge, @amount, @currency, sqlc.narg(reason), @metadata, sqlc.narg(idempotency_key), @created_at)
RETURNING *;

-- name: CardIntentSeq :one
SELECT seq FROM pspsim.card_intents WHERE tenant_id = @tenant_id AND id = @id;

-- name: CardSearchIntents :many
-- Intents whose metadata holds the pairs of @filter, newest first, from
-- before_seq on (a search page), at most lim.
SELECT * FROM pspsim.card_intents
WHERE tenant_id = @tenant_id AND metadata @> @filter::jsonb
  AND (sqlc.narg(before_seq)::bigint IS NULL OR seq < sqlc.narg(before_seq)::bigint)
ORDER BY seq DESC
LIMIT @lim;

-- name: CardListIntents :many
-- GET /v1/payment_intents: newest first, created in [created_from,
-- created_until) when given, after starting_after (before_seq), at most lim.
SELECT * FROM pspsim.card_intents
WHERE tenant_id = @tenant_id
  AND (sqlc.narg(created_from)::timestamptz IS NULL OR created_at >= sqlc.narg(created_from)::timestamptz)
  AND (sqlc.narg(created_until)::timestamptz IS NULL OR created_at < sqlc.narg(created_until)::timestamptz)
  AND (sqlc.narg(before_seq)::bigint IS NULL OR seq < sqlc.narg(before_seq)::bigint)
ORDER BY seq DESC
LIMIT @lim;

-- name: CardBalance :many
-- What the account holds: what succeeded intents received, less refunds.
SELECT currency, sum(amount_received - amount_refunded)::bigint AS amount
FROM pspsim.card_intents
WHERE tenant_id = @tenant_id AND status = 'succeeded'
GROUP BY currency ORDER BY currency;
