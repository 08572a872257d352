// Package searchplan reads the query plans of catalog search: every filter
// combination the search schema allows is run through the catalog service,
// the exact statement and arguments it sent are captured, and PostgreSQL's
// EXPLAIN of them is checked for index use. The catalog's plan test runs it
// on a few thousand rows; bcpbench search runs it on the 1M-product catalog
// it seeds, so the same checks hold at a real catalog's size.
package searchplan

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/services/catalog"
)

// Statement is one execution the service sent.
type Statement struct {
	SQL  string
	Args []any
}

// Recorder is a pgx tracer that keeps the last execution of each search
// statement, including the first statement of a transaction, which pgstore
// sends in a batch with BEGIN.
type Recorder struct {
	mu   sync.Mutex
	last map[string]Statement // sqlc query name → last execution
}

// Statements are the sqlc names of the search statements.
var Statements = []string{"SearchProducts", "CorrectSearchWords", "BrowseProducts"}

func NewRecorder() *Recorder { return &Recorder{last: map[string]Statement{}} }

func (r *Recorder) record(sql string, args []any) {
	for _, name := range Statements {
		if strings.HasPrefix(sql, "-- name: "+name+" ") {
			r.mu.Lock()
			r.last[name] = Statement{sql, args}
			r.mu.Unlock()
		}
	}
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	clear(r.last)
	r.mu.Unlock()
}

// Last is the last recorded execution of the named statement.
func (r *Recorder) Last(name string) (Statement, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.last[name]
	return s, ok
}

