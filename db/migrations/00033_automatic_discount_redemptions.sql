-- +goose Up
-- The automatic discounts pricing applied when a checkout was claimed:
-- they show no code, so a paid checkout redeems them by these ids (until
-- now they were never redeemed, and their usage limits never reached).
ALTER TABLE checkout.sessions ADD COLUMN automatic_discount_ids text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE checkout.sessions DROP COLUMN automatic_discount_ids;
