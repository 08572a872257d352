-- What must never be true of the platform's data, one query per
-- invariant: each lists the rows that break it (no row: it holds). Run
-- it as a superuser (or a role with BYPASSRLS: row-level security is
-- forced on every table, for their owner too, and would hide every
-- tenant's rows), on a quiet system or after the work in flight settled:
--
--   psql "$SUPERUSER_DATABASE_URL" -f db/checks/invariants.sql
--
-- `make chaos` runs the same file after its faults (platform/chaos reads
-- it through db.Invariants; the "-- name:" and "-- count:" lines are for
-- it: the count query says how many rows the invariant examined).
--
-- The pspsim tables are the PSP simulator's own ledgers (bcpd's pspsim
-- role: its API Pix and its Stripe-compatible card API), where sandbox
-- handlers without settings of their own pay: card intents
-- (pspsim.card_intents: idempotency_key is the payments attempt's id, an
-- intent took the money when its status is succeeded, refunds are in
-- amount_refunded), Pix received (pspsim.pix, joined to the attempt by
-- txid) and their devoluções (pspsim.refunds, by e2e_id). txids and
-- attempt ids are unique across tenants, so these joins need no simulator
-- account. The invariants that read them are about the sandbox: a
-- production deployment has no simulator, its handlers pay at real PSPs
-- and processors, and there the same reconciliation runs against their
-- reports.

-- name: completed checkout has exactly one order
-- count: SELECT count(*) FROM checkout.sessions WHERE status = 'completed'
SELECT 'completed checkout has exactly one order' AS invariant,
       s.id || ' (orders: ' || (SELECT count(*) FROM orders.orders o WHERE o.tenant_id = s.tenant_id AND o.checkout_id = s.id) || ')' AS violation
  FROM checkout.sessions s
 WHERE s.status = 'completed'
   AND (s.order_id IS NULL
        OR (SELECT count(*) FROM orders.orders o WHERE o.tenant_id = s.tenant_id AND o.checkout_id = s.id AND o.id = s.order_id) <> 1
        OR (SELECT count(*) FROM orders.orders o WHERE o.tenant_id = s.tenant_id AND o.checkout_id = s.id) <> 1);

-- name: every order's checkout is completed (a canceled or expired checkout has no order)
-- count: SELECT count(*) FROM orders.orders
SELECT 'every order''s checkout is completed' AS invariant,
       o.id || ' (checkout ' || o.checkout_id || ': ' || coalesce(s.status, 'missing') || ')' AS violation
  FROM orders.orders o LEFT JOIN checkout.sessions s ON s.tenant_id = o.tenant_id AND s.id = o.checkout_id
 WHERE s.status IS DISTINCT FROM 'completed' OR s.order_id IS DISTINCT FROM o.id;

-- name: no checkout with two payment attempts that kept money
-- count: SELECT count(DISTINCT (tenant_id, checkout_id)) FROM payments.attempts
SELECT 'no checkout with two payment attempts that kept money' AS invariant,
       checkout_id || ' (' || count(*) || ' attempts kept money)' AS violation
  FROM payments.attempts WHERE status IN ('succeeded', 'partially_refunded')
 GROUP BY tenant_id, checkout_id HAVING count(*) > 1;

-- name: every approved card charge is the succeeded attempt of a completed checkout, or refunded
-- count: SELECT count(*) FROM pspsim.card_intents WHERE status = 'succeeded'
SELECT 'every approved card charge is the succeeded attempt of a completed checkout, or refunded' AS invariant,
       c.id || ' (key ' || coalesce(c.idempotency_key, 'none') || ': attempt ' || coalesce(a.status, 'missing') || ', checkout ' || coalesce(s.status, 'missing')
         || ', refunded ' || c.amount_refunded || ' of ' || c.amount || ')' AS violation
  FROM pspsim.card_intents c
  LEFT JOIN payments.attempts a ON a.id = c.idempotency_key
  LEFT JOIN checkout.sessions s ON s.tenant_id = a.tenant_id AND s.id = a.checkout_id
 WHERE c.status = 'succeeded' AND c.amount_refunded < c.amount
   AND NOT (a.status IN ('succeeded', 'partially_refunded', 'refunded') AND a.charge_id = c.id
            AND s.status = 'completed' AND s.payment_attempt_id = a.id);

