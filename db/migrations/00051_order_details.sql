-- +goose Up
-- Orders a merchant ships from (issue 34): who bought, where it goes and
-- how it was paid, recorded at creation from the completed checkout, for
-- the merchant only (admin order page, packing slip, export; never in the
-- agent's order). details is bcp.orders.v1.OrderDetails as protojson; the
-- columns beside it are what the orders list searches and filters on
-- (payment_method: the instrument type, pix or card). Orders created
-- before this have none ('' and NULL).
ALTER TABLE orders.orders
  ADD COLUMN buyer_name     text NOT NULL DEFAULT '',
  ADD COLUMN buyer_email    text NOT NULL DEFAULT '',
  ADD COLUMN payment_method text NOT NULL DEFAULT '',
  ADD COLUMN details        jsonb;

-- +goose Down
ALTER TABLE orders.orders DROP COLUMN details, DROP COLUMN payment_method, DROP COLUMN buyer_email, DROP COLUMN buyer_name;