func (r *Recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.record(d.SQL, d.Args)
	return ctx
}
func (r *Recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *Recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *Recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.record(d.SQL, d.Args)
}
func (r *Recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Combo is one filter combination: query text (none, full text, or a typo
// that full text finds only once it is corrected against the merchant's
// words) × categories × price min/max × first or later page. The words are
// the ones both the plan test's and bcpbench's catalogs use.
type Combo struct {
	Query      string
	Categories bool
	Min, Max   bool
	Next       bool
}

// Combos are the 48 combinations.
func Combos() []Combo {
	var out []Combo
	for _, q := range []string{"", "camiseta preta", "camizeta"} {
		for _, cat := range []bool{false, true} {
			for _, pr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, next := range []bool{false, true} {
					out = append(out, Combo{q, cat, pr[0], pr[1], next})
				}
			}
		}
	}
	return out
}

func (c Combo) String() string {
	return fmt.Sprintf("query=%q categories=%v min=%v max=%v next=%v", c.Query, c.Categories, c.Min, c.Max, c.Next)
}

// Request is the search the combination makes (3 a page, so a second page
// exists).
func (c Combo) Request() *catalogv1.SearchCatalogRequest {
	req := &catalogv1.SearchCatalogRequest{Query: c.Query, Limit: 3}
	if c.Categories {
		req.Categories = []string{"Vestuário", "Casa"}
	}
	if c.Min {
		v := int64(2000)
		req.MinPrice = &v
	}
	if c.Max {
		v := int64(30000)
		req.MaxPrice = &v
	}
	return req
}

// Planned is a statement a combination runs and the text index it must
// use ("" for none).
type Planned struct{ Statement, TextIndex string }

// Statements are the statements that answer the combination: a typo's
// words are corrected against the merchant's words (through their trigram
// index), then searched with full text.
func (c Combo) Statements() []Planned {
	switch c.Query {
	case "":
		return []Planned{{"BrowseProducts", ""}}
	case "camizeta":
		return []Planned{{"CorrectSearchWords", "search_words_trgm"}, {"SearchProducts", "products_search"}}
	}
	return []Planned{{"SearchProducts", "products_search"}}
}

// Modes are the plans checked: the custom plan (what the first executions
// of a prepared statement get) and the generic one (what PostgreSQL may
// switch to).
var Modes = []string{"force_custom_plan", "force_generic_plan"}

// Checked is the plan of one statement of a combination in one mode.
type Checked struct {
	Combo     Combo
	Mode      string
	Statement string
	Plan      Plan
	// Problems: a sequential scan, or a text query that does not go
	// through its text index. None is what every combination must show.
	Problems []string
}

// Check runs every combination through a catalog service on pool (whose
// connections rec traces; one connection, so plans and settings are the
// service's) as tenant, and explains the statements each sent in both modes.
// With analyze the statements run (EXPLAIN ANALYZE, BUFFERS), so the plan
// carries its execution time.
func Check(ctx context.Context, pool *pgxpool.Pool, rec *Recorder, tenant uuid.UUID, analyze bool) ([]Checked, error) {
	svc := catalog.New(pool)
	tctx := tenancy.With(ctx, tenant)
	var out []Checked
	for _, c := range Combos() {
		req := c.Request()
		rec.Reset()
		r, err := svc.SearchCatalog(tctx, connect.NewRequest(req))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		if c.Next {
			if r.Msg.GetNextCursor() == "" {
				return nil, fmt.Errorf("%s: no second page to plan", c)
			}
			req.Cursor = r.Msg.GetNextCursor()
			rec.Reset()
			if _, err := svc.SearchCatalog(tctx, connect.NewRequest(req)); err != nil {
				return nil, fmt.Errorf("%s, next page: %w", c, err)
			}
		}
		for _, st := range c.Statements() {
			got, ok := rec.Last(st.Statement)
			if !ok {
				return nil, fmt.Errorf("%s: the service did not run %s", c, st.Statement)
			}
			for _, mode := range Modes {
				p, err := Explain(ctx, pool, tenant, mode, got, analyze)
				if err != nil {
					return nil, fmt.Errorf("%s, %s (%s): %w", c, st.Statement, mode, err)
				}
				ch := Checked{Combo: c, Mode: mode, Statement: st.Statement, Plan: p}
				if rels := p.Scans["Seq Scan"]; rels != nil {
					ch.Problems = append(ch.Problems, fmt.Sprintf("sequential scan of %v", rels))
				}
				if st.TextIndex != "" && !p.Indexes[st.TextIndex] {
					ch.Problems = append(ch.Problems, "does not use "+st.TextIndex)
				}
				out = append(out, ch)
			}
		}
	}
	return out, nil
}

// Plan is what EXPLAIN said.
type Plan struct {
	Text    string              // one line per node: type, relation, index
	Scans   map[string][]string // node type → relations
	Indexes map[string]bool
	// ExecutionMs and PlanningMs: with analyze only.
	ExecutionMs, PlanningMs float64
}

// Explain plans st as the service's role would, in the tenant's scope (RLS
// adds its predicate) with the search's settings, in plan_cache_mode mode.
func Explain(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID, mode string, st Statement, analyze bool) (Plan, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return Plan{}, err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return Plan{}, err
	}
	// A prepared statement outlives the transaction: deallocated after
	// the rollback, on the same connection, whatever happened.
	name := "explain_" + strings.TrimPrefix(mode, "force_")
	defer func() {
		_ = tx.Rollback(ctx)
		_, _ = conn.Exec(ctx, "DEALLOCATE "+name)
	}()
	for _, set := range [][2]string{{"app.tenant_id", tenant.String()}, {"pg_trgm.word_similarity_threshold", "0.5"}, {"plan_cache_mode", mode}} {
		if _, err := tx.Exec(ctx, `SELECT set_config($1, $2, true)`, set[0], set[1]); err != nil {
			return Plan{}, err
		}
	}
	// An SQL-level prepared statement and EXPLAIN EXECUTE, so that
	// plan_cache_mode decides custom versus generic as it does for the
	// pool's cached statements.
	if _, err := tx.Exec(ctx, "PREPARE "+name+" AS "+st.SQL); err != nil {
		return Plan{}, err
	}
	lits := make([]string, len(st.Args))
	for i, a := range st.Args {
		if lits[i], err = Literal(a); err != nil {
			return Plan{}, err
		}
	}
	opts := "FORMAT JSON"
	if analyze {
		opts = "ANALYZE, BUFFERS, FORMAT JSON"
	}
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN ("+opts+") EXECUTE "+name+"("+strings.Join(lits, ", ")+")").Scan(&raw); err != nil {
		return Plan{}, fmt.Errorf("EXPLAIN: %w", err)
	}
	var doc []struct {
		Plan          map[string]any `json:"Plan"`
		ExecutionTime float64        `json:"Execution Time"`
		PlanningTime  float64        `json:"Planning Time"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 1 {
		return Plan{}, fmt.Errorf("EXPLAIN output: %v %s", err, raw)
	}
	p := Plan{Scans: map[string][]string{}, Indexes: map[string]bool{}, ExecutionMs: doc[0].ExecutionTime, PlanningMs: doc[0].PlanningTime}
	var b strings.Builder
	var walk func(n map[string]any, depth int)
	walk = func(n map[string]any, depth int) {
		typ, _ := n["Node Type"].(string)
		rel, _ := n["Relation Name"].(string)
		idx, _ := n["Index Name"].(string)
		line := strings.TrimRight(fmt.Sprintf("%s%s %s %s", strings.Repeat("  ", depth), typ, rel, idx), " ")
		if rows, ok := n["Actual Rows"].(float64); ok {
			loops, _ := n["Actual Loops"].(float64)
			line += fmt.Sprintf("  (rows %.0f × %.0f loops)", rows, loops)
		}
		b.WriteString(line + "\n")
		if rel != "" {
			p.Scans[typ] = append(p.Scans[typ], rel)
		}
		if idx != "" {
			p.Indexes[idx] = true
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			if m, ok := c.(map[string]any); ok {
				walk(m, depth+1)
			}
		}
	}
	walk(doc[0].Plan, 0)
	p.Text = b.String()
	return p, nil
}

// Literal renders one recorded argument as an SQL literal (the argument
// types sqlc generates for the search statements).
func Literal(a any) (string, error) {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case string:
		return quote(v), nil
	case uuid.UUID:
		return quote(v.String()) + "::uuid", nil
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "ARRAY[" + strings.Join(q, ",") + "]::text[]", nil
	case bool:
		return strconv.FormatBool(v), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float32:
		// Shortest decimal that reads back as the same float4.
		return quote(strconv.FormatFloat(float64(v), 'g', -1, 32)) + "::real", nil
	}
	return "", fmt.Errorf("no literal for %T", a)
}
