package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/services/catalog/catalogdb"
)

// Agent-facing catalog limits (UCP: default page size 10; implementations
// MAY clamp the page size and MUST reject a lookup batch over their limit).
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
	maxQueryLen        = 200
	maxCatalogLookup   = 50
	maxFilterValues    = 50
)

// Match kinds of a lookup input (UCP input_correlation.match).
const (
	matchExact    = "exact"
	matchFeatured = "featured"
)

// searchCursor is the opaque pagination cursor: where the last page ended
// and a digest of the query and filters it belongs to, so a cursor reused
// with another query is rejected instead of silently skipping rows.
type searchCursor struct {
	Digest string `json:"d"`
	// Score is the float4 bit pattern of the last row's score: it must
	// compare equal in SQL, so no decimal round trip.
	Score uint32 `json:"s,omitempty"`
	ID    string `json:"i"`
	// Fuzzy: the query is answered with its words corrected against the
	// merchant's (full text found nothing on the first page), on every
	// page alike.
	Fuzzy bool `json:"f,omitempty"`
}

func (c searchCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, digest string) (searchCursor, error) {
	var c searchCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.ID == "" || !storableText(c.ID) {
		return c, apperr.Invalid("pagination.cursor", "invalid_cursor", "malformed cursor; pass the cursor of the previous response unchanged")
	}
	if c.Digest != digest {
		return c, apperr.Invalid("pagination.cursor", "invalid_cursor", "the cursor belongs to another query or other filters")
	}
	return c, nil
}

