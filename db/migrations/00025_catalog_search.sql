-- +goose Up
-- Catalog search (search_catalog): Portuguese full-text search over
-- accent-folded text, plus trigram similarity for misspellings.
--
-- unaccent and pg_trgm are "trusted" extensions (PostgreSQL ≥ 13): the
-- database owner that runs migrations may create them without superuser.
-- Their objects live in public; everything below names them by schema so
-- no search_path can redirect them.
CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public;
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;

-- unaccent() is only STABLE (its dictionary could change), so it cannot
-- appear in a generated column or an index. This wrapper pins the
-- dictionary, which makes IMMUTABLE true in practice; the SQL-standard body
-- binds the function and dictionary when created.
CREATE FUNCTION catalog.f_unaccent(text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  RETURN public.unaccent('public.unaccent'::regdictionary, $1);
GRANT EXECUTE ON FUNCTION catalog.f_unaccent(text) TO bcp_app;

-- category: one merchant-defined value or path ("Vestuário > Camisetas"),
-- what search filters.categories matches exactly.
ALTER TABLE catalog.products
  ADD COLUMN category text NOT NULL DEFAULT '' CHECK (length(category) <= 200);

-- variant_text: the titles and SKUs of the product's active variants,
-- written by the catalog's writers with the product (a generated column
-- cannot read another table), so a size, a colour or a SKU finds it.
ALTER TABLE catalog.products
  ADD COLUMN variant_text text NOT NULL DEFAULT '';
-- The owner fills it for the products that exist; row security is forced
-- on both tables it reads and writes, so it is lifted for this
-- transaction's statement.
ALTER TABLE catalog.products NO FORCE ROW LEVEL SECURITY;
ALTER TABLE catalog.variants NO FORCE ROW LEVEL SECURITY;
UPDATE catalog.products p SET variant_text = coalesce((
  SELECT string_agg(v.title || ' ' || v.sku, ' ' ORDER BY v.title COLLATE "C", v.sku COLLATE "C") FROM catalog.variants v
  WHERE v.tenant_id = p.tenant_id AND v.product_id = p.id AND v.active), '');
ALTER TABLE catalog.variants FORCE ROW LEVEL SECURITY;
ALTER TABLE catalog.products FORCE ROW LEVEL SECURITY;

-- Title weighs most, then category, then description, then the variants.
-- Accents are folded before the Portuguese stemmer, so "cerâmica" and
-- "ceramica" meet.
ALTER TABLE catalog.products
  ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('pg_catalog.portuguese', catalog.f_unaccent(title)), 'A') ||
    setweight(to_tsvector('pg_catalog.portuguese', catalog.f_unaccent(category)), 'B') ||
    setweight(to_tsvector('pg_catalog.portuguese', catalog.f_unaccent(description)), 'C') ||
    setweight(to_tsvector('pg_catalog.portuguese', catalog.f_unaccent(variant_text)), 'D')
  ) STORED;

-- The folded title, for trigrams: a stored column rather than an
-- expression index, so that the fuzzy clause applies nothing but <% to a
-- column. Under row-level security the planner uses a clause as an index condition
-- only when every function applied to a column in it is LEAKPROOF (else it
-- could see other tenants' rows before the policy filters them); lower()
-- and unaccent() are not, word_similarity_op can be made so (db.Bootstrap,
-- deploy/README "Catalog search").
ALTER TABLE catalog.products
  ADD COLUMN search_title text GENERATED ALWAYS AS (catalog.f_unaccent(lower(title))) STORED;

-- Single-column GIN indexes: the planner combines them with the primary
-- key's tenant_id (BitmapAnd); multi-column GIN with btree_gin on
-- tenant_id was costed so badly that it was never chosen. fastupdate off:
-- catalogs are read far more than written, and rows waiting in a GIN
-- pending list are scanned by every search (and priced so by the planner,
-- which then preferred reading the tenant's whole catalog) until a vacuum.
CREATE INDEX products_search ON catalog.products USING gin (search_tsv) WITH (fastupdate = off);
CREATE INDEX products_title_trgm ON catalog.products USING gin (search_title public.gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX products_category ON catalog.products (tenant_id, category, id);

-- What agents search for, per merchant and day (São Paulo time): the
-- admin shows the most searched terms and those that found nothing. One
-- row per distinct folded term and day; a search adds to its row.
CREATE TABLE catalog.search_terms (
  tenant_id uuid NOT NULL,
  day       date NOT NULL,
  term      text NOT NULL CHECK (length(term) BETWEEN 1 AND 200),
  searches  bigint NOT NULL CHECK (searches > 0),
  empty     bigint NOT NULL CHECK (empty BETWEEN 0 AND searches), -- searches that found nothing
  PRIMARY KEY (tenant_id, day, term)
);
ALTER TABLE catalog.search_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.search_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.search_terms
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);

-- Merchants created before the catalog capabilities existed get them, as
-- new merchants do (bcpnames.DefaultCapabilities): there is no other way to
-- enable a capability. The registry scope lets this transaction see and
-- change every tenant's row; the change trigger tells the edges.
SELECT set_config('app.scope', 'registry', true);
UPDATE tenants.tenants
SET capabilities = capabilities || ARRAY(
      SELECT c FROM unnest(ARRAY['br.dev.bcp.shopping.catalog.search', 'br.dev.bcp.shopping.catalog.lookup']) c
      WHERE c <> ALL (capabilities)),
    updated_at = now()
WHERE NOT (capabilities @> ARRAY['br.dev.bcp.shopping.catalog.search', 'br.dev.bcp.shopping.catalog.lookup']);

-- +goose Down
SELECT set_config('app.scope', 'registry', true);
UPDATE tenants.tenants
SET capabilities = array_remove(array_remove(capabilities, 'br.dev.bcp.shopping.catalog.search'), 'br.dev.bcp.shopping.catalog.lookup'),
    updated_at = now()
WHERE capabilities && ARRAY['br.dev.bcp.shopping.catalog.search', 'br.dev.bcp.shopping.catalog.lookup'];
DROP TABLE catalog.search_terms;
DROP INDEX catalog.products_category;
DROP INDEX catalog.products_title_trgm;
DROP INDEX catalog.products_search;
ALTER TABLE catalog.products DROP COLUMN search_title, DROP COLUMN search_tsv, DROP COLUMN variant_text, DROP COLUMN category;
DROP FUNCTION catalog.f_unaccent(text);
