-- +goose Up
-- Nothing reads the folded title any more: a misspelt query is corrected
-- against the merchant's words (00040) instead of compared with every
-- title's trigrams, and search ranks by ts_rank alone, without the title's
-- trigram closeness to the query. So the column and its trigram index,
-- both written with every product (1M in bcpbench search's seed), go.
-- Dropping a column rewrites nothing: rows written before keep its bytes
-- until they are next updated.
DROP INDEX catalog.products_title_trgm;
ALTER TABLE catalog.products DROP COLUMN search_title;

-- +goose Down
-- As 00025 and 00032 made them (rewrites the table: the column is stored).
ALTER TABLE catalog.products
  ADD COLUMN search_title text GENERATED ALWAYS AS (catalog.f_unaccent(lower(title))) STORED;
CREATE INDEX products_title_trgm ON catalog.products USING gin (tenant_id, search_title public.gin_trgm_ops) WITH (fastupdate = off);