// SearchCatalog finds the tenant's active products for an agent.
func (s *Service) SearchCatalog(ctx context.Context, req *connect.Request[catalogv1.SearchCatalogRequest]) (*connect.Response[catalogv1.SearchCatalogResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	query := strings.Join(strings.Fields(m.GetQuery()), " ")
	if utf8.RuneCountInString(query) > maxQueryLen || !storableText(query) {
		return nil, apperr.Invalid("query", "invalid_query", "query must be valid text of at most %d characters", maxQueryLen)
	}
	if len(m.GetCategories()) > maxFilterValues {
		return nil, apperr.Invalid("filters.categories", "too_many_categories", "at most %d categories", maxFilterValues)
	}
	var categories []string
	for i, c := range m.GetCategories() {
		if !storableText(c) {
			return nil, apperr.Invalid(fmt.Sprintf("filters.categories[%d]", i), "invalid_category", "a category must be valid text without NUL")
		}
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(categories, c) {
			categories = append(categories, c)
		}
	}
	slices.Sort(categories)
	minPrice, maxPrice := int64(0), int64(math.MaxInt64)
	if m.MinPrice != nil {
		minPrice = max(m.GetMinPrice(), 0)
	}
	if m.MaxPrice != nil {
		maxPrice = m.GetMaxPrice()
	}
	limit := m.GetLimit()
	switch {
	case limit <= 0:
		limit = defaultSearchLimit
	case limit > maxSearchLimit:
		limit = maxSearchLimit
	}
	digest := queryDigest(query, categories, minPrice, maxPrice)
	var cur searchCursor
	after := m.GetCursor() != ""
	if after {
		if cur, err = decodeCursor(m.GetCursor(), digest); err != nil {
			return nil, err
		}
	}
	resp := &catalogv1.SearchCatalogResponse{}
	if minPrice > maxPrice {
		return connect.NewResponse(resp), nil
	}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		type hit struct {
			row   catalogdb.ActiveProductsByIDsRow
			score float32
		}
		var hits []hit
		if query != "" {
			params := catalogdb.SearchProductsParams{
				Query: query, TenantID: tid, Categories: nonNilStrings(categories), MinPrice: minPrice, MaxPrice: maxPrice,
				After: after, AfterScore: math.Float32frombits(cur.Score), AfterID: cur.ID, PageSize: limit + 1,
			}
			// A later page of a corrected query is corrected again: the
			// same way, unless the catalog changed in between (which moves
			// the ranking as well).
			var rows []catalogdb.SearchProductsRow
			corrected := true
			if cur.Fuzzy {
				if params.Query, corrected, err = correctQuery(ctx, q, tid, query); err != nil {
					return err
				}
			}
			if corrected {
				if rows, err = q.SearchProducts(ctx, params); err != nil {
					return err
				}
			}
			// Full text found nothing at all: the query is probably
			// misspelt, so its words are corrected against the merchant's
			// own and searched again, on every page alike.
			if !after && len(rows) == 0 {
				if params.Query, corrected, err = correctQuery(ctx, q, tid, query); err != nil {
					return err
				}
				if corrected {
					cur.Fuzzy = true
					if rows, err = q.SearchProducts(ctx, params); err != nil {
						return err
					}
				}
			}
			for _, r := range rows {
				hits = append(hits, hit{catalogdb.ActiveProductsByIDsRow{ID: r.ID, Title: r.Title, Description: r.Description, ImageUrl: r.ImageUrl, Category: r.Category}, r.Score})
			}
		} else {
			rows, err := q.BrowseProducts(ctx, catalogdb.BrowseProductsParams{
				TenantID: tid, AfterID: cur.ID, Categories: nonNilStrings(categories), MinPrice: minPrice, MaxPrice: maxPrice, PageSize: limit + 1,
			})
			if err != nil {
				return err
			}
			for _, r := range rows {
				hits = append(hits, hit{row: catalogdb.ActiveProductsByIDsRow(r)})
			}
		}
		if len(hits) > int(limit) {
			hits = hits[:limit]
			last := hits[len(hits)-1]
			resp.NextCursor = searchCursor{Digest: digest, Score: math.Float32bits(last.score), ID: last.row.ID, Fuzzy: cur.Fuzzy}.encode()
		}
		rows := make([]catalogdb.ActiveProductsByIDsRow, len(hits))
		for i, h := range hits {
			rows[i] = h.row
		}
		if resp.Products, err = withVariants(ctx, q, tid, rows, minPrice, maxPrice); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A search is counted once, on its first page, in memory (terms.go).
	if query != "" && !after {
		s.terms.add(tid, s.now(), query, len(resp.Products) > 0)
	}
	return connect.NewResponse(resp), nil
}

// minCorrectable is the shortest word correctQuery corrects: a word of one
// or two letters has too few trigrams to tell a typo from another word.
const minCorrectable = 3

// correctQuery corrects query against the merchant's words
// (CorrectSearchWords), considering its words of letters only, of at least
// minCorrectable letters: a word the merchant has stays as written, a
// misspelt one becomes the merchant's closest word, and a word with
// nothing close enough is left out (the merchant sells nothing it names,
// so it cannot narrow the search; a query of such words only finds
// nothing). Everything else (numbers, short words, punctuation, quotes,
// "or", a leading "-") stays as written. ok is false when nothing changed:
// searching again would find nothing again.
func correctQuery(ctx context.Context, q *catalogdb.Queries, tid uuid.UUID, query string) (corrected string, ok bool, err error) {
	spans := queryWords(query)
	var words []string
	for _, sp := range spans {
		if w := query[sp[0]:sp[1]]; !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return query, false, nil
	}
	if err := q.SetSearchSimilarity(ctx); err != nil {
		return "", false, err
	}
	rows, err := q.CorrectSearchWords(ctx, catalogdb.CorrectSearchWordsParams{Words: words, TenantID: tid})
	if err != nil {
		return "", false, err
	}
	fix := map[string]string{} // word → its correction, "" to leave it out
	for _, r := range rows {
		if r.Correction != r.Folded {
			fix[r.Word] = r.Correction
		}
	}
	if len(fix) == 0 {
		return query, false, nil
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if c, ok := fix[query[sp[0]:sp[1]]]; ok {
			b.WriteString(query[last:sp[0]])
			b.WriteString(c)
			last = sp[1]
		}
	}
	b.WriteString(query[last:])
	corrected = b.String()
	// Nothing searchable left: every word was left out.
	if !strings.ContainsFunc(corrected, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return query, false, nil
	}
	return corrected, true, nil
}

// queryWords are the byte spans of query's correctable words: maximal runs
// of letters and digits that hold only letters, at least minCorrectable.
func queryWords(query string) [][2]int {
	var out [][2]int
	start, letters, digits := -1, 0, false
	flush := func(end int) {
		if start >= 0 && !digits && letters >= minCorrectable {
			out = append(out, [2]int{start, end})
		}
		start, letters, digits = -1, 0, false
	}
	for i, r := range query {
		switch {
		case unicode.IsLetter(r) || unicode.IsMark(r):
			if start < 0 {
				start = i
			}
			if unicode.IsLetter(r) {
				letters++
			}
		case unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
			digits = true
		default:
			flush(i)
		}
	}
	flush(len(query))
	return out
}

func queryDigest(query string, categories []string, minPrice, maxPrice int64) string {
	h := sha256.New()
	h.Write([]byte(query))
	for _, c := range categories {
		h.Write([]byte{0})
		h.Write([]byte(c))
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(minPrice))
	binary.BigEndian.PutUint64(b[8:], uint64(maxPrice))
	h.Write(b[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// storableText reports whether PostgreSQL text can hold s (no NUL, valid
// UTF-8): anything else would fail the statement as an internal error.
func storableText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// withVariants attaches the active variants in the price range to the
// products, in the products' order; a product left without one (changed
// between the two reads) is dropped, since a product needs a variant.
func withVariants(ctx context.Context, q *catalogdb.Queries, tid uuid.UUID, rows []catalogdb.ActiveProductsByIDsRow, minPrice, maxPrice int64) ([]*catalogv1.CatalogProduct, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	pids := make([]string, len(rows))
	for i, r := range rows {
		pids[i] = r.ID
	}
	vs, err := q.ActiveVariantsOfProducts(ctx, catalogdb.ActiveVariantsOfProductsParams{TenantID: tid, ProductIds: pids, MinPrice: minPrice, MaxPrice: maxPrice})
	if err != nil {
		return nil, err
	}
	byProduct := map[string][]*catalogv1.CatalogVariant{}
	for _, v := range vs {
		byProduct[v.ProductID] = append(byProduct[v.ProductID], catalogVariant(v))
	}
	out := make([]*catalogv1.CatalogProduct, 0, len(rows))
	for _, r := range rows {
		if v := featuredFirst(byProduct[r.ID]); len(v) > 0 {
			out = append(out, catalogProduct(r, v))
		}
	}
	return out, nil
}

// featuredFirst moves the first available variant to the front: UCP
// platforms treat the first variant as the featured one.
func featuredFirst(vs []*catalogv1.CatalogVariant) []*catalogv1.CatalogVariant {
	if i := slices.IndexFunc(vs, (*catalogv1.CatalogVariant).GetAvailable); i > 0 {
		v := vs[i]
		copy(vs[1:i+1], vs[:i])
		vs[0] = v
	}
	return vs
}

func catalogProduct(r catalogdb.ActiveProductsByIDsRow, vs []*catalogv1.CatalogVariant) *catalogv1.CatalogProduct {
	return &catalogv1.CatalogProduct{Id: r.ID, Title: r.Title, Description: r.Description, Category: r.Category, ImageUrl: r.ImageUrl, Variants: vs}
}

func catalogVariant(v catalogdb.CatalogVariant) *catalogv1.CatalogVariant {
	return &catalogv1.CatalogVariant{
		Id: v.ID, Sku: v.Sku, Title: v.Title, Price: v.Price, Currency: v.Currency, Available: v.Stock > 0, ImageUrl: v.ImageUrl,
	}
}

// LookupCatalog resolves product ids, variant ids and SKUs to active
// products (an id naming a variant wins over a SKU, both over a product). A
// product is returned once however many ids name it; each returned variant
// lists the ids that resolved to it (exact for its own id or SKU, featured
// for its product's id). Inactive products and variants are not in the agent's
// catalog and count as not found.
func (s *Service) LookupCatalog(ctx context.Context, req *connect.Request[catalogv1.LookupCatalogRequest]) (*connect.Response[catalogv1.LookupCatalogResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	var want []string
	seen := map[string]bool{}
	for i, id := range req.Msg.GetIds() {
		if !storableText(id) {
			return nil, apperr.Invalid(fmt.Sprintf("ids[%d]", i), "invalid_id", "an id must be valid text without NUL")
		}
		if !seen[id] {
			seen[id] = true
			want = append(want, id)
		}
	}
	switch {
	case len(want) == 0:
		return nil, apperr.Invalid("ids", "ids_required", "at least one id is required")
	case len(want) > maxCatalogLookup:
		return nil, apperr.Invalid("ids", "request_too_large", "at most %d distinct ids per lookup, got %d", maxCatalogLookup, len(want))
	}
	resp := &catalogv1.LookupCatalogResponse{}
	// Three reads, a round trip each, no BEGIN and COMMIT.
	err = pgstore.Reads(ctx, s.pool, func(sq *pgstore.SingleQuerier) error {
		q := catalogdb.New(sq)
		vrows, err := q.ActiveVariantsByIDs(ctx, catalogdb.ActiveVariantsByIDsParams{TenantID: tid, Ids: want})
		if err != nil {
			return err
		}
		// Each input naming a variant: by its id, else by its SKU.
		variants := map[string]catalogdb.ActiveVariantsByIDsRow{}
		for _, v := range vrows {
			if seen[v.ID] {
				variants[v.ID] = v
			}
		}
		for _, v := range vrows {
			if _, byID := variants[v.Sku]; seen[v.Sku] && !byID {
				variants[v.Sku] = v
			}
		}
		// The products named, in the order their first id was requested.
		var pids []string
		for _, id := range want {
			pid := id
			if v, ok := variants[id]; ok {
				pid = v.ProductID
			}
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
		prows, err := q.ActiveProductsByIDs(ctx, catalogdb.ActiveProductsByIDsParams{TenantID: tid, Ids: pids})
		if err != nil {
			return err
		}
		byID := map[string]catalogdb.ActiveProductsByIDsRow{}
		for _, p := range prows {
			byID[p.ID] = p
		}
		var rows []catalogdb.ActiveProductsByIDsRow
		for _, pid := range pids {
			if p, ok := byID[pid]; ok {
				rows = append(rows, p)
			}
		}
		products, err := withVariants(ctx, q, tid, rows, 0, math.MaxInt64)
		if err != nil {
			return err
		}
		found := map[string]bool{}
		for _, p := range products {
			resolve(p, want, variants, req.Msg.GetAllVariants())
			for _, v := range p.Variants {
				for _, in := range v.Inputs {
					found[in.Id] = true
				}
			}
			if len(p.Variants) > 0 {
				resp.Products = append(resp.Products, p)
			}
		}
		for _, id := range want {
			if !found[id] {
				resp.NotFound = append(resp.NotFound, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// resolve sets the inputs of p's variants from the requested ids and keeps
// the variants a lookup returns: the requested ones and, for a product id,
// the featured one (all of them with all, the requested variant first).
func resolve(p *catalogv1.CatalogProduct, want []string, variants map[string]catalogdb.ActiveVariantsByIDsRow, all bool) {
	var first *catalogv1.CatalogVariant
	for _, id := range want {
		v, named := variants[id]
		switch {
		case named && v.ProductID == p.Id:
			i := slices.IndexFunc(p.Variants, func(pv *catalogv1.CatalogVariant) bool { return pv.Id == v.ID })
			if i < 0 {
				continue
			}
			pv := p.Variants[i]
			pv.Inputs = append(pv.Inputs, &catalogv1.CatalogInput{Id: id, Match: matchExact})
			if first == nil {
				first = pv
			}
		case !named && id == p.Id:
			f := p.Variants[0]
			f.Inputs = append(f.Inputs, &catalogv1.CatalogInput{Id: id, Match: matchFeatured})
		}
	}
	if all {
		if first != nil {
			i := slices.Index(p.Variants, first)
			copy(p.Variants[1:i+1], p.Variants[:i])
			p.Variants[0] = first
		}
		return
	}
	p.Variants = slices.DeleteFunc(p.Variants, func(v *catalogv1.CatalogVariant) bool { return len(v.Inputs) == 0 })
}

// SearchTerms reports the tenant's most searched terms and the terms that
// found nothing.
func (s *Service) SearchTerms(ctx context.Context, req *connect.Request[catalogv1.SearchTermsRequest]) (*connect.Response[catalogv1.SearchTermsResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	days, limit := req.Msg.GetDays(), req.Msg.GetLimit()
	if days <= 0 {
		days = 30
	}
	if limit <= 0 {
		limit = 10
	}
	days, limit = min(days, 90), min(limit, 100)
	// What this process counted and has not written yet is part of the
	// answer (other catalog processes write theirs within termsFlushEvery).
	if err := s.flushTerms(ctx, &tid); err != nil {
		return nil, err
	}
	resp := &catalogv1.SearchTermsResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		top, err := q.TopSearchTerms(ctx, catalogdb.TopSearchTermsParams{TenantID: tid, Days: days, MaxTerms: limit})
		if err != nil {
			return err
		}
		for _, t := range top {
			resp.Top = append(resp.Top, &catalogv1.SearchTerm{Term: t.Term, Searches: t.Searches, Empty: t.Empty})
		}
		empty, err := q.EmptySearchTerms(ctx, catalogdb.EmptySearchTermsParams{TenantID: tid, Days: days, MaxTerms: limit})
		if err != nil {
			return err
		}
		for _, t := range empty {
			resp.NoResults = append(resp.NoResults, &catalogv1.SearchTerm{Term: t.Term, Searches: t.Searches, Empty: t.Empty})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}
