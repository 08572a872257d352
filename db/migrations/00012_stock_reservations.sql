-- +goose Up
-- Stock is reserved when a checkout starts its payment (complete), not
-- while it is open: one row per (checkout, variant). Released when the
-- payment fails, expires or is canceled; kept when the order is placed.
CREATE TABLE catalog.stock_reservations (
  tenant_id   uuid NOT NULL,
  checkout_id text NOT NULL,
  variant_id  text NOT NULL,
  quantity    bigint NOT NULL CHECK (quantity > 0),
  state       text NOT NULL DEFAULT 'reserved' CHECK (state IN ('reserved', 'released')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  released_at timestamptz,
  PRIMARY KEY (tenant_id, checkout_id, variant_id)
);
ALTER TABLE catalog.stock_reservations ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.stock_reservations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.stock_reservations
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- +goose Down
DROP TABLE catalog.stock_reservations;
