-- +goose Up
-- Orders: exactly one per completed checkout. The (tenant_id, checkout_id)
-- unique constraint is what makes "exactly once" hold under retries and
-- races, not the callers' care. snapshot is the BCP order as served
-- (without "ucp"); events, adjustments and webhook deliveries are the
-- durable records it is built from and that merchants audit.
CREATE TABLE orders.orders (
  tenant_id          uuid NOT NULL,
  id                 text NOT NULL,
  checkout_id        text NOT NULL CHECK (length(checkout_id) BETWEEN 1 AND 200),
  label              text NOT NULL,
  payment_attempt_id text NOT NULL DEFAULT '',
  agent_profile_url  text NOT NULL DEFAULT '',
  -- Empty: the agent asked for no webhooks.
  webhook_url        text NOT NULL DEFAULT '',
  base_url           text NOT NULL,
  currency           text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  total              bigint NOT NULL CHECK (total >= 0),
  -- Completed refunds; never above what was paid.
  refunded           bigint NOT NULL DEFAULT 0 CHECK (refunded >= 0 AND refunded <= total),
  status             text NOT NULL CHECK (status IN ('processing', 'partial', 'fulfilled', 'canceled')),
  snapshot           jsonb NOT NULL,
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, checkout_id),
  UNIQUE (tenant_id, label)
);

-- The per-tenant sequence behind labels (#1001, #1002, ...). A row lock,
-- not a SEQUENCE, so a create that loses the checkout_id race rolls its
-- number back and labels stay gapless in practice.
CREATE TABLE orders.label_counters (
  tenant_id uuid NOT NULL PRIMARY KEY,
  last      bigint NOT NULL
);

-- Fulfillment events, append-only (the application role may not update or
-- delete them).
CREATE TABLE orders.events (
  tenant_id       uuid NOT NULL,
  id              text NOT NULL,
  order_id        text NOT NULL,
  type            text NOT NULL,
  line_items      jsonb NOT NULL,
  tracking_number text NOT NULL DEFAULT '',
  tracking_url    text NOT NULL DEFAULT '',
  carrier         text NOT NULL DEFAULT '',
  description     text NOT NULL DEFAULT '',
  occurred_at     timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id)
);
CREATE INDEX events_by_order ON orders.events (tenant_id, order_id, occurred_at);

-- Adjustments (refunds). The id is the refund id, minted before the
-- payments service is called and used there as the refund's idempotency
-- key: a retry can never refund twice. pending reserves its amount until
-- it completes or fails.
CREATE TABLE orders.adjustments (
  tenant_id       uuid NOT NULL,
  id              text NOT NULL,
  order_id        text NOT NULL,
  type            text NOT NULL CHECK (type IN ('refund')),
  status          text NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
  amount          bigint NOT NULL CHECK (amount > 0),
  reason          text NOT NULL DEFAULT '',
  line_items      jsonb NOT NULL DEFAULT '[]',
  failure_message text NOT NULL DEFAULT '',
  occurred_at     timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id)
);
CREATE INDEX adjustments_by_order ON orders.adjustments (tenant_id, order_id, occurred_at);

-- One row per webhook message; id is the Webhook-Id header, the same on
-- every retry of the message.
CREATE TABLE orders.webhook_deliveries (
  tenant_id     uuid NOT NULL,
  id            uuid NOT NULL,
  order_id      text NOT NULL,
  order_version integer NOT NULL,
  attempts      integer NOT NULL DEFAULT 0,
  last_status   integer,
  last_error    text NOT NULL DEFAULT '',
  delivered_at  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id)
);
CREATE INDEX webhook_deliveries_by_order ON orders.webhook_deliveries (tenant_id, order_id, created_at);

-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['orders', 'label_counters', 'events', 'adjustments', 'webhook_deliveries'] LOOP
    EXECUTE format('ALTER TABLE orders.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE orders.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY tenant_isolation ON orders.%I
      USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
      WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)$p$, t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- Nothing the platform records about an order is ever deleted by it.
REVOKE DELETE ON orders.orders, orders.adjustments, orders.webhook_deliveries FROM bcp_app;
REVOKE UPDATE, DELETE ON orders.events FROM bcp_app;

-- +goose Down
DROP TABLE orders.webhook_deliveries, orders.adjustments, orders.events, orders.label_counters, orders.orders;
