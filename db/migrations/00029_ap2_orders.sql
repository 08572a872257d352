-- +goose Up
-- AP2 mandates (issue 22): the verified checkout mandate's digest and
-- claims, kept with the order for the merchant (admin order page, export).
ALTER TABLE orders.orders ADD COLUMN ap2_mandate jsonb;

-- +goose Down
ALTER TABLE orders.orders DROP COLUMN ap2_mandate;
