-- name: InsertNumberedOrder :one
-- The order with the tenant's next label ("#1001", "#1002", …), also
-- written into the snapshot, in one statement. The counter row's lock is
-- held to the end of the statement's transaction (implicit or explicit),
-- which keeps the numbers in order. There is no ON CONFLICT: when the
-- checkout already has its order, the unique violation on (tenant_id,
-- checkout_id) fails the statement and its number is rolled back with it.
-- The counter is bumped by a plain UPDATE (one WAL record, no speculative
-- insertion nor separate row-lock record); only a tenant's first order
-- inserts its row, and two first orders racing meet in ON CONFLICT, where
-- the second takes the next number.
WITH bumped AS (
    UPDATE orders.label_counters SET last = last + 1 WHERE tenant_id = @tenant_id
    RETURNING last
), fresh AS (
    INSERT INTO orders.label_counters (tenant_id, last)
    SELECT @tenant_id, 1001 WHERE NOT EXISTS (SELECT 1 FROM bumped)
    ON CONFLICT (tenant_id) DO UPDATE SET last = orders.label_counters.last + 1
    RETURNING last
), n AS (
    SELECT ('#' || last)::text AS label FROM bumped
    UNION ALL
    SELECT ('#' || last)::text AS label FROM fresh
)
INSERT INTO orders.orders (tenant_id, id, checkout_id, label, payment_attempt_id, agent_profile_url, webhook_url, base_url, currency, total, status, snapshot, ap2_mandate,
                           buyer_name, buyer_email, payment_method, details)
SELECT @tenant_id, @id, @checkout_id, n.label, @payment_attempt_id, @agent_profile_url, @webhook_url, @base_url, @currency, @total, @status,
       jsonb_set(@snapshot::jsonb, '{label}', to_jsonb(n.label)), sqlc.narg(ap2_mandate),
       @buyer_name, @buyer_email, @payment_method, sqlc.narg(details)
FROM n
RETURNING label;

-- name: GetOrder :one
SELECT * FROM orders.orders WHERE tenant_id = @tenant_id AND id = @id;

-- name: GetOrderByCheckout :one
SELECT * FROM orders.orders WHERE tenant_id = @tenant_id AND checkout_id = @checkout_id;

-- name: LockOrder :one
-- Every change to an order runs under this lock: changes are applied to
-- the snapshot one at a time, and refund amounts are checked against what
-- is already reserved.
SELECT * FROM orders.orders WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: UpdateOrder :one
UPDATE orders.orders SET status = @status, snapshot = @snapshot, refunded = @refunded, version = version + 1, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING version;

-- name: ListOrders :many
-- Newest first (ids sort by creation time), filtered: every filter is
-- optional ('' or NULL). @label is an exact order number ("#1007"),
-- @pattern an ILIKE pattern on the buyer's name and e-mail; with both set
-- either matches.
SELECT id, checkout_id, label, total, currency, agent_profile_url, status, created_at, ap2_mandate, buyer_name, buyer_email, payment_method
FROM orders.orders
WHERE tenant_id = @tenant_id
  AND (sqlc.narg(before_id)::text IS NULL OR id < sqlc.narg(before_id)::text)
  AND (@status::text = '' OR status = @status::text)
  AND (@payment_method::text = '' OR payment_method = @payment_method::text)
  AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR created_at < sqlc.narg(until)::timestamptz)
  AND ((@label::text = '' AND @pattern::text = '')
       OR label = @label::text
       OR (@pattern::text <> '' AND (buyer_name ILIKE @pattern::text OR buyer_email ILIKE @pattern::text)))
ORDER BY id DESC
LIMIT @page_size;

-- name: InsertEvent :exec
INSERT INTO orders.events (tenant_id, id, order_id, type, line_items, tracking_number, tracking_url, carrier, description, occurred_at)
VALUES (@tenant_id, @id, @order_id, @type, @line_items, @tracking_number, @tracking_url, @carrier, @description, @occurred_at);

-- name: InsertAdjustment :exec
INSERT INTO orders.adjustments (tenant_id, id, order_id, type, status, amount, reason, line_items, occurred_at)
VALUES (@tenant_id, @id, @order_id, @type, @status, @amount, @reason, @line_items, @occurred_at);

-- name: GetAdjustment :one
SELECT * FROM orders.adjustments WHERE tenant_id = @tenant_id AND id = @id;

-- name: ReservedRefunds :one
-- What is refunded or being refunded: the most a new refund may add to is
-- the order total minus this.
SELECT COALESCE(sum(amount), 0)::bigint FROM orders.adjustments
WHERE tenant_id = @tenant_id AND order_id = @order_id AND type = 'refund' AND status IN ('pending', 'completed');

-- name: SettleAdjustment :execrows
-- Only a pending adjustment settles, once.
UPDATE orders.adjustments SET status = @status, failure_message = @failure_message, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND status = 'pending';

-- name: InsertDelivery :exec
INSERT INTO orders.webhook_deliveries (tenant_id, id, order_id, order_version)
VALUES (@tenant_id, @id, @order_id, @order_version);

-- name: GetDelivery :one
SELECT * FROM orders.webhook_deliveries WHERE tenant_id = @tenant_id AND id = @id;

-- name: RecordDeliveryAttempt :exec
UPDATE orders.webhook_deliveries SET
  attempts = attempts + 1, last_status = sqlc.narg(last_status), last_error = @last_error,
  delivered_at = CASE WHEN @delivered::boolean THEN now() ELSE delivered_at END, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListDeliveries :many
SELECT * FROM orders.webhook_deliveries WHERE tenant_id = @tenant_id AND order_id = @order_id ORDER BY created_at, id;
