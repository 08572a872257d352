-- name: SetSearchSimilarity :exec
-- The word-similarity threshold of <% for this transaction, for
-- CorrectSearchWords: 0.5 takes "camizeta" to "camiseta" (0.67),
-- "travseiro" to "travesseiro" (0.8) and "mochilla" to "mochila" (0.78),
-- and finds nothing for a word with nothing that close; the default 0.6
-- would miss typos of short words ("canca" → "caneca", 0.57).
SELECT set_config('pg_trgm.word_similarity_threshold', '0.5', true);

-- name: SearchProducts :many
-- Text search: Portuguese full text (every word, stemmed) over accent-folded
-- title, category, description and variants, ranked by ts_rank (the title
-- weighs most, then category, description, variants; words near each
-- other rank higher). Only products with an active variant in the price
-- range are found. Keyset pagination on (score, id): score is a float4
-- computed the same way on every page.
--
-- The matches are ranked before their variants are read (OFFSET 0 keeps
-- the planner from checking the variants of every match first), so a word
-- of thousands of products reads the variants of the page's products, not
-- of all of them. The query is parsed once for the ranking (a sub-select,
-- run once): in a generic plan the expression would be parsed, folded and
-- stemmed again for every match.
--
-- No trigram closeness of the title to the query any more: ts_rank already
-- ranks words near each other higher, and word_similarity over every match
-- was the largest cost of a broad word's search.
SELECT ranked.id, ranked.title, ranked.description, ranked.image_url, ranked.category, ranked.score
FROM (
  SELECT hits.*
  FROM (
    SELECT p.id, p.title, p.description, p.image_url, p.category,
      ts_rank(p.search_tsv, (SELECT websearch_to_tsquery('pg_catalog.portuguese', catalog.f_unaccent(@query::text))))::real AS score
    FROM catalog.products p
    WHERE p.tenant_id = @tenant_id AND p.active
      AND p.search_tsv @@ websearch_to_tsquery('pg_catalog.portuguese', catalog.f_unaccent(@query::text))
      AND (cardinality(@categories::text[]) = 0 OR p.category = ANY(@categories::text[]))
  ) hits
  WHERE NOT @after::boolean OR hits.score < @after_score::real OR (hits.score = @after_score::real AND hits.id > @after_id::text)
  ORDER BY hits.score DESC, hits.id
  OFFSET 0
) ranked
WHERE EXISTS (SELECT 1 FROM catalog.variants v
              WHERE v.tenant_id = @tenant_id AND v.product_id = ranked.id AND v.active
                AND v.price BETWEEN @min_price::bigint AND @max_price::bigint)
ORDER BY ranked.score DESC, ranked.id
LIMIT @page_size;

-- name: CorrectSearchWords :many
-- A misspelt query's words, each with the merchant's word closest to it
-- (search_words, migration 00040), when full text found nothing. The
-- candidates are the merchant's words with a word similarity of at least
-- the threshold (SetSearchSimilarity; <% through the merchant's trigram
-- index), the closest by similarity, then the one more products have.
-- A word with no candidate, or a stop word, comes back without one.
SELECT q.word, q.folded, coalesce(c.word, '')::text AS correction
FROM (
  SELECT w::text AS word, catalog.f_unaccent(lower(w)) AS folded FROM unnest(@words::text[]) w
) q
LEFT JOIN LATERAL (
  SELECT s.word FROM catalog.search_words s
  WHERE s.tenant_id = @tenant_id AND q.folded <% s.word
    AND to_tsvector('catalog.search_words'::regconfig, q.folded) <> ''::tsvector
  ORDER BY similarity(q.folded, s.word) DESC, s.products DESC, s.word
  LIMIT 1
) c ON true;

-- name: BrowseProducts :many
-- No query text: the tenant's products in id order (keyset on id), with the
-- same filters as SearchProducts.
SELECT p.id, p.title, p.description, p.image_url, p.category
FROM catalog.products p
WHERE p.tenant_id = @tenant_id AND p.active AND p.id > @after_id::text
  AND (cardinality(@categories::text[]) = 0 OR p.category = ANY(@categories::text[]))
  AND EXISTS (SELECT 1 FROM catalog.variants v
              WHERE v.tenant_id = p.tenant_id AND v.product_id = p.id AND v.active
                AND v.price BETWEEN @min_price::bigint AND @max_price::bigint)
ORDER BY p.id
LIMIT @page_size;

-- name: ActiveVariantsOfProducts :many
-- What an agent may buy of the listed products, in the price range.
SELECT v.* FROM catalog.variants v
WHERE v.tenant_id = @tenant_id AND v.product_id = ANY(@product_ids::text[]) AND v.active
  AND v.price BETWEEN @min_price::bigint AND @max_price::bigint
ORDER BY v.product_id, v.id;

-- name: ActiveProductsByIDs :many
SELECT p.id, p.title, p.description, p.image_url, p.category
FROM catalog.products p
WHERE p.tenant_id = @tenant_id AND p.id = ANY(@ids::text[]) AND p.active;

-- name: ActiveVariantsByIDs :many
-- The active variants whose id or SKU (UCP lookup MAY resolve SKUs) is
-- one of @ids.
SELECT v.id, v.sku, v.product_id FROM catalog.variants v
WHERE v.tenant_id = @tenant_id AND (v.id = ANY(@ids::text[]) OR v.sku = ANY(@ids::text[])) AND v.active;

-- name: TopSearchTerms :many
-- The most searched terms of the last @days days (today included).
SELECT term, sum(searches)::bigint AS searches, sum(empty)::bigint AS empty
FROM catalog.search_terms
WHERE tenant_id = @tenant_id AND day > (now() AT TIME ZONE 'America/Sao_Paulo')::date - @days::int
GROUP BY term
ORDER BY sum(searches) DESC, term
LIMIT @max_terms;

-- name: EmptySearchTerms :many
-- The terms of the last @days days that found nothing, most often first.
SELECT term, sum(searches)::bigint AS searches, sum(empty)::bigint AS empty
FROM catalog.search_terms
WHERE tenant_id = @tenant_id AND day > (now() AT TIME ZONE 'America/Sao_Paulo')::date - @days::int AND empty > 0
GROUP BY term
ORDER BY sum(empty) DESC, term
LIMIT @max_terms;

-- name: AddSearchTerms :exec
-- Adds first-page searches counted in memory (terms.go): per day (São
-- Paulo) and term, folded like the index (lower case, no accents), so two
-- spellings of one term add to one row.
INSERT INTO catalog.search_terms (tenant_id, day, term, searches, empty)
SELECT @tenant_id, f.day, f.term, sum(f.searches), sum(f.empty)
FROM (
  SELECT u.day::date AS day, left(catalog.f_unaccent(lower(u.term)), 200) AS term, u.searches, u.empty
  FROM (SELECT unnest(@days::text[]) AS day, unnest(@terms::text[]) AS term,
               unnest(@searches::bigint[]) AS searches, unnest(@empties::bigint[]) AS empty) u
) f
GROUP BY f.day, f.term
ON CONFLICT (tenant_id, day, term) DO UPDATE
SET searches = catalog.search_terms.searches + EXCLUDED.searches, empty = catalog.search_terms.empty + EXCLUDED.empty;
