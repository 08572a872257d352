-- +goose Up
-- One schema per service. A service reads and writes only its own schema.
CREATE SCHEMA IF NOT EXISTS tenants;
CREATE SCHEMA IF NOT EXISTS catalog;
CREATE SCHEMA IF NOT EXISTS pricing;
CREATE SCHEMA IF NOT EXISTS checkout;
CREATE SCHEMA IF NOT EXISTS payments;
CREATE SCHEMA IF NOT EXISTS orders;

-- The application role: not the owner of anything, no BYPASSRLS, so forced
-- row-level security applies to every statement it runs. Deployments grant
-- it to their login role (`GRANT bcp_app TO <login>`); `bcpd dev` and the
-- tests log in as bcp_app directly.
-- +goose StatementBegin
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'bcp_app') THEN
    CREATE ROLE bcp_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
END
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA tenants, catalog, pricing, checkout, payments, orders TO bcp_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA tenants, catalog, pricing, checkout, payments, orders
  GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO bcp_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA tenants, catalog, pricing, checkout, payments, orders
  GRANT USAGE, SELECT ON SEQUENCES TO bcp_app;

-- +goose Down
DROP SCHEMA IF EXISTS orders CASCADE;
DROP SCHEMA IF EXISTS payments CASCADE;
DROP SCHEMA IF EXISTS checkout CASCADE;
DROP SCHEMA IF EXISTS pricing CASCADE;
DROP SCHEMA IF EXISTS catalog CASCADE;
DROP SCHEMA IF EXISTS tenants CASCADE;
