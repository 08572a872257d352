-- +goose Up
-- Carts (br.dev.bcp.shopping.cart): priced like a checkout, but they never
-- reserve stock or take payment. request is the last accepted writable
-- payload (normalised), state the cart as last returned (without the ucp
-- envelope). A converted cart names the checkout it became, so a second
-- create_checkout with the same cart_id returns that checkout. version is
-- the optimistic lock, as on sessions.
CREATE TABLE checkout.carts (
  tenant_id         uuid NOT NULL,
  id                text NOT NULL,
  status            text NOT NULL CHECK (status IN ('active', 'canceled', 'converted')),
  agent_profile_url text NOT NULL,
  request           jsonb NOT NULL,
  state             jsonb NOT NULL,
  checkout_id       text,
  version           integer NOT NULL DEFAULT 1,
  expires_at        timestamptz NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  CHECK ((status = 'converted') = (checkout_id IS NOT NULL))
);

ALTER TABLE checkout.carts ENABLE ROW LEVEL SECURITY;
ALTER TABLE checkout.carts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON checkout.carts
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- Merchants created before carts existed get the capability, as new
-- merchants do (bcpnames.DefaultCapabilities), like 00025 did for catalog.
SELECT set_config('app.scope', 'registry', true);
UPDATE tenants.tenants
SET capabilities = capabilities || ARRAY['br.dev.bcp.shopping.cart'], updated_at = now()
WHERE NOT ('br.dev.bcp.shopping.cart' = ANY (capabilities));

-- +goose Down
SELECT set_config('app.scope', 'registry', true);
UPDATE tenants.tenants
SET capabilities = array_remove(capabilities, 'br.dev.bcp.shopping.cart'), updated_at = now()
WHERE 'br.dev.bcp.shopping.cart' = ANY (capabilities);
DROP TABLE checkout.carts;
