-- +goose Up
-- The automatic discounts pricing applied when a checkout was claimed:
-- they show no code, so a paid checkout redeems them by these ids (until
-- now they were never redeemed, and their usage limits never reached).
-- Coarse statistics like every column of the table (00022): the largest
-- target sets ANALYZE's sample.
ALTER TABLE checkout.sessions ADD COLUMN automatic_discount_ids text[] NOT NULL DEFAULT '{}';
ALTER TABLE checkout.sessions ALTER COLUMN automatic_discount_ids SET STATISTICS 10;

-- +goose Down
ALTER TABLE checkout.sessions DROP COLUMN automatic_discount_ids;
