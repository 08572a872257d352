-- +goose Up
-- The PSP simulator (sim/pspsim): a bank's side of the BCB API Pix, served
-- over HTTPS to sandbox merchants. Its own schema; tenant_id is the
-- simulated account (one bank customer, one per merchant Pix handler).
-- Account-scoped transactions set app.tenant_id; the few paths that must
-- see every account (the token endpoint finding a client_id, the webhook
-- delivery worker, provisioning by reference) set app.scope = 'pspsim'.
CREATE SCHEMA IF NOT EXISTS pspsim;
GRANT USAGE ON SCHEMA pspsim TO bcp_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA pspsim GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO bcp_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA pspsim GRANT USAGE, SELECT ON SEQUENCES TO bcp_app;

-- Credentials as a bank's developer portal hands them out: only hashes of
-- the secret and the fingerprint of the client certificate are kept.
CREATE TABLE pspsim.accounts (
  tenant_id          uuid PRIMARY KEY,
  client_id          text NOT NULL UNIQUE,
  -- who asked for the account: provisioning again with the same reference
  -- rotates the credentials of the same account.
  reference          text NOT NULL UNIQUE CHECK (length(reference) BETWEEN 1 AND 200),
  client_secret_hash bytea NOT NULL CHECK (length(client_secret_hash) = 32),
  cert_sha256        bytea NOT NULL UNIQUE CHECK (length(cert_sha256) = 32),
  nome               text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  cidade             text NOT NULL CHECK (length(cidade) BETWEEN 1 AND 200),
  cnpj               text NOT NULL CHECK (cnpj ~ '^[0-9]{14}$'),
  chave              text NOT NULL UNIQUE CHECK (length(chave) BETWEEN 1 AND 77),
  scopes             text[] NOT NULL,
  -- reserved for the card (Stripe-compatible) simulator.
  stripe_key_hash    bytea CHECK (length(stripe_key_hash) = 32),
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL
);

CREATE TABLE pspsim.tokens (
  tenant_id  uuid NOT NULL,
  token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
  scopes     text[] NOT NULL,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, token_hash)
);

CREATE TABLE pspsim.charges (
  tenant_id            uuid NOT NULL,
  txid                 text NOT NULL CHECK (txid ~ '^[a-zA-Z0-9]{26,35}$'),
  revisao              integer NOT NULL DEFAULT 0,
  status               text NOT NULL CHECK (status IN ('ATIVA', 'CONCLUIDA', 'REMOVIDA_PELO_USUARIO_RECEBEDOR', 'REMOVIDA_PELO_PSP')),
  valor                text NOT NULL CHECK (valor ~ '^[0-9]{1,10}\.[0-9]{2}$'),
  modalidade_alteracao integer NOT NULL DEFAULT 0 CHECK (modalidade_alteracao IN (0, 1)),
  expiracao            integer NOT NULL CHECK (expiracao > 0),
  chave                text NOT NULL CHECK (length(chave) BETWEEN 1 AND 77),
  solicitacao          text NOT NULL DEFAULT '' CHECK (length(solicitacao) <= 140),
  loc_id               bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  location             text NOT NULL CHECK (length(location) <= 77),
  copia_e_cola         text NOT NULL CHECK (length(copia_e_cola) <= 512),
  criacao              timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, txid)
);