-- name: every Pix received is the succeeded attempt of a completed checkout, or refunded
-- count: SELECT count(*) FROM pspsim.pix
SELECT 'every Pix received is the succeeded attempt of a completed checkout, or refunded' AS invariant,
       p.e2e_id || ' (txid ' || coalesce(p.txid, 'none') || ': attempt ' || coalesce(a.status, 'missing') || ', checkout ' || coalesce(s.status, 'missing') || ')' AS violation
  FROM pspsim.pix p
  LEFT JOIN payments.attempts a ON a.txid = p.txid
  LEFT JOIN checkout.sessions s ON s.tenant_id = a.tenant_id AND s.id = a.checkout_id
 WHERE NOT EXISTS (SELECT 1 FROM pspsim.refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id AND r.status = 'DEVOLVIDO')
   AND NOT (a.status IN ('succeeded', 'partially_refunded', 'refunded') AND a.e2e_id = p.e2e_id
            AND s.status = 'completed' AND s.payment_attempt_id = a.id);

-- name: every succeeded attempt has its money at the processor or PSP
-- count: SELECT count(*) FROM payments.attempts a WHERE a.status IN ('succeeded', 'partially_refunded', 'refunded') AND a.environment = 'sandbox' AND EXISTS (SELECT 1 FROM payments.sandbox_accounts sa WHERE sa.tenant_id = a.tenant_id AND sa.handler_id = a.handler_id)
SELECT 'every succeeded attempt has its money at the processor or PSP' AS invariant,
       a.id || ' (' || a.status || ', checkout ' || a.checkout_id || ')' AS violation
  FROM payments.attempts a
 WHERE a.status IN ('succeeded', 'partially_refunded', 'refunded') AND a.environment = 'sandbox'
   -- paid at the simulator: a sandbox handler without settings of its own
   AND EXISTS (SELECT 1 FROM payments.sandbox_accounts sa WHERE sa.tenant_id = a.tenant_id AND sa.handler_id = a.handler_id)
   AND NOT EXISTS (SELECT 1 FROM pspsim.card_intents c WHERE c.id = a.charge_id AND c.idempotency_key = a.id AND c.status = 'succeeded')
   AND NOT EXISTS (SELECT 1 FROM pspsim.pix p WHERE p.e2e_id = a.e2e_id AND p.txid = a.txid);

-- name: a completed checkout keeps its stock, a checkout without an order holds none
-- count: SELECT count(DISTINCT (tenant_id, checkout_id)) FROM catalog.stock_reservations
SELECT 'a completed checkout keeps its stock, a checkout without an order holds none' AS invariant,
       r.checkout_id || ' (' || string_agg(r.variant_id || ' ' || r.state, ', ') || '; checkout ' || coalesce(min(s.status), 'missing') || ')' AS violation
  FROM catalog.stock_reservations r
  LEFT JOIN checkout.sessions s ON s.tenant_id = r.tenant_id AND s.id = r.checkout_id
 GROUP BY r.tenant_id, r.checkout_id
HAVING (min(s.status) = 'completed' AND bool_or(r.state = 'released'))
    OR (min(s.status) IS DISTINCT FROM 'completed' AND min(s.status) IS DISTINCT FROM 'complete_in_progress' AND bool_or(r.state = 'reserved'));

-- name: stock is never negative
-- count: SELECT count(*) FROM catalog.variants
SELECT 'stock is never negative' AS invariant, v.id || ' (stock ' || v.stock || ')' AS violation
  FROM catalog.variants v WHERE v.stock < 0;

-- name: every order webhook delivered
-- count: SELECT count(*) FROM orders.webhook_deliveries
SELECT 'every order webhook delivered' AS invariant,
       o.id || ' (' || coalesce((SELECT string_agg(d.attempts || ' tries, last ' || coalesce(d.last_status::text, '-') || ' ' || left(d.last_error, 60), '; ')
                                   FROM orders.webhook_deliveries d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id AND d.delivered_at IS NULL), 'no delivery queued') || ')' AS violation
  FROM orders.orders o
 WHERE o.webhook_url <> ''
   AND (EXISTS (SELECT 1 FROM orders.webhook_deliveries d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id AND d.delivered_at IS NULL)
        OR NOT EXISTS (SELECT 1 FROM orders.webhook_deliveries d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id));
