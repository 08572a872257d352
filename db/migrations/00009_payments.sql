-- +goose Up
-- Payments: attempts (one per accepted complete_checkout), Pix webhook
-- receipts, refunds, merchant alerts, the single-use register of delegated
-- tokens, the Pix webhook hooks, and the state of the two sandbox
-- simulators (a PSP speaking the BCB API Pix, a card processor). Money is
-- bigint centavos within the protocol's amount range (0 .. 2^53-1).

-- One Pix webhook endpoint per tenant handler: the PSP posts to
-- {base_url}/webhooks/pix/{id}[/pix]. The HMAC secret shared with the PSP
-- is sealed under the master key (AAD binds tenant and hook id).
CREATE TABLE payments.hooks (
  tenant_id      uuid NOT NULL,
  id             text NOT NULL CHECK (id ~ '^whk_[a-z0-9]{26}$'),
  handler_id     text NOT NULL,
  -- The handler's environment when the hook was last used: it picks the
  -- PSP adapter that authenticates the webhooks (sandbox: the simulator).
  environment    text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  sealed_secret  bytea NOT NULL,
  -- The webhook URL last registered at the PSP (PUT /webhook/{chave}).
  registered_url text NOT NULL DEFAULT '',
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, handler_id)
);

CREATE TABLE payments.attempts (
  tenant_id       uuid NOT NULL,
  id              text NOT NULL CHECK (id ~ '^pay_[A-Za-z0-9]{1,60}$'),
  checkout_id     text NOT NULL CHECK (length(checkout_id) BETWEEN 1 AND 100),
  handler_id      text NOT NULL,
  handler_name    text NOT NULL,
  environment     text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  instrument_id   text NOT NULL DEFAULT '',
  instrument_type text NOT NULL DEFAULT '',
  amount          bigint NOT NULL CHECK (amount BETWEEN 1 AND 9007199254740991),
  currency        text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  status          text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'expired', 'canceled',
                                                  'requires_action', 'refunded', 'partially_refunded')),
  failure_code    text NOT NULL DEFAULT '',
  failure_message text NOT NULL DEFAULT '',
  display         jsonb NOT NULL DEFAULT '{}',
  action_url      text NOT NULL DEFAULT '',
  expires_at      timestamptz,
  refunded_amount bigint NOT NULL DEFAULT 0,
  -- HMAC of the StartPayment request (credential included, never stored):
  -- a retry must match it.
  request_hash    bytea NOT NULL CHECK (length(request_hash) = 32),
  base_url        text NOT NULL DEFAULT '',
  -- Pix: the txid (chosen and stored before the PSP call) and the
  -- endToEndId of the Pix that paid it.
  txid            text CHECK (txid ~ '^[a-f0-9]{32}$'),
  e2e_id          text,
  -- Card: the processor's charge id.
  charge_id       text,
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  CHECK (refunded_amount BETWEEN 0 AND amount)
);
-- Never more than one attempt in flight or succeeded per checkout.
CREATE UNIQUE INDEX attempts_one_live ON payments.attempts (tenant_id, checkout_id)
  WHERE status IN ('pending', 'succeeded', 'requires_action', 'refunded', 'partially_refunded');
CREATE UNIQUE INDEX attempts_txid ON payments.attempts (tenant_id, txid) WHERE txid IS NOT NULL;
CREATE INDEX attempts_by_checkout ON payments.attempts (tenant_id, checkout_id, created_at);

-- Pix notifications as received (one row per endToEndId, whatever the
-- number of deliveries), then their reconciliation against the PSP.
CREATE TABLE payments.pix_receipts (
  tenant_id  uuid NOT NULL,
  e2e_id     text NOT NULL CHECK (e2e_id ~ '^[A-Za-z0-9]{32}$'),
  hook_id    text NOT NULL,
  handler_id text NOT NULL,
  txid       text NOT NULL DEFAULT '',
  -- As notified; the reconciler trusts only the PSP's answer.
  amount     bigint NOT NULL,
  horario    timestamptz NOT NULL,
  raw        jsonb NOT NULL,
  status     text NOT NULL DEFAULT 'received' CHECK (status IN ('received', 'matched', 'orphan', 'unconfirmed')),
  attempt_id text,
  note       text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, e2e_id)
);

-- Refunds: requested by the merchant (orders) against an attempt, or
-- automatic (a Pix that cannot pay its attempt is returned in full).
-- psp_refund_id is ours, minted and stored before the PSP call: the Pix
-- devolução id ([A-Za-z0-9]{1,35}) or the card processor's idempotency key.
CREATE TABLE payments.refunds (
  tenant_id       uuid NOT NULL,
  id              text NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
  attempt_id      text,
  kind            text NOT NULL CHECK (kind IN ('requested', 'automatic')),
  handler_id      text NOT NULL,
  e2e_id          text,
  charge_id       text,
  psp_refund_id   text NOT NULL,
  amount          bigint NOT NULL CHECK (amount BETWEEN 1 AND 9007199254740991),
  reason          text NOT NULL DEFAULT '',
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  failure_message text NOT NULL DEFAULT '',
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, psp_refund_id),
  CHECK (e2e_id IS NOT NULL OR charge_id IS NOT NULL)
);
CREATE INDEX refunds_by_attempt ON payments.refunds (tenant_id, attempt_id);

