-- +goose Up
-- Each merchant's search words: the distinct words of its active products'
-- searchable text (title, category, description, variant titles and SKUs),
-- folded as search folds them (lower case, no accents), not stemmed, with
-- how many active products have each. search_catalog corrects a misspelt
-- query against them when full text finds nothing ("camizeta" →
-- "camiseta", by trigram similarity over this merchant's few thousand
-- words) and searches the corrected words with full text; before, the
-- fallback compared the whole query with every title's trigrams
-- (docs/performance.md, "Catalog search at 1M products").
--
-- The words are what the text search parser reads as words of letters
-- (Portuguese stop words and words of one or two letters left out):
-- numbers and the numeric parts of SKUs are not misspelt words.
CREATE TEXT SEARCH DICTIONARY catalog.search_word (TEMPLATE = pg_catalog.simple, STOPWORDS = portuguese);
CREATE TEXT SEARCH CONFIGURATION catalog.search_words (PARSER = pg_catalog."default");
ALTER TEXT SEARCH CONFIGURATION catalog.search_words
  ADD MAPPING FOR asciiword, word, hword_asciipart, hword_part WITH catalog.search_word;

-- The words of one product's searchable text (the columns search_tsv
-- reads), distinct. IMMUTABLE as f_unaccent is: the body binds the
-- configuration when created.
CREATE FUNCTION catalog.search_words(title text, category text, description text, variant_text text) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  RETURN ARRAY(
    SELECT w FROM unnest(tsvector_to_array(to_tsvector('catalog.search_words'::regconfig,
      catalog.f_unaccent(title || ' ' || category || ' ' || description || ' ' || variant_text)))) w
    WHERE length(w) BETWEEN 3 AND 60);
GRANT EXECUTE ON FUNCTION catalog.search_words(text, text, text, text) TO bcp_app;

-- products: how many of the merchant's active products have the word. A
-- row whose count reaches 0 is deleted, so every word here finds
-- something. fillfactor: counts change with every catalog write and are
-- not indexed, so their updates stay on the page (HOT).
CREATE TABLE catalog.search_words (
  tenant_id uuid NOT NULL,
  word      text NOT NULL,
  products  integer NOT NULL,
  PRIMARY KEY (tenant_id, word)
) WITH (fillfactor = 70);

-- Kept by the products table's own triggers, so every writer (the catalog
-- service, imports, the bench's seed, a migration) keeps it right, in the
-- writer's transaction and scope (row security applies to the trigger's
-- statements as to the writer's). One trigger per event: transition
-- tables allow no more. Each statement adds its rows' words once: an
-- import of 500 products is one statement here, not 500.
-- +goose StatementBegin
CREATE FUNCTION catalog.count_search_words() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenants uuid[];
  words   text[];
  deltas  integer[];
