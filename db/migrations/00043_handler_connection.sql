-- +goose Up
-- What may be shown of a payment handler's sealed secrets (the PSP's URLs
-- and client id, the client certificate's subject, issuer and expiry, a
-- Stripe key's last four characters): computed when the secrets are set,
-- so the admin and bcpctl can show the configuration without opening them.
ALTER TABLE tenants.payment_handlers ADD COLUMN connection jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE tenants.payment_handlers DROP COLUMN connection;