CREATE TABLE payments.alerts (
  tenant_id  uuid NOT NULL,
  id         text NOT NULL,
  kind       text NOT NULL,
  message    text NOT NULL,
  attempt_id text NOT NULL DEFAULT '',
  e2e_id     text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX alerts_recent ON payments.alerts (tenant_id, created_at DESC);

-- Single use of delegated-token ids (JWS jti): only a hash, kept until the
-- token expires.
CREATE TABLE payments.token_uses (
  tenant_id  uuid NOT NULL,
  jti_hash   bytea NOT NULL CHECK (length(jti_hash) = 32),
  attempt_id text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, jti_hash)
);
CREATE INDEX token_uses_expiry ON payments.token_uses (tenant_id, expires_at);

-- Simulated PSP (sandbox handlers only): the receiver's side of the BCB
-- API Pix. Values are kept as the API writes them ("123.45").
CREATE TABLE payments.sim_pix_charges (
  tenant_id    uuid NOT NULL,
  txid         text NOT NULL CHECK (txid ~ '^[a-zA-Z0-9]{26,35}$'),
  handler_id   text NOT NULL,
  revisao      integer NOT NULL DEFAULT 0,
  status       text NOT NULL CHECK (status IN ('ATIVA', 'CONCLUIDA', 'REMOVIDA_PELO_USUARIO_RECEBEDOR', 'REMOVIDA_PELO_PSP')),
  valor        text NOT NULL CHECK (valor ~ '^[0-9]{1,10}\.[0-9]{2}$'),
  expiracao    integer NOT NULL CHECK (expiracao > 0),
  chave        text NOT NULL CHECK (length(chave) BETWEEN 1 AND 77),
  solicitacao  text NOT NULL DEFAULT '' CHECK (length(solicitacao) <= 140),
  location     text NOT NULL CHECK (length(location) <= 77),
  copia_e_cola text NOT NULL CHECK (length(copia_e_cola) <= 512),
  criacao      timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, txid)
);

CREATE TABLE payments.sim_pix (
  tenant_id    uuid NOT NULL,
  e2e_id       text NOT NULL CHECK (e2e_id ~ '^[A-Za-z0-9]{32}$'),
  txid         text NOT NULL,
  handler_id   text NOT NULL,
  valor        text NOT NULL CHECK (valor ~ '^[0-9]{1,10}\.[0-9]{2}$'),
  horario      timestamptz NOT NULL,
  info_pagador text NOT NULL DEFAULT '',
  PRIMARY KEY (tenant_id, e2e_id)
);
-- A charge takes one payment.
CREATE UNIQUE INDEX sim_pix_one_per_charge ON payments.sim_pix (tenant_id, txid);

CREATE TABLE payments.sim_pix_refunds (
  tenant_id   uuid NOT NULL,
  e2e_id      text NOT NULL,
  id          text NOT NULL CHECK (id ~ '^[a-zA-Z0-9]{1,35}$'),
  rtr_id      text NOT NULL,
  valor       text NOT NULL CHECK (valor ~ '^[0-9]{1,10}\.[0-9]{2}$'),
  natureza    text NOT NULL,
  descricao   text NOT NULL DEFAULT '' CHECK (length(descricao) <= 140),
  status      text NOT NULL CHECK (status IN ('EM_PROCESSAMENTO', 'DEVOLVIDO', 'NAO_REALIZADO')),
  motivo      text NOT NULL DEFAULT '',
  solicitacao timestamptz NOT NULL,
  liquidacao  timestamptz,
  PRIMARY KEY (tenant_id, e2e_id, id)
);

-- PUT /webhook/{chave}: where the simulated PSP posts (it appends /pix).
CREATE TABLE payments.sim_pix_webhooks (
  tenant_id  uuid NOT NULL,
  handler_id text NOT NULL,
  chave      text NOT NULL,
  url        text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, handler_id, chave)
);

-- Simulated card processor: one charge per idempotency key (the attempt
-- id). Tokens are kept as hashes only.
CREATE TABLE payments.sim_card_charges (
  tenant_id       uuid NOT NULL,
  id              text NOT NULL,
  idempotency_key text NOT NULL,
  token_hash      bytea NOT NULL CHECK (length(token_hash) = 32),
  amount          bigint NOT NULL CHECK (amount > 0),
  currency        text NOT NULL,
  status          text NOT NULL CHECK (status IN ('approved', 'declined', 'requires_action', 'voided')),
  decline_code    text NOT NULL DEFAULT '',
  refunded        bigint NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, idempotency_key),
  CHECK (refunded BETWEEN 0 AND amount)
);
CREATE INDEX sim_card_charges_token ON payments.sim_card_charges (tenant_id, token_hash);

CREATE TABLE payments.sim_card_refunds (
  tenant_id       uuid NOT NULL,
  id              text NOT NULL,
  charge_id       text NOT NULL,
  idempotency_key text NOT NULL,
  amount          bigint NOT NULL CHECK (amount > 0),
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, idempotency_key)
);

-- Row-level security on every table, forced.
-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['hooks', 'attempts', 'pix_receipts', 'refunds', 'alerts', 'token_uses',
                           'sim_pix_charges', 'sim_pix', 'sim_pix_refunds', 'sim_pix_webhooks',
                           'sim_card_charges', 'sim_card_refunds'] LOOP
    EXECUTE format('ALTER TABLE payments.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE payments.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY tenant_isolation ON payments.%I
      USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
      WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)$p$, t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE payments.sim_card_refunds;
DROP TABLE payments.sim_card_charges;
DROP TABLE payments.sim_pix_webhooks;
DROP TABLE payments.sim_pix_refunds;
DROP TABLE payments.sim_pix;
DROP TABLE payments.sim_pix_charges;
DROP TABLE payments.token_uses;
DROP TABLE payments.alerts;
DROP TABLE payments.refunds;
DROP TABLE payments.pix_receipts;
DROP TABLE payments.attempts;
DROP TABLE payments.hooks;
