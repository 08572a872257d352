-- +goose Up
-- The dashboard's stats RPCs read a tenant's rows created in a window
-- (last 7/30/90 days): one range scan each instead of the whole tenant.
CREATE INDEX sessions_by_created ON checkout.sessions (tenant_id, created_at);
CREATE INDEX orders_by_created ON orders.orders (tenant_id, created_at);
CREATE INDEX attempts_by_created ON payments.attempts (tenant_id, created_at);

-- +goose Down
DROP INDEX checkout.sessions_by_created, orders.orders_by_created, payments.attempts_by_created;
