-- +goose Up
-- Agent-facing request counts per tenant per São Paulo (America/Sao_Paulo)
-- calendar day (issue 6, operator console): every MCP tool call and REST
-- operation the edge answered, and how many of them were errors
-- (JSON-RPC/HTTP protocol errors and BCP error_response payloads). Edges
-- count in memory and flush batches every few seconds through the tenants
-- service's RecordUsage, which adds them here; nothing is written on the
-- request path.
--
-- No change-notification trigger: usage is not registry data, and
-- announcing every flush would empty the edges' caches.
CREATE TABLE tenants.request_usage (
  tenant_id uuid NOT NULL REFERENCES tenants.tenants (tenant_id) ON DELETE CASCADE,
  day       date NOT NULL,
  requests  bigint NOT NULL DEFAULT 0 CHECK (requests >= 0),
  errors    bigint NOT NULL DEFAULT 0 CHECK (errors >= 0 AND errors <= requests),
  PRIMARY KEY (tenant_id, day)
);

-- Like the registry tables: a tenant's own scope, or the registry scope for
-- the edges' batched flushes (one statement for every tenant of a batch).
ALTER TABLE tenants.request_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants.request_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants.request_usage
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
         OR current_setting('app.scope', true) = 'registry')
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
         OR current_setting('app.scope', true) = 'registry');

-- +goose Down
DROP TABLE tenants.request_usage;
