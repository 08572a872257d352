-- +goose Up
-- A checkout that ends without an order (canceled, expired) fences what a
-- completion still in flight could take for it:
--   * its payment: payments records the attempt it was claiming as
--     canceled (an attempt row with that id), so a StartPayment arriving
--     later charges nothing (no schema change: the attempt row is the fence);
--   * its stock: catalog.checkout_stock below. ReserveStock upserts the
--     checkout's row (open) in the statement that books the stock, and
--     ReleaseStock with close marks it closed before it releases, so the
--     two serialize on that row: a reservation either commits first and is
--     released by the close, or sees the row closed and takes nothing.
CREATE TABLE catalog.checkout_stock (
  tenant_id   uuid NOT NULL,
  checkout_id text NOT NULL,
  closed      boolean NOT NULL DEFAULT false,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, checkout_id)
);
ALTER TABLE catalog.checkout_stock ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.checkout_stock FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.checkout_stock
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- +goose Down
DROP TABLE catalog.checkout_stock;