BEGIN
  -- The change in each word's count (only the branch of this event reads
  -- its transition tables: the others do not exist).
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(tenant_id ORDER BY tenant_id, word), array_agg(word ORDER BY tenant_id, word), array_agg(n ORDER BY tenant_id, word)
    INTO tenants, words, deltas
    FROM (SELECT r.tenant_id, w.word, count(*)::integer AS n
          FROM new_products r, unnest(catalog.search_words(r.title, r.category, r.description, r.variant_text)) w (word)
          WHERE r.active GROUP BY r.tenant_id, w.word) d;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(tenant_id ORDER BY tenant_id, word), array_agg(word ORDER BY tenant_id, word), array_agg(n ORDER BY tenant_id, word)
    INTO tenants, words, deltas
    FROM (SELECT r.tenant_id, w.word, -count(*)::integer AS n
          FROM old_products r, unnest(catalog.search_words(r.title, r.category, r.description, r.variant_text)) w (word)
          WHERE r.active GROUP BY r.tenant_id, w.word) d;
  ELSE
    SELECT array_agg(tenant_id ORDER BY tenant_id, word), array_agg(word ORDER BY tenant_id, word), array_agg(n ORDER BY tenant_id, word)
    INTO tenants, words, deltas
    FROM (SELECT tenant_id, word, sum(n)::integer AS n
          FROM (SELECT r.tenant_id, w.word, 1 AS n
                FROM new_products r, unnest(catalog.search_words(r.title, r.category, r.description, r.variant_text)) w (word)
                WHERE r.active
                UNION ALL
                SELECT r.tenant_id, w.word, -1
                FROM old_products r, unnest(catalog.search_words(r.title, r.category, r.description, r.variant_text)) w (word)
                WHERE r.active) c
          GROUP BY tenant_id, word HAVING sum(n) <> 0) d;
  END IF;
  IF words IS NULL THEN
    RETURN NULL;
  END IF;
  -- In key order, so two writers of one merchant lock the same words in
  -- the same order; the words that no product has any more are deleted.
  WITH counted AS (
    INSERT INTO catalog.search_words AS s (tenant_id, word, products)
    SELECT * FROM unnest(tenants, words, deltas)
    ON CONFLICT (tenant_id, word) DO UPDATE SET products = s.products + EXCLUDED.products
    RETURNING s.tenant_id, s.word, s.products
  )
  SELECT array_agg(tenant_id), array_agg(word) INTO tenants, words FROM counted WHERE products <= 0;
  IF words IS NOT NULL THEN
    DELETE FROM catalog.search_words s USING unnest(tenants, words) AS z (tenant_id, word)
    WHERE s.tenant_id = z.tenant_id AND s.word = z.word AND s.products <= 0;
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The triggers first: they lock out catalog writes until this migration
-- commits, so no write falls between them and the words counted below.
CREATE TRIGGER count_search_words_insert AFTER INSERT ON catalog.products
  REFERENCING NEW TABLE AS new_products FOR EACH STATEMENT EXECUTE FUNCTION catalog.count_search_words();
CREATE TRIGGER count_search_words_update AFTER UPDATE ON catalog.products
  REFERENCING OLD TABLE AS old_products NEW TABLE AS new_products FOR EACH STATEMENT EXECUTE FUNCTION catalog.count_search_words();
CREATE TRIGGER count_search_words_delete AFTER DELETE ON catalog.products
  REFERENCING OLD TABLE AS old_products FOR EACH STATEMENT EXECUTE FUNCTION catalog.count_search_words();

-- The words of the catalogs that exist, counted by the owner: row
-- security is forced on products, so it is lifted for this statement, and
-- search_words is not yet forced.
ALTER TABLE catalog.products NO FORCE ROW LEVEL SECURITY;
INSERT INTO catalog.search_words (tenant_id, word, products)
SELECT p.tenant_id, w.word, count(*)
FROM catalog.products p, unnest(catalog.search_words(p.title, p.category, p.description, p.variant_text)) w (word)
WHERE p.active
GROUP BY p.tenant_id, w.word;
ALTER TABLE catalog.products FORCE ROW LEVEL SECURITY;

ALTER TABLE catalog.search_words ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.search_words FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.search_words
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- The merchant's words by trigrams (<% with the query's word), its own
-- only (btree_gin, as migration 00032's search indexes).
CREATE INDEX search_words_trgm ON catalog.search_words USING gin (tenant_id, word public.gin_trgm_ops) WITH (fastupdate = off);

-- +goose Down
DROP TRIGGER count_search_words_delete ON catalog.products;
DROP TRIGGER count_search_words_update ON catalog.products;
DROP TRIGGER count_search_words_insert ON catalog.products;
DROP FUNCTION catalog.count_search_words();
DROP TABLE catalog.search_words;
DROP FUNCTION catalog.search_words(text, text, text, text);
DROP TEXT SEARCH CONFIGURATION catalog.search_words;
DROP TEXT SEARCH DICTIONARY catalog.search_word;
