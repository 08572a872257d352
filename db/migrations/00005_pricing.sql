-- +goose Up
-- Pricing: the merchant's shipping rates (with their CEP ranges), pickup
-- locations, discounts and discount redemptions. Money is bigint centavos
-- within the protocol's amount range (0 .. 2^53-1).

CREATE TABLE pricing.shipping_rates (
  tenant_id    uuid NOT NULL,
  id           text NOT NULL,
  title        text NOT NULL CHECK (length(title) BETWEEN 1 AND 100),
  description  text NOT NULL DEFAULT '' CHECK (length(description) <= 300),
  carrier      text NOT NULL DEFAULT '' CHECK (length(carrier) <= 100),
  -- Brazilian states (UF). Empty together with no CEP range: all of Brazil.
  regions      text[] NOT NULL DEFAULT '{}',
  price        bigint NOT NULL CHECK (price BETWEEN 0 AND 9007199254740991),
  free_above   bigint NOT NULL DEFAULT 0 CHECK (free_above BETWEEN 0 AND 9007199254740991),
  min_subtotal bigint NOT NULL DEFAULT 0 CHECK (min_subtotal BETWEEN 0 AND 9007199254740991),
  max_subtotal bigint NOT NULL DEFAULT 0 CHECK (max_subtotal BETWEEN 0 AND 9007199254740991),
  min_days     integer NOT NULL DEFAULT 0 CHECK (min_days >= 0),
  max_days     integer NOT NULL DEFAULT 0 CHECK (max_days >= 0),
  active       boolean NOT NULL DEFAULT true,
  position     integer NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  CHECK (max_subtotal = 0 OR max_subtotal >= min_subtotal),
  CHECK (max_days = 0 OR max_days >= min_days)
);

-- Inclusive CEP ranges of a rate, 8 digits each; a child table so the
-- database enforces their shape.
CREATE TABLE pricing.shipping_rate_ceps (
  tenant_id uuid NOT NULL,
  rate_id   text NOT NULL,
  position  integer NOT NULL CHECK (position >= 0),
  cep_from  text NOT NULL CHECK (cep_from ~ '^[0-9]{8}$'),
  cep_to    text NOT NULL CHECK (cep_to ~ '^[0-9]{8}$'),
  PRIMARY KEY (tenant_id, rate_id, position),
  CHECK (cep_from <= cep_to),
  FOREIGN KEY (tenant_id, rate_id) REFERENCES pricing.shipping_rates (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE pricing.pickup_locations (
  tenant_id        uuid NOT NULL,
  id               text NOT NULL,
  name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  street_address   text NOT NULL CHECK (length(street_address) BETWEEN 1 AND 300),
  extended_address text NOT NULL DEFAULT '' CHECK (length(extended_address) <= 300),
  address_locality text NOT NULL CHECK (length(address_locality) BETWEEN 1 AND 200),
  address_region   text NOT NULL CHECK (address_region ~ '^[A-Z]{2}$'),
  postal_code      text NOT NULL CHECK (postal_code ~ '^[0-9]{8}$'),
  address_country  text NOT NULL DEFAULT 'BR' CHECK (address_country = 'BR'),
  price            bigint NOT NULL DEFAULT 0 CHECK (price BETWEEN 0 AND 9007199254740991),
  description      text NOT NULL DEFAULT '' CHECK (length(description) <= 300),
  active           boolean NOT NULL DEFAULT true,
  position         integer NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

CREATE TABLE pricing.discounts (
  tenant_id             uuid NOT NULL,
  id                    text NOT NULL,
  -- Typed by buyers, matched case-insensitively; '' for automatic ones.
  code                  text NOT NULL DEFAULT '' CHECK (code ~ '^[A-Za-z0-9_-]{0,64}$'),
  title                 text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
  kind                  text NOT NULL CHECK (kind IN ('percent', 'fixed', 'free_shipping')),
  -- percent: basis points; fixed: centavos; free_shipping: 0.
  value                 bigint NOT NULL CHECK (value BETWEEN 0 AND 9007199254740991),
  automatic             boolean NOT NULL DEFAULT false,
  min_subtotal          bigint NOT NULL DEFAULT 0 CHECK (min_subtotal BETWEEN 0 AND 9007199254740991),
  starts_at             timestamptz,
  ends_at               timestamptz,
  usage_limit           bigint NOT NULL DEFAULT 0 CHECK (usage_limit >= 0),
  usage_limit_per_buyer bigint NOT NULL DEFAULT 0 CHECK (usage_limit_per_buyer >= 0),
  priority              integer NOT NULL DEFAULT 1 CHECK (priority >= 1),
  combinable            boolean NOT NULL DEFAULT false,
  active                boolean NOT NULL DEFAULT true,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  CHECK (automatic = (code = '')),
  CHECK (kind <> 'percent' OR value BETWEEN 1 AND 10000),
  CHECK (kind <> 'fixed' OR value >= 1),
  CHECK (kind <> 'free_shipping' OR value = 0),
  CHECK (ends_at IS NULL OR starts_at IS NULL OR ends_at > starts_at)
);
CREATE UNIQUE INDEX discounts_code ON pricing.discounts (tenant_id, lower(code)) WHERE code <> '';

-- One row per discount used by a completed checkout: the primary key makes
-- redeeming idempotent, and usage counts are counts of these rows.
CREATE TABLE pricing.discount_redemptions (
  tenant_id   uuid NOT NULL,
  discount_id text NOT NULL,
  checkout_id text NOT NULL CHECK (length(checkout_id) BETWEEN 1 AND 100),
  -- Lower-cased; '' when the buyer gave none.
  buyer_email text NOT NULL DEFAULT '' CHECK (buyer_email = lower(buyer_email)),
  redeemed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, discount_id, checkout_id),
  FOREIGN KEY (tenant_id, discount_id) REFERENCES pricing.discounts (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX discount_redemptions_buyer ON pricing.discount_redemptions (tenant_id, discount_id, buyer_email);

-- +goose StatementBegin
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['shipping_rates', 'shipping_rate_ceps', 'pickup_locations', 'discounts', 'discount_redemptions'] LOOP
    EXECUTE format('ALTER TABLE pricing.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE pricing.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY tenant_isolation ON pricing.%I
      USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
      WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)$p$, t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE pricing.discount_redemptions, pricing.discounts, pricing.pickup_locations,
  pricing.shipping_rate_ceps, pricing.shipping_rates;
