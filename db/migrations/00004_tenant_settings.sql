-- +goose Up
-- Storefront settings the checkout uses: legal links, consent purposes,
-- session lifetime. One row per tenant; absent = defaults.
CREATE TABLE tenants.settings (
  tenant_id            uuid PRIMARY KEY REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  links                jsonb NOT NULL DEFAULT '[]',
  consent_purposes     text[] NOT NULL DEFAULT '{}',
  checkout_ttl_seconds integer NOT NULL DEFAULT 21600 CHECK (checkout_ttl_seconds BETWEEN 300 AND 2592000),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE tenants.settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants.settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants.settings
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
         OR current_setting('app.scope', true) = 'registry')
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
         OR current_setting('app.scope', true) = 'registry');
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON tenants.settings FOR EACH ROW EXECUTE FUNCTION tenants.notify_change();

-- +goose Down
DROP TABLE tenants.settings;
