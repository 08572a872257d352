-- +goose Up
-- The search indexes lead with tenant_id. Migration 00025's GIN indexes
-- held every merchant's words in one posting list per word, so each search
-- read its word's entries for the whole platform and intersected them with
-- the merchant's primary-key range: at 100 merchants × 10 000 products
-- (bcpbench search, docs/performance.md "Catalog search at 1M products")
-- "cafe" read 19 228 entries to keep 197, and the typo fallback's trigrams
-- 60 120 to keep 550, so a search cost grew with the number of merchants.
-- With tenant_id as the first column (btree_gin: a GIN operator class for
-- uuid) one index scan intersects the merchant's entries with the word's
-- and skips the rest: the same two searches read 197 and 550 entries.
--
-- btree_gin is a trusted extension (PostgreSQL ≥ 13), like pg_trgm and
-- unaccent: the owner that runs migrations creates it. uuid = uuid is
-- leakproof, so row security does not keep the planner from the index.
-- The indexes keep their names, so plans and tests read the same.
-- CREATE INDEX blocks catalog writes (not reads) while it builds: about
-- half a minute for 1M products on 2 cores.
CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA public;
DROP INDEX catalog.products_search;
DROP INDEX catalog.products_title_trgm;
CREATE INDEX products_search ON catalog.products USING gin (tenant_id, search_tsv) WITH (fastupdate = off);
CREATE INDEX products_title_trgm ON catalog.products USING gin (tenant_id, search_title public.gin_trgm_ops) WITH (fastupdate = off);

-- +goose Down
DROP INDEX catalog.products_search;
DROP INDEX catalog.products_title_trgm;
CREATE INDEX products_search ON catalog.products USING gin (search_tsv) WITH (fastupdate = off);
CREATE INDEX products_title_trgm ON catalog.products USING gin (search_title public.gin_trgm_ops) WITH (fastupdate = off);