-- Pix received: paying a charge (txid = the charge's) or an orphan Pix
-- (no charge; txid optional, as for a static code).
CREATE TABLE pspsim.pix (
  tenant_id    uuid NOT NULL,
  e2e_id       text NOT NULL CHECK (e2e_id ~ '^[A-Za-z0-9]{32}$'),
  txid         text CHECK (txid ~ '^[a-zA-Z0-9]{1,35}$'),
  chave        text NOT NULL,
  valor        text NOT NULL CHECK (valor ~ '^[0-9]{1,10}\.[0-9]{2}$'),
  horario      timestamptz NOT NULL,
  info_pagador text NOT NULL DEFAULT '',
  -- paid through the charge of its txid (not an orphan that shares it)
  via_cob      boolean NOT NULL DEFAULT false,
  PRIMARY KEY (tenant_id, e2e_id)
);
CREATE INDEX pix_by_txid ON pspsim.pix (tenant_id, txid);
CREATE INDEX pix_by_horario ON pspsim.pix (tenant_id, horario);

CREATE TABLE pspsim.refunds (
  tenant_id   uuid NOT NULL,
  e2e_id      text NOT NULL,
  id          text NOT NULL CHECK (id ~ '^[a-zA-Z0-9]{1,35}$'),
  rtr_id      text NOT NULL CHECK (rtr_id ~ '^[A-Za-z0-9]{32}$'),
  valor       text NOT NULL CHECK (valor ~ '^[0-9]{1,10}\.[0-9]{2}$'),
  natureza    text NOT NULL,
  descricao   text NOT NULL DEFAULT '' CHECK (length(descricao) <= 140),
  status      text NOT NULL CHECK (status IN ('EM_PROCESSAMENTO', 'DEVOLVIDO', 'NAO_REALIZADO')),
  motivo      text NOT NULL DEFAULT '',
  solicitacao timestamptz NOT NULL,
  liquidacao  timestamptz,
  PRIMARY KEY (tenant_id, e2e_id, id)
);

-- PUT /webhook/{chave}: where the simulator posts (it appends /pix).
CREATE TABLE pspsim.webhooks (
  tenant_id uuid NOT NULL,
  chave     text NOT NULL,
  url       text NOT NULL CHECK (url ~ '^https://'),
  criacao   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, chave)
);

-- The webhook outbox: written in the transaction that makes the news,
-- claimed with FOR UPDATE SKIP LOCKED (several simulator processes share
-- it), kept after delivery as the record tests and chaos read.
CREATE TABLE pspsim.deliveries (
  tenant_id       uuid NOT NULL,
  id              bigint GENERATED ALWAYS AS IDENTITY,
  chave           text NOT NULL,
  e2e_ids         text[] NOT NULL CHECK (cardinality(e2e_ids) > 0),
  -- why: a Pix received, a devolução settled, a repeat asked for.
  reason          text NOT NULL CHECK (reason IN ('pix', 'devolucao', 'notify')),
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dropped', 'no_webhook')),
  attempts        integer NOT NULL DEFAULT 0,
  -- POSTs made (a duplicated delivery makes two per attempt).
  sends           integer NOT NULL DEFAULT 0,
  delayed         boolean NOT NULL DEFAULT false,
  duplicated      boolean NOT NULL DEFAULT false,
  url             text NOT NULL DEFAULT '',
  last_status     integer,
  last_error      text NOT NULL DEFAULT '',
  next_attempt_at timestamptz NOT NULL,
  created_at      timestamptz NOT NULL,
  done_at         timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX deliveries_due ON pspsim.deliveries (next_attempt_at) WHERE status = 'pending';

-- A Pix as the API shows it, from its row: to_jsonb of the row with its
-- refunds (to_jsonb of theirs) under "refunds". Row-level security applies
-- inside (SECURITY INVOKER).
-- +goose StatementBegin
CREATE FUNCTION pspsim.pix_json(p pspsim.pix) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT to_jsonb(p) || jsonb_build_object('refunds', (
    SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.solicitacao, r.id), '[]'::jsonb)
    FROM pspsim.refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id))
$$;
-- +goose StatementEnd

-- Row-level security on every table, forced.
-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['accounts', 'tokens', 'charges', 'pix', 'refunds', 'webhooks', 'deliveries'] LOOP
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
DROP FUNCTION pspsim.pix_json(pspsim.pix);
DROP TABLE pspsim.deliveries;
DROP TABLE pspsim.webhooks;
DROP TABLE pspsim.refunds;
DROP TABLE pspsim.pix;
DROP TABLE pspsim.charges;
DROP TABLE pspsim.tokens;
DROP TABLE pspsim.accounts;
ALTER DEFAULT PRIVILEGES IN SCHEMA pspsim REVOKE USAGE, SELECT ON SEQUENCES FROM bcp_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA pspsim REVOKE SELECT, INSERT, UPDATE, DELETE ON TABLES FROM bcp_app;
REVOKE USAGE ON SCHEMA pspsim FROM bcp_app;
DROP SCHEMA pspsim;
