package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/services/catalog"
)

// statementRecorder keeps the SQL and arguments of the search statements
// the service sends, including the first statement of a transaction, which
// pgstore sends in a batch with BEGIN.
type statementRecorder struct {
	mu   sync.Mutex
	last map[string]recorded // sqlc query name → last execution
}

type recorded struct {
	sql  string
	args []any
}

func (r *statementRecorder) record(sql string, args []any) {
	for _, name := range []string{"SearchProducts", "SearchProductsFuzzy", "BrowseProducts"} {
		if strings.HasPrefix(sql, "-- name: "+name+" ") {
			r.mu.Lock()
			r.last[name] = recorded{sql, args}
			r.mu.Unlock()
		}
	}
}

func (r *statementRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.record(d.SQL, d.Args)
	return ctx
}
func (r *statementRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *statementRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *statementRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.record(d.SQL, d.Args)
}
func (r *statementRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// The search statements use the indexes for every filter combination the
// schema allows (query text or none × categories × price min/max × first or
// later page), on a catalog of a few thousand ANALYZEd rows over several
// tenants: never a sequential scan of products or variants, and a text query
// always goes through its text index (full text, or trigrams for the typo
// fallback). Plans are read with EXPLAIN of the exact statement and
// arguments the service sent, as the application role in the tenant's
// scope; both the custom plan (what the first executions of a prepared
// statement get) and the generic plan (what PostgreSQL may switch to) are
// checked.
func TestSearchPlansUseIndexes(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	super, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	// Four tenants × 1 000 products × 3 variants, titles from a Portuguese
	// vocabulary so words are as selective as in a real shop.
	var tenants [4]string
	for i := range tenants {
		tenants[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
	}
	_, err = super.Exec(ctx, `
		INSERT INTO catalog.products (tenant_id, id, title, description, category)
		SELECT t::uuid, 'prd_' || lpad(i::text, 5, '0'),
		  (ARRAY['Camiseta','Caneca','Café','Chinelo','Boné','Mochila','Garrafa','Caderno','Toalha','Meia','Almofada','Luminária',
		         'Vaso','Relógio','Jaqueta','Bermuda','Sandália','Tênis','Óculos','Colar','Pulseira','Carteira','Cinto','Lenço',
		         'Agenda','Estojo','Panela','Frigideira','Travesseiro','Cobertor','Tapete','Cortina','Espelho','Quadro','Vela',
		         'Sabonete','Perfume','Shampoo','Escova','Pente'])[1 + i % 40] || ' ' ||
		  (ARRAY['Básica','Premium','Estampada','Lisa','Clássica','Esportiva','Infantil','Térmica','Artesanal','Orgânica'])[1 + (i / 40) % 10] || ' ' ||
		  (ARRAY['Preta','Branca','Azul','Vermelha','Verde','Amarela','Rosa','Cinza'])[1 + (i / 200) % 8] || ' ' || i,
		  'Produto número ' || i || ' feito no Brasil, de qualidade.',
		  (ARRAY['Vestuário','Cozinha','Casa','Acessórios','Calçados'])[1 + i % 5]
		FROM unnest($1::text[]) t, generate_series(1, 1000) i`, tenants[:])
	if err != nil {
		t.Fatal(err)
	}
	_, err = super.Exec(ctx, `
		INSERT INTO catalog.variants (tenant_id, id, product_id, sku, title, price, stock)
		SELECT tenant_id, 'var_' || substr(id, 5) || '_' || s, id, 'SKU-' || id || '-' || s, 'Tamanho ' || s,
		       1000 + (hashtext(id || s) & 32767), s
		FROM catalog.products, generate_series(0, 2) s`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := super.Exec(ctx, `ANALYZE catalog.products; ANALYZE catalog.variants`); err != nil {
		t.Fatal(err)
	}

	rec := &statementRecorder{last: map[string]recorded{}}
	pool := d.OneConnPool(t, rec)
	svc := catalog.New(pool)
	tctx := tenancy.With(ctx, uuid.MustParse(tenants[0]))

	type combo struct {
		query      string
		categories bool
		min, max   bool
		next       bool
	}
	var combos []combo
	for _, q := range []string{"", "camiseta preta", "camizeta"} {
		for _, cat := range []bool{false, true} {
			for _, pr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, next := range []bool{false, true} {
					combos = append(combos, combo{q, cat, pr[0], pr[1], next})
				}
			}
		}
	}
	reported := false
	for _, c := range combos {
		name := fmt.Sprintf("query=%q categories=%v min=%v max=%v next=%v", c.query, c.categories, c.min, c.max, c.next)
		req := &catalogv1.SearchCatalogRequest{Query: c.query, Limit: 3}
		if c.categories {
			req.Categories = []string{"Vestuário", "Casa"}
		}
		if c.min {
			req.MinPrice = ptr[int64](2000)
		}
		if c.max {
			req.MaxPrice = ptr[int64](30000)
		}
		clear(rec.last)
		r, err := svc.SearchCatalog(tctx, connect.NewRequest(req))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.next {
			if r.Msg.GetNextCursor() == "" {
				t.Fatalf("%s: no second page to plan", name)
			}
			req.Cursor = r.Msg.GetNextCursor()
			clear(rec.last)
			if _, err := svc.SearchCatalog(tctx, connect.NewRequest(req)); err != nil {
				t.Fatalf("%s, next page: %v", name, err)
			}
		}
		stmt, textIndex := "BrowseProducts", ""
		switch c.query {
		case "camiseta preta":
			stmt, textIndex = "SearchProducts", "products_search"
		case "camizeta":
			stmt, textIndex = "SearchProductsFuzzy", "products_title_trgm"
		}
		got, ok := rec.last[stmt]
		if !ok {
			t.Fatalf("%s: the service did not run %s", name, stmt)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, pool, tenants[0], mode, got)
			if !reported && stmt == "SearchProducts" && mode == "force_custom_plan" {
				t.Logf("plan of %s (%s):\n%s", stmt, name, plan.text)
				reported = true
			}
			if plan.scans["Seq Scan"] != nil {
				t.Errorf("%s (%s): sequential scan of %v\n%s", name, mode, plan.scans["Seq Scan"], plan.text)
			}
			if textIndex != "" && !plan.indexes[textIndex] {
				t.Errorf("%s (%s): the plan does not use %s\n%s", name, mode, textIndex, plan.text)
			}
		}
	}
}

type plan struct {
	text    string
	scans   map[string][]string // node type → relations
	indexes map[string]bool
}

// explain plans rec's statement as the service's role would, in the
// tenant's scope (RLS adds its predicate) with the search's settings.
func explain(t *testing.T, pool *pgxpool.Pool, tenantID, mode string, rec recorded) plan {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, set := range [][2]string{{"app.tenant_id", tenantID}, {"pg_trgm.word_similarity_threshold", "0.4"}, {"plan_cache_mode", mode}} {
		if _, err := tx.Exec(ctx, `SELECT set_config($1, $2, true)`, set[0], set[1]); err != nil {
			t.Fatal(err)
		}
	}
	// An SQL-level prepared statement and EXPLAIN EXECUTE, so that
	// plan_cache_mode decides custom versus generic as it does for the
	// pool's cached statements.
	stmt := "explain_" + strings.TrimPrefix(mode, "force_")
	if _, err := tx.Exec(ctx, "PREPARE "+stmt+" AS "+rec.sql); err != nil {
		t.Fatal(err)
	}
	lits := make([]string, len(rec.args))
	for i, a := range rec.args {
		lits[i] = literal(t, a)
	}
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+stmt+"("+strings.Join(lits, ", ")+")").Scan(&raw); err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	if _, err := tx.Exec(ctx, "DEALLOCATE "+stmt); err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Plan json.RawMessage `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("EXPLAIN output: %v %s", err, raw)
	}
	p := plan{scans: map[string][]string{}, indexes: map[string]bool{}}
	var b strings.Builder
	var walk func(n map[string]any, depth int)
	walk = func(n map[string]any, depth int) {
		typ, _ := n["Node Type"].(string)
		rel, _ := n["Relation Name"].(string)
		idx, _ := n["Index Name"].(string)
		fmt.Fprintf(&b, "%s%s %s %s\n", strings.Repeat("  ", depth), typ, rel, idx)
		if rel != "" {
			p.scans[typ] = append(p.scans[typ], rel)
		}
		if idx != "" {
			p.indexes[idx] = true
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			if m, ok := c.(map[string]any); ok {
				walk(m, depth+1)
			}
		}
	}
	var root map[string]any
	if err := json.Unmarshal(doc[0].Plan, &root); err != nil {
		t.Fatal(err)
	}
	walk(root, 0)
	p.text = b.String()
	return p
}

// literal renders one recorded argument as an SQL literal (the argument
// types sqlc generates for the search statements).
func literal(t *testing.T, a any) string {
	t.Helper()
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case string:
		return quote(v)
	case uuid.UUID:
		return quote(v.String()) + "::uuid"
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "ARRAY[" + strings.Join(q, ",") + "]::text[]"
	case bool:
		return strconv.FormatBool(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case float32:
		// Shortest decimal that reads back as the same float4.
		return quote(strconv.FormatFloat(float64(v), 'g', -1, 32)) + "::real"
	}
	t.Fatalf("no literal for %T", a)
	return ""
}
