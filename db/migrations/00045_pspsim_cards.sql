-- +goose Up
-- The card simulator (sim/pspsim/cardsim): a subset of Stripe's API served
-- on the PSP simulator's control listener, so sandbox merchants pay through
-- the same Stripe adapter production uses. tenant_id is the simulated
-- account (pspsim.accounts), found by the hash of its sk_test_ key.

-- One key per account; the API finds the account by it (scope pspsim).
CREATE UNIQUE INDEX accounts_stripe_key ON pspsim.accounts (stripe_key_hash);

-- PaymentMethods made from card tokens (POST /v1/payment_methods). The
-- token itself is never kept: its SHA-256 is how single use is enforced
-- (NULL for Stripe's reusable test tokens, tok_visa and the like).
CREATE TABLE pspsim.card_payment_methods (
  tenant_id  uuid NOT NULL,
  id         text NOT NULL CHECK (id ~ '^pm_[0-9A-Za-z]{24}$'),
  token_hash bytea CHECK (length(token_hash) = 32),
  brand      text NOT NULL,
  last4      text NOT NULL CHECK (last4 ~ '^[0-9]{4}$'),
  metadata   jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- PaymentIntents. idempotency_key is the Idempotency-Key the intent was
-- created with: for the Stripe adapter, the platform's payment attempt id
-- (payments.attempts.id), so a charge joins its attempt in SQL. An intent
-- has taken the money when status = 'succeeded' (amount_received = amount).
CREATE TABLE pspsim.card_intents (
  tenant_id                 uuid NOT NULL,
  id                        text NOT NULL CHECK (id ~ '^pi_[0-9A-Za-z]{24}$'),
  -- creation order, for lists and search pages (newest first)
  seq                       bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  idempotency_key           text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  client_secret             text NOT NULL,
  amount                    bigint NOT NULL CHECK (amount BETWEEN 1 AND 99999999),
  currency                  text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
  status                    text NOT NULL CHECK (status IN ('requires_payment_method', 'requires_confirmation', 'requires_action',
                                                            'processing', 'requires_capture', 'succeeded', 'canceled')),
  capture_method            text NOT NULL CHECK (capture_method IN ('automatic', 'automatic_async')),
  payment_method            text,
  -- the card behind payment_method (a test payment method has no token)
  card_brand                text NOT NULL DEFAULT '',
  card_last4                text NOT NULL DEFAULT '',
  token_hash                bytea CHECK (length(token_hash) = 32),
  payment_method_types      text[] NOT NULL,
  automatic_payment_methods jsonb,
  description               text,
  return_url                text,
  metadata                  jsonb NOT NULL DEFAULT '{}',
  -- the issuer's reason of the last failed confirmation ('' otherwise)
  decline_code              text NOT NULL DEFAULT '',
  last_payment_error        jsonb,
  latest_charge             text,
  amount_received           bigint NOT NULL DEFAULT 0,
  amount_refunded           bigint NOT NULL DEFAULT 0,
  cancellation_reason       text,
  canceled_at               timestamptz,
  created_at                timestamptz NOT NULL,
  updated_at                timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  CHECK (amount_received IN (0, amount)),
  CHECK (amount_refunded BETWEEN 0 AND amount_received),
  CHECK ((status = 'succeeded') = (amount_received > 0))
);
-- One intent per idempotency key, whatever the race.
CREATE UNIQUE INDEX card_intents_key ON pspsim.card_intents (tenant_id, idempotency_key);
-- A card token pays once: at most one intent holding it that paid or is
-- waiting for 3-D Secure (a concurrent second one fails on this index).
CREATE UNIQUE INDEX card_intents_token ON pspsim.card_intents (tenant_id, token_hash)
  WHERE status IN ('requires_action', 'processing', 'requires_capture', 'succeeded');
-- The 3-D Secure page finds an intent by its id alone (scope pspsim).
CREATE UNIQUE INDEX card_intents_id ON pspsim.card_intents (id);
CREATE INDEX card_intents_seq ON pspsim.card_intents (tenant_id, seq);
-- GET /v1/payment_intents/search?query=metadata['k']:'v'
CREATE INDEX card_intents_metadata ON pspsim.card_intents USING gin (metadata jsonb_path_ops);

CREATE TABLE pspsim.card_refunds (
  tenant_id       uuid NOT NULL,
  id              text NOT NULL CHECK (id ~ '^re_[0-9A-Za-z]{24}$'),
  payment_intent  text NOT NULL,
  charge          text NOT NULL,
  amount          bigint NOT NULL CHECK (amount > 0),
  currency        text NOT NULL,
  reason          text,
  metadata        jsonb NOT NULL DEFAULT '{}',
  idempotency_key text,
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, payment_intent) REFERENCES pspsim.card_intents (tenant_id, id)
);
CREATE INDEX card_refunds_intent ON pspsim.card_refunds (tenant_id, payment_intent);

-- Stripe's idempotency layer: the first answer to a POST with an
-- Idempotency-Key, saved in the transaction that did the work, replayed
-- to a retry with the same parameters (fingerprint: SHA-256 of method,
-- path and sorted form). Written once per key (INSERT … ON CONFLICT).
CREATE TABLE pspsim.card_idempotency (
  tenant_id   uuid NOT NULL,
  key         text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  method      text NOT NULL,
  path        text NOT NULL,
  fingerprint bytea NOT NULL CHECK (length(fingerprint) = 32),
  request_id  text NOT NULL,
  status      integer,
  body        bytea,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);

-- Row-level security on every table, forced, as in 00042.
-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['card_payment_methods', 'card_intents', 'card_refunds', 'card_idempotency'] LOOP
    EXECUTE format('ALTER TABLE pspsim.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE pspsim.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY account_isolation ON pspsim.%I
      USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
             OR current_setting('app.scope', true) = 'pspsim')
      WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
             OR current_setting('app.scope', true) = 'pspsim')$p$, t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE pspsim.card_idempotency;
DROP TABLE pspsim.card_refunds;
DROP TABLE pspsim.card_intents;
DROP TABLE pspsim.card_payment_methods;
DROP INDEX pspsim.accounts_stripe_key;
