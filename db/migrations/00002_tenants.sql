-- +goose Up
-- Tenant registry and per-tenant configuration (owned by the tenants service).
--
-- Every table has tenant_id and forced row-level security. Tenant-scoped
-- transactions set app.tenant_id (tx-local); the registry paths that must
-- see every tenant (Host resolution, operator listing) set app.scope =
-- 'registry' (tx-local) explicitly, so forgetting a filter still cannot
-- cross tenants by accident.

CREATE TABLE tenants.tenants (
  tenant_id    uuid PRIMARY KEY,
  slug         text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$'),
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  -- development relaxes the agent-profile SSRF guard (loopback allowed);
  -- sandbox and production do not.
  environment  text NOT NULL DEFAULT 'production' CHECK (environment IN ('production', 'sandbox', 'development')),
  capabilities text[] NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenants.domains (
  tenant_id  uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  domain     text NOT NULL CHECK (domain = lower(domain) AND domain !~ '\.$' AND length(domain) <= 253),
  is_primary boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, domain)
);
CREATE UNIQUE INDEX domains_domain_key ON tenants.domains (domain);
CREATE UNIQUE INDEX domains_one_primary ON tenants.domains (tenant_id) WHERE is_primary;

-- Agent API keys. Only the SHA-256 of the key is stored: keys are 256-bit
-- random secrets, so a fast hash is enough (no password KDF needed).
CREATE TABLE tenants.api_keys (
  tenant_id         uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  id                text NOT NULL,
  key_hash          bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  display_prefix    text NOT NULL,
  agent_profile_url text NOT NULL,
  label             text NOT NULL DEFAULT '',
  created_at        timestamptz NOT NULL DEFAULT now(),
  revoked_at        timestamptz,
  PRIMARY KEY (tenant_id, id)
);

-- Merchant signing keys. The private key is sealed (AES-256-GCM under the
-- platform master key); only the public JWK is ever served.
CREATE TABLE tenants.signing_keys (
  tenant_id      uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  kid            text NOT NULL,
  alg            text NOT NULL CHECK (alg IN ('ES256', 'ES384', 'EdDSA')),
  public_jwk     jsonb NOT NULL,
  sealed_private bytea NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- published at once, used for signing from sign_from on
  sign_from      timestamptz NOT NULL DEFAULT now(),
  -- superseded keys stay published until retire_at
  retire_at      timestamptz,
  revoked_at     timestamptz,
  PRIMARY KEY (tenant_id, kid)
);

-- Payment handler instances the merchant advertises (Pix, delegated).
CREATE TABLE tenants.payment_handlers (
  tenant_id             uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  id                    text NOT NULL CHECK (id ~ '^[A-Za-z0-9_.-]{1,64}$'),
  name                  text NOT NULL,
  version               text NOT NULL CHECK (version ~ '^\d{4}-\d{2}-\d{2}$'),
  spec                  text NOT NULL DEFAULT '',
  schema_url            text NOT NULL DEFAULT '',
  available_instruments jsonb NOT NULL DEFAULT '[]',
  config                jsonb NOT NULL DEFAULT '{}',
  -- PSP / processor credentials, sealed like signing keys; never served.
  sealed_secrets        bytea,
  environment           text NOT NULL DEFAULT 'sandbox' CHECK (environment IN ('sandbox', 'production')),
  position              integer NOT NULL DEFAULT 0,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['tenants', 'domains', 'api_keys', 'signing_keys', 'payment_handlers'] LOOP
    EXECUTE format('ALTER TABLE tenants.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE tenants.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY tenant_isolation ON tenants.%I
      USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
             OR current_setting('app.scope', true) = 'registry')
      WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
             OR current_setting('app.scope', true) = 'registry')$p$, t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- Every change to a tenant's registry data is announced at commit, so edge
-- caches in every process drop what they hold for that tenant.
-- +goose StatementBegin
CREATE FUNCTION tenants.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE tid uuid;
BEGIN
  IF TG_OP = 'DELETE' THEN tid := OLD.tenant_id; ELSE tid := NEW.tenant_id; END IF;
  PERFORM pg_notify('bcp_tenant_changes', json_build_object('tenant_id', tid, 'table', TG_TABLE_NAME)::text);
  RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON tenants.tenants FOR EACH ROW EXECUTE FUNCTION tenants.notify_change();
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON tenants.domains FOR EACH ROW EXECUTE FUNCTION tenants.notify_change();
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON tenants.api_keys FOR EACH ROW EXECUTE FUNCTION tenants.notify_change();
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON tenants.signing_keys FOR EACH ROW EXECUTE FUNCTION tenants.notify_change();
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON tenants.payment_handlers FOR EACH ROW EXECUTE FUNCTION tenants.notify_change();

-- +goose Down
DROP TABLE tenants.payment_handlers, tenants.signing_keys, tenants.api_keys, tenants.domains, tenants.tenants;
DROP FUNCTION tenants.notify_change();
