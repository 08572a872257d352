package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	segjson "github.com/segmentio/encoding/json"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform/loadkit"
	"github.com/bcpdev/bcp/services/catalog/searchplan"
)

// The catalog search benchmark (issue 25, deliverable 5): search_catalog
// at a real catalog's size, next to get_checkout in the same run.
//
//	go run ./cmd/bcpbench search --tenants 100 --products 10000 --rate 50 --duration 30s
//
// It starts the platform in process on a durable PostgreSQL (as the other
// phases), onboards --tenants merchants through the operator APIs, then
// seeds --products products per merchant with set-based INSERT … SELECT
// FROM unnest, --seed-batch at a time and the merchants interleaved, as
// the application role in each merchant's scope (row security checks every
// row; the generated search columns, the merchants' search words and the
// GIN and btree indexes are the migrations' own), VACUUM ANALYZEs the
// catalog (what autovacuum would have done to a catalog that has been
// there a while), checks the plans of every search filter combination with EXPLAIN ANALYZE
// on that data (searchplan), and measures, in this order and --rounds
// times: get_checkout at --rate (open loop), search_catalog at --rate
// (open loop; the p99 target is judged on these phases), and a closed loop
// of searches at --peak-concurrency (the most this machine serves).
//
// The queries are Portuguese, spread uniformly over the merchants, from a
// weighted mix (searchMix): with and without accents, a typo that full text
// finds only with its words corrected, price and category filters, a
// category browse without text, a broad term of the descriptions, and
// second pages.

// searchConfig are bcpbench search's flags.
type searchConfig struct {
	tenants, products, seedConc int
	seedBatch                   int
	rate                        float64
	duration, warmup            time.Duration
	peakConc, rounds            int
	maxInFlight, statements     int
	explain, hold               bool
	out                         string
}

// SearchResult is the JSON file of a search run.
type SearchResult struct {
	Started time.Time   `json:"started"`
	Machine Machine     `json:"machine"`
	Config  any         `json:"config"`
	Seed    SeedStats   `json:"seed"`
	Plans   PlanSummary `json:"plans"`
	Phases  []Phase     `json:"phases"`
	// Empty counts, per phase and query kind, the searches that found
	// nothing: every query of the mix finds something in the seeded
	// catalog, so anything here is a search that stopped working.
	Empty     map[string]map[string]int `json:"empty_results"`
	Targets   []Target                  `json:"targets"`
	LoadAfter string                    `json:"loadavg_end"`
}

// SeedStats describe the seeded catalog.
type SeedStats struct {
	Merchants           int     `json:"merchants"`
	ProductsPerMerchant int     `json:"products_per_merchant"` // seeded by the bench
	Products            int64   `json:"products"`              // in the database, the merchants' own Camiseta included
	Variants            int64   `json:"variants"`
	MinPerMerchant      int64   `json:"min_products_per_merchant"`
	MaxPerMerchant      int64   `json:"max_products_per_merchant"`
	Seconds             float64 `json:"seconds"`
	ProductsPerS        float64 `json:"products_per_s"`
	VacuumSeconds       float64 `json:"vacuum_analyze_seconds"`
	// SizesMB are the catalog relations' sizes (tables without their
	// indexes; each index on its own).
	SizesMB map[string]float64 `json:"sizes_mb"`
}

// PlanSummary is the EXPLAIN check on the seeded data.
type PlanSummary struct {
	Checked  int        `json:"checked"`
	Problems []string   `json:"problems"`
	Stats    []PlanStat `json:"by_statement"`
	// Samples are plan texts (EXPLAIN ANALYZE), one per statement: the
	// custom plan of its first combination.
	Samples map[string]string `json:"samples"`
}

// PlanStat is one statement's plans in one mode.
type PlanStat struct {
	Statement string   `json:"statement"`
	Mode      string   `json:"mode"`
	Combos    int      `json:"combinations"`
	Indexes   []string `json:"indexes"`
	SeqScans  int      `json:"seq_scans"`
	MaxExecMs float64  `json:"max_execution_ms"`
	Slowest   string   `json:"slowest"`
}

func runSearchBench(ctx context.Context, args []string) error {
	var cfg searchConfig
	fs := flag.NewFlagSet("bcpbench search", flag.ExitOnError)
	fs.IntVar(&cfg.tenants, "tenants", 100, "merchants")
	fs.IntVar(&cfg.products, "products", 10_000, "products seeded per merchant (1 to 3 variants each)")
	fs.IntVar(&cfg.seedConc, "seed-concurrency", 2, "seed transactions at once")
	fs.IntVar(&cfg.seedBatch, "seed-batch", 500, "products per seed transaction: the merchants' catalogs are inserted a batch of each at a time, interleaved")
	fs.Float64Var(&cfg.rate, "rate", 50, "open loop: searches (and get_checkout calls, in their own phase) per second")
	fs.DurationVar(&cfg.duration, "duration", 30*time.Second, "length of each measured phase")
	fs.DurationVar(&cfg.warmup, "warmup", 10*time.Second, "unmeasured searches and get_checkout calls before the phases")
	fs.IntVar(&cfg.peakConc, "peak-concurrency", 4, "closed-loop search phase at this concurrency (0: none)")
	fs.IntVar(&cfg.rounds, "rounds", 1, "times the phases run, in turn")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", 2000, "open loop: calls in flight at most (more arrivals count as dropped)")
	fs.IntVar(&cfg.statements, "pg-statements", 4, "pg_stat_statements: the N most frequent statements of each phase (-1: off)")
	fs.BoolVar(&cfg.explain, "explain", true, "check the search plans of every filter combination on the seeded data (EXPLAIN ANALYZE)")
	fs.StringVar(&cfg.out, "out", "bcpbench-search.json", "JSON result file (\"\" for none)")
	fs.BoolVar(&cfg.hold, "hold", false, "after the report, keep the platform and its PostgreSQL running (prints a psql URL) until interrupted")
	_ = fs.Parse(args)
	if cfg.tenants < 1 || cfg.products < 1 || cfg.rate <= 0 || cfg.rounds < 1 {
		return fmt.Errorf("need --tenants, --products, --rate and --rounds above 0")
	}
	res := &SearchResult{Started: time.Now().UTC(), Machine: machine(), Empty: map[string]map[string]int{}, Config: map[string]any{
		"tenants": cfg.tenants, "products": cfg.products, "rate": cfg.rate, "duration": cfg.duration.String(), "warmup": cfg.warmup.String(),
		"peak_concurrency": cfg.peakConc, "rounds": cfg.rounds, "seed_batch": cfg.seedBatch, "fsync": !noFsync, "args": args}}

	e, err := startEnv(ctx, envOptions{tenants: cfg.tenants, statements: cfg.statements >= 0, catalogAgent: true}, logf)
	if err != nil {
		return err
	}
	defer e.stop()
	tids := make([]uuid.UUID, len(e.merchants))
	for i, m := range e.merchants {
		tids[i] = m.TenantID
	}
	logf("seeding %d products at each of %d merchants, %d per transaction, %d transactions at a time", cfg.products, len(tids), cfg.seedBatch, cfg.seedConc)
	t0 := time.Now()
	if err := seedCatalogs(ctx, e.pool, tids, cfg.products, cfg.seedBatch, cfg.seedConc, func(round, rounds int) {
		if round%max(1, rounds/10) == 0 || round == rounds {
			done := min(round*cfg.seedBatch, cfg.products) * len(tids)
			logf("  round %d of %d: %d products (%.0f/s)", round, rounds, done, float64(done)/time.Since(t0).Seconds())
		}
	}); err != nil {
		return err
	}
	res.Seed.Seconds = time.Since(t0).Seconds()
	res.Seed.Merchants, res.Seed.ProductsPerMerchant = len(tids), cfg.products
	res.Seed.ProductsPerS = float64(len(tids)*cfg.products) / res.Seed.Seconds
	if err := e.catalogStats(ctx, &res.Seed); err != nil {
		return err
	}
	logf("seeded %d products, %d variants in %.0f s; VACUUM ANALYZE %.0f s", res.Seed.Products, res.Seed.Variants, res.Seed.Seconds, res.Seed.VacuumSeconds)

	if cfg.explain {
		logf("EXPLAIN ANALYZE of %d search filter combinations × %d plan modes", len(searchplan.Combos()), len(searchplan.Modes))
		if res.Plans, err = e.checkPlans(ctx, tids[0]); err != nil {
			return err
		}
	}

	b := &bench{env: e, platformAgents: newAgents("http://"+e.publicAddr+"/bcp/mcp", e, false, benchTransport())}
	sb := &searchBench{b: b, mix: searchMix()}
	if err := sb.prepare(ctx); err != nil {
		return err
	}
	if cfg.warmup > 0 {
		logf("warm-up %s", cfg.warmup)
		b.platformAgents.rec = newRecorder()
		closedLoop(ctx, 4, cfg.warmup/2, sb.getCheckout)
		closedLoop(ctx, 4, cfg.warmup/2, sb.search)
		if n := b.platformAgents.rec.done.Load(); n == 0 {
			return fmt.Errorf("nothing succeeded during the warm-up; errors: %v", b.platformAgents.rec.errs)
		}
	}
	top := max(cfg.statements, 0)
	run := func(name, mode string, conc int, rate float64, w workload) {
		sb.resetEmpty()
		p := measurePhase(ctx, e, e.pool, b.platformAgents, phaseSpec{name: name, mode: mode, conc: conc, rate: rate, d: cfg.duration, maxInFlight: cfg.maxInFlight, top: top}, w)
		res.Phases = append(res.Phases, p)
		if em := sb.emptyCounts(); len(em) > 0 {
			res.Empty[name] = em
		}
	}
	for r := 1; r <= cfg.rounds && ctx.Err() == nil; r++ {
		suffix := ""
		if cfg.rounds > 1 {
			suffix = fmt.Sprintf("#%d", r)
		}
		run(fmt.Sprintf("get_checkout@%.0f/s%s", cfg.rate, suffix), "open", 0, cfg.rate, sb.getCheckout)
		run(fmt.Sprintf("search@%.0f/s%s", cfg.rate, suffix), "open", 0, cfg.rate, sb.search)
		if cfg.peakConc > 0 {
			run("search_peak"+suffix, "closed", cfg.peakConc, 0, sb.search)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	res.Targets = searchTargets(res, cfg.rate)
	res.LoadAfter = machine().LoadAvg
	printSearch(os.Stdout, res)
	if cfg.out != "" {
		buf, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.out, append(buf, '\n'), 0o644); err != nil {
			return err
		}
		logf("wrote %s", cfg.out)
	}
	if cfg.hold {
		logf("holding: psql %q (superuser); Ctrl-C stops", e.pg.URL(benchDB))
		<-ctx.Done()
	}
	return nil
}

// The seeded catalogs: Portuguese product names from a vocabulary of 52
// nouns in 9 categories, with materials, styles, colours and collection
// names, so that a word is about as selective as in a real shop; 1 to 3
// variants (sizes, kits, weights), about one in ten sold out; prices from
// R$ 9,90 to R$ 408,90. Each merchant's catalog is its own deterministic
// draw.

type seedNoun struct{ noun, category, kind string }

var seedNouns = []seedNoun{
	{"Camiseta", "Vestuário", "roupa"}, {"Camisa", "Vestuário", "roupa"}, {"Blusa", "Vestuário", "roupa"}, {"Jaqueta", "Vestuário", "roupa"},
	{"Bermuda", "Vestuário", "roupa"}, {"Calça", "Vestuário", "roupa"}, {"Vestido", "Vestuário", "roupa"}, {"Moletom", "Vestuário", "roupa"},
	{"Meia", "Vestuário", "roupa"}, {"Saia", "Vestuário", "roupa"},
	{"Tênis", "Calçados", "calcado"}, {"Sandália", "Calçados", "calcado"}, {"Chinelo", "Calçados", "calcado"}, {"Bota", "Calçados", "calcado"},
	{"Sapatilha", "Calçados", "calcado"},
	{"Caneca", "Cozinha", "casa"}, {"Xícara", "Cozinha", "casa"}, {"Panela", "Cozinha", "casa"}, {"Frigideira", "Cozinha", "casa"},
	{"Garrafa Térmica", "Cozinha", "casa"}, {"Prato", "Cozinha", "casa"}, {"Copo", "Cozinha", "casa"}, {"Tábua de Corte", "Cozinha", "casa"},
	{"Almofada", "Casa", "casa"}, {"Toalha", "Casa", "casa"}, {"Cobertor", "Casa", "casa"}, {"Travesseiro", "Casa", "casa"},
	{"Tapete", "Casa", "casa"}, {"Cortina", "Casa", "casa"}, {"Luminária", "Casa", "casa"}, {"Vaso", "Casa", "casa"},
	{"Vela Aromática", "Casa", "casa"}, {"Espelho", "Casa", "casa"},
	{"Boné", "Acessórios", "roupa"}, {"Mochila", "Acessórios", "casa"}, {"Carteira", "Acessórios", "casa"}, {"Cinto", "Acessórios", "casa"},
	{"Óculos de Sol", "Acessórios", "casa"}, {"Relógio", "Acessórios", "casa"}, {"Bolsa", "Acessórios", "casa"},
	{"Caderno", "Papelaria", "casa"}, {"Agenda", "Papelaria", "casa"}, {"Estojo", "Papelaria", "casa"},
	{"Sabonete", "Beleza", "comida"}, {"Perfume", "Beleza", "comida"}, {"Hidratante", "Beleza", "comida"},
	{"Café", "Mercearia", "comida"}, {"Chá", "Mercearia", "comida"}, {"Chocolate", "Mercearia", "comida"}, {"Mel", "Mercearia", "comida"},
	{"Azeite", "Mercearia", "comida"}, {"Doce de Leite", "Mercearia", "comida"},
}

var (
	seedMaterials = map[string][]string{
		"roupa":   {"Algodão", "Linho", "Malha", "Lã", "Jeans", "Viscose"},
		"calcado": {"Couro", "Lona", "Borracha", "Camurça"},
		"casa":    {"Cerâmica", "Vidro", "Madeira", "Bambu", "Inox", "Porcelana", "Couro", "Lona"},
	}
	seedStyles      = []string{"Básica", "Premium", "Estampada", "Lisa", "Clássica", "Esportiva", "Infantil", "Artesanal", "Retrô", "Moderna"}
	seedColours     = []string{"Preta", "Branca", "Azul", "Vermelha", "Verde", "Amarela", "Rosa", "Cinza", "Bege", "Marrom"}
	seedFlavours    = []string{"Especial", "Orgânico", "Tradicional", "Gourmet", "Artesanal", "Natural", "Intenso", "Suave"}
	seedCollections = []string{"Aurora", "Tropical", "Carioca", "Paulista", "Sertão", "Ipê", "Jacarandá", "Bossa", "Serra", "Maré", "Cerrado", "Pampa"}
	seedPhrases     = []string{"Feito no Brasil.", "Ideal para presente.", "Garantia de 90 dias.", "Enviamos para todo o país.",
		"Acabamento cuidadoso.", "Fácil de limpar.", "Produção sustentável.", "Edição limitada."}
	seedSizes = map[string][]string{
		"roupa":   {"P", "M", "G", "GG"},
		"calcado": {"36", "38", "40", "42"},
		"casa":    {"Unidade", "Kit com 2", "Kit com 4"},
		"comida":  {"100 g", "250 g", "500 g", "1 kg"},
	}
)

// catalogRows are one merchant's products and variants as column arrays,
// for INSERT … SELECT FROM unnest.
type catalogRows struct {
	pid, ptitle, pdesc, pcat, pvtext []string
	vid, vpid, vsku, vtitle          []string
	vprice, vstock                   []int64
	// vstart[i] is where product i's variants start in the v… columns
	// (vstart[n] is their length).
	vstart []int
}

// genCatalog draws merchant m's n products.
func genCatalog(m, n int) catalogRows {
	rng := rand.New(rand.NewPCG(uint64(m), 0x5eed))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var c catalogRows
	for i := 1; i <= n; i++ {
		sn := seedNouns[rng.IntN(len(seedNouns))]
		var title string
		if sn.kind == "comida" {
			title = sn.noun + " " + pick(seedFlavours)
		} else {
			title = sn.noun
			if rng.IntN(2) == 0 {
				title += " de " + pick(seedMaterials[sn.kind])
			}
			title += " " + pick(seedStyles) + " " + pick(seedColours)
		}
		title += " " + pick(seedCollections)
		p1 := rng.IntN(len(seedPhrases))
		p2 := (p1 + 1 + rng.IntN(len(seedPhrases)-1)) % len(seedPhrases)
		desc := fmt.Sprintf("%s da coleção %s. %s %s", title, pick(seedCollections), seedPhrases[p1], seedPhrases[p2])
		pid := fmt.Sprintf("prd_%05d", i)
		base := int64(990 + rng.IntN(300)*100) // R$ 9,90 … R$ 308,90
		sizes := seedSizes[sn.kind]
		first := rng.IntN(len(sizes))
		nv := 1 + rng.IntN(3)
		c.vstart = append(c.vstart, len(c.vid))
		var vtext []variantIn
		for s := 0; s < nv && first+s < len(sizes); s++ {
			v := variantIn{title: sizes[first+s], sku: fmt.Sprintf("SKU-%05d-%d", i, s)}
			stock := int64(1 + rng.IntN(300))
			if rng.IntN(10) == 0 {
				stock = 0
			}
			c.vid = append(c.vid, fmt.Sprintf("var_%05d_%d", i, s))
			c.vpid = append(c.vpid, pid)
			c.vsku = append(c.vsku, v.sku)
			c.vtitle = append(c.vtitle, v.title)
			c.vprice = append(c.vprice, base+int64(s)*5000)
			c.vstock = append(c.vstock, stock)
			vtext = append(vtext, v)
		}
		c.pid = append(c.pid, pid)
		c.ptitle = append(c.ptitle, title)
		c.pdesc = append(c.pdesc, desc)
		c.pcat = append(c.pcat, sn.category)
		c.pvtext = append(c.pvtext, variantText(vtext))
	}
	c.vstart = append(c.vstart, len(c.vid))
	return c
}

type variantIn struct{ title, sku string }

// variantText is products.variant_text as the catalog's writers store it
// (services/catalog productIn.variantText, migration 00025): the active
// variants' "title sku", sorted by title then SKU in byte order.
func variantText(vs []variantIn) string {
	vs = slices.Clone(vs)
	slices.SortFunc(vs, func(a, b variantIn) int {
		if c := strings.Compare(a.title, b.title); c != 0 {
			return c
		}
		return strings.Compare(a.sku, b.sku)
	})
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.title + " " + v.sku
	}
	return strings.Join(parts, " ")
}

// seedCatalog inserts rows [from, to) of catalog c into tenant's catalog in
// one transaction of the application role in the tenant's scope: row
// security checks each row, and the generated search columns and every
// index are maintained as for the catalog service's own writes.
func seedCatalog(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID, c catalogRows, from, to int) error {
	vfrom, vto := c.vstart[from], c.vstart[to]
	return pgstore.InTenant(tenancy.With(ctx, tenant), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO catalog.products (tenant_id, id, title, description, category, variant_text)
			SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
			tenant, c.pid[from:to], c.ptitle[from:to], c.pdesc[from:to], c.pcat[from:to], c.pvtext[from:to]); err != nil {
			return fmt.Errorf("products: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO catalog.variants (tenant_id, id, product_id, sku, title, price, stock)
			SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[])`,
			tenant, c.vid[vfrom:vto], c.vpid[vfrom:vto], c.vsku[vfrom:vto], c.vtitle[vfrom:vto], c.vprice[vfrom:vto], c.vstock[vfrom:vto]); err != nil {
			return fmt.Errorf("variants: %w", err)
		}
		return nil
	})
}

// seedCatalogs seeds every tenant's n products in batches of batch, round
// by round (every merchant's first batch, then every merchant's second…),
// conc transactions at a time, calling progress after each round. The
// rounds interleave the merchants' rows in the tables as catalogs that grew
// side by side would, instead of one merchant's 10 000 rows after
// another's.
func seedCatalogs(ctx context.Context, pool *pgxpool.Pool, tenants []uuid.UUID, n, batch, conc int, progress func(round, rounds int)) error {
	batch = max(1, min(batch, n))
	cats := make([]catalogRows, len(tenants))
	for i := range tenants {
		cats[i] = genCatalog(i, n)
	}
	rounds := (n + batch - 1) / batch
	sem := make(chan struct{}, max(conc, 1))
	for r := range rounds {
		from, to := r*batch, min((r+1)*batch, n)
		var wg sync.WaitGroup
		errs := make(chan error, len(tenants))
		for i, t := range tenants {
			if ctx.Err() != nil {
				break
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := seedCatalog(ctx, pool, t, cats[i], from, to); err != nil {
					errs <- fmt.Errorf("catalog of merchant %d, products %d–%d: %w", i, from+1, to, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if progress != nil {
			progress(r+1, rounds)
		}
	}
	return nil
}

// catalogStats VACUUM ANALYZEs the catalog and counts what is in it, as
// the superuser (row security hides other tenants from every other role).
func (e *env) catalogStats(ctx context.Context, st *SeedStats) error {
	conn, done, err := e.superuser(ctx)
	if err != nil || conn == nil {
		return fmt.Errorf("superuser connection: %v", err)
	}
	defer done()
	t0 := time.Now()
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) catalog.products, catalog.variants, catalog.search_words`); err != nil {
		return err
	}
	st.VacuumSeconds = time.Since(t0).Seconds()
	if err := conn.QueryRow(ctx, `SELECT sum(n)::bigint, min(n), max(n), (SELECT count(*) FROM catalog.variants)
		FROM (SELECT tenant_id, count(*) n FROM catalog.products GROUP BY tenant_id) t`).Scan(&st.Products, &st.MinPerMerchant, &st.MaxPerMerchant, &st.Variants); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT c.relname, pg_relation_size(c.oid) / 1048576.0 FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'catalog' AND c.relkind IN ('r', 'i') AND (c.relname LIKE 'products%' OR c.relname LIKE 'variants%' OR c.relname LIKE 'search_words%')`)
	if err != nil {
		return err
	}
	st.SizesMB = map[string]float64{}
	for rows.Next() {
		var name string
		var mb float64
		if err := rows.Scan(&name, &mb); err != nil {
			return err
		}
		st.SizesMB[name] = mb
	}
	return rows.Err()
}

// checkPlans runs searchplan's check with EXPLAIN ANALYZE at tenant, on a
// one-connection pool of the application role that traces what the
// catalog service sends.
func (e *env) checkPlans(ctx context.Context, tenant uuid.UUID) (PlanSummary, error) {
	cfg, err := pgxpool.ParseConfig(e.urls.App)
	if err != nil {
		return PlanSummary{}, err
	}
	rec := searchplan.NewRecorder()
	cfg.MaxConns, cfg.ConnConfig.Tracer = 1, rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return PlanSummary{}, err
	}
	defer pool.Close()
	checked, err := searchplan.Check(ctx, pool, rec, tenant, true)
	if err != nil {
		return PlanSummary{}, err
	}
	return summarizePlans(checked), nil
}

func summarizePlans(checked []searchplan.Checked) PlanSummary {
	s := PlanSummary{Checked: len(checked), Problems: []string{}, Samples: map[string]string{}}
	byKey := map[string]*PlanStat{}
	for _, c := range checked {
		for _, p := range c.Problems {
			s.Problems = append(s.Problems, fmt.Sprintf("%s %s (%s): %s", c.Statement, c.Combo, c.Mode, p))
		}
		key := c.Statement + " " + c.Mode
		st := byKey[key]
		if st == nil {
			st = &PlanStat{Statement: c.Statement, Mode: c.Mode}
			byKey[key] = st
		}
		st.Combos++
		st.SeqScans += len(c.Plan.Scans["Seq Scan"])
		for idx := range c.Plan.Indexes {
			if !slices.Contains(st.Indexes, idx) {
				st.Indexes = append(st.Indexes, idx)
			}
		}
		if c.Plan.ExecutionMs >= st.MaxExecMs {
			st.MaxExecMs, st.Slowest = c.Plan.ExecutionMs, c.Combo.String()
		}
		if _, ok := s.Samples[c.Statement]; !ok && c.Mode == searchplan.Modes[0] {
			s.Samples[c.Statement] = c.Plan.Text
		}
	}
	for _, st := range byKey {
		sort.Strings(st.Indexes)
		s.Stats = append(s.Stats, *st)
	}
	sort.Slice(s.Stats, func(i, j int) bool {
		if s.Stats[i].Statement != s.Stats[j].Statement {
			return s.Stats[i].Statement < s.Stats[j].Statement
		}
		return s.Stats[i].Mode < s.Stats[j].Mode
	})
	return s
}

// searchQuery is one query of the mix.
type searchQuery struct {
	kind   string
	weight int
	query  string
	cats   []string
	min    int64 // 0: no minimum
	max    int64 // 0: no maximum
	// next: the second page (the cursor of the first, taken per merchant
	// before the phases; a cursor stays valid while the catalog does not
	// change).
	next bool
}

// searchMix is what the simulated agents search for, with weights that
// add up to 100.
func searchMix() []searchQuery {
	return []searchQuery{
		// Accented, as a careful agent writes.
		{kind: "accented", weight: 5, query: "camiseta preta"},
		{kind: "accented", weight: 5, query: "caneca de cerâmica"},
		{kind: "accented", weight: 5, query: "café especial"},
		{kind: "accented", weight: 5, query: "tênis de couro"},
		{kind: "accented", weight: 5, query: "luminária de madeira"},
		{kind: "accented", weight: 5, query: "garrafa térmica inox"},
		// Without accents, as most people type.
		{kind: "unaccented", weight: 5, query: "caneca ceramica"},
		{kind: "unaccented", weight: 5, query: "cafe"},
		{kind: "unaccented", weight: 5, query: "tenis couro"},
		{kind: "unaccented", weight: 5, query: "luminaria"},
		{kind: "unaccented", weight: 5, query: "oculos de sol"},
		// Misspelt: full text finds nothing until the words are corrected.
		{kind: "typo", weight: 4, query: "camizeta preta"},
		{kind: "typo", weight: 3, query: "travseiro"},
		{kind: "typo", weight: 3, query: "mochilla"},
		// Filters: price range and categories.
		{kind: "filtered", weight: 5, query: "camiseta", max: 5000},
		{kind: "filtered", weight: 5, query: "caneca", cats: []string{"Cozinha"}},
		{kind: "filtered", weight: 5, query: "tenis", min: 10000, max: 30000},
		{kind: "filtered", weight: 5, query: "cafe", cats: []string{"Mercearia"}, max: 3000},
		// A category without text, in a price range.
		{kind: "category", weight: 5, cats: []string{"Casa"}, min: 5000, max: 20000},
		// A word of a quarter of every description.
		{kind: "broad", weight: 5, query: "presente"},
		// Second pages.
		{kind: "next_page", weight: 3, query: "cafe", next: true},
		{kind: "next_page", weight: 2, query: "mochila", cats: []string{"Acessórios"}, next: true},
	}
}

// catalogArgs are search_catalog's arguments for q (without meta; the
// agent client adds it).
func (q searchQuery) args(cursor string) map[string]any {
	cat := map[string]any{}
	if q.query != "" {
		cat["query"] = q.query
	}
	filters := map[string]any{}
	if len(q.cats) > 0 {
		cs := make([]any, len(q.cats))
		for i, c := range q.cats {
			cs[i] = c
		}
		filters["categories"] = cs
	}
	if q.min > 0 || q.max > 0 {
		pr := map[string]any{}
		if q.min > 0 {
			pr["min"] = q.min
		}
		if q.max > 0 {
			pr["max"] = q.max
		}
		filters["price"] = pr
	}
	if len(filters) > 0 {
		cat["filters"] = filters
	}
	if cursor != "" {
		cat["pagination"] = map[string]any{"cursor": cursor}
	}
	return map[string]any{"catalog": cat}
}

// searchBench holds what the search workloads need: each merchant's
// checkout for get_checkout, each merchant's cursors for second pages, and
// the phase's empty results by query kind.
type searchBench struct {
	b         *bench
	mix       []searchQuery
	total     int
	checkouts []string
	cursors   [][]string // merchant → mix index → cursor ("" unless next)
	mu        sync.Mutex
	empty     map[string]int
}

// prepare opens one checkout at every merchant and takes the first
// pages' cursors of the second-page queries.
func (s *searchBench) prepare(ctx context.Context) error {
	for _, q := range s.mix {
		s.total += q.weight
	}
	a := s.b.platformAgents
	a.rec = newRecorder()
	n := len(s.b.env.merchants)
	s.checkouts = make([]string, n)
	s.cursors = make([][]string, n)
	for mi := range n {
		c, err := a.call(ctx, mi, "create_checkout", loadkit.CreateArgs("bench@example.com"), "")
		if err != nil {
			return fmt.Errorf("create_checkout at merchant %d: %w", mi, err)
		}
		s.checkouts[mi] = c.ID
		s.cursors[mi] = make([]string, len(s.mix))
		for qi, q := range s.mix {
			if !q.next {
				continue
			}
			r, err := s.call(ctx, mi, q, "")
			if err != nil {
				return fmt.Errorf("search %q at merchant %d: %w", q.query, mi, err)
			}
			if r.Pagination.Cursor == "" {
				return fmt.Errorf("search %q at merchant %d: no second page", q.query, mi)
			}
			s.cursors[mi][qi] = r.Pagination.Cursor
		}
	}
	return nil
}

// searchAnswer is the part of a search_catalog answer the bench reads.
type searchAnswer struct {
	UCP struct {
		Status string `json:"status"`
	} `json:"ucp"`
	Products []struct {
		ID string `json:"id"`
	} `json:"products"`
	Pagination struct {
		Cursor string `json:"cursor"`
	} `json:"pagination"`
}

// call runs one search_catalog and records its latency under
// "search_catalog" and "search_catalog/<kind>".
func (s *searchBench) call(ctx context.Context, mi int, q searchQuery, cursor string) (*searchAnswer, error) {
	a := s.b.platformAgents
	start := time.Now()
	resp, err := a.clients[mi].CallTool(ctx, "search_catalog", q.args(cursor))
	d := time.Since(start)
	code := ""
	var ans searchAnswer
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		code = "transport"
	case resp.Status != 200:
		code = fmt.Sprintf("http_%d", resp.Status)
	case resp.Error != nil:
		code = fmt.Sprintf("rpc_%d", resp.Error.Code)
	default:
		var res struct {
			IsError           bool          `json:"isError"`
			StructuredContent *searchAnswer `json:"structuredContent"`
		}
		res.StructuredContent = &ans
		if segjson.Unmarshal(resp.Result, &res) != nil {
			code = "bad_result"
		} else if res.IsError || ans.UCP.Status == "error" {
			code = "bcp_error"
		}
	}
	if code != "" {
		a.rec.error("search_catalog:" + code)
		if debug && resp != nil {
			logf("search_catalog: %s: %s", code, resp.Body)
		}
		return nil, &callError{code}
	}
	a.rec.observe("search_catalog", d)
	a.rec.observe("search_catalog/"+q.kind, d)
	return &ans, nil
}

// search is one search from the mix at a random merchant.
func (s *searchBench) search(ctx context.Context, rng *rand.Rand) error {
	mi := rng.IntN(len(s.b.env.merchants))
	w := rng.IntN(s.total)
	qi := 0
	for ; w >= s.mix[qi].weight; qi++ {
		w -= s.mix[qi].weight
	}
	q := s.mix[qi]
	ans, err := s.call(ctx, mi, q, s.cursors[mi][qi])
	if err != nil {
		return err
	}
	if len(ans.Products) == 0 {
		s.mu.Lock()
		s.empty[q.kind]++
		s.mu.Unlock()
	}
	s.b.platformAgents.rec.done.Add(1)
	return nil
}

// getCheckout reads a random merchant's checkout.
func (s *searchBench) getCheckout(ctx context.Context, rng *rand.Rand) error {
	mi := rng.IntN(len(s.b.env.merchants))
	if _, err := s.b.platformAgents.call(ctx, mi, "get_checkout", map[string]any{"id": s.checkouts[mi]}, ""); err != nil {
		return err
	}
	s.b.platformAgents.rec.done.Add(1)
	return nil
}

func (s *searchBench) resetEmpty() {
	s.mu.Lock()
	s.empty = map[string]int{}
	s.mu.Unlock()
}

func (s *searchBench) emptyCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.empty)
}

// searchTargets judges the target on the open-loop search phases:
// p99 < 20 ms at rate searches per second, every phase.
func searchTargets(res *SearchResult, rate float64) []Target {
	var out []Target
	for _, p := range res.Phases {
		if p.Mode != "open" || !strings.HasPrefix(p.Name, "search@") {
			continue
		}
		s := p.Ops["search_catalog"]
		measured := fmt.Sprintf("%s ms (p50 %s ms, %d searches, %.1f/s)", fmtMs(s.P99), fmtMs(s.P50), s.Count, s.Throughput)
		// An open loop that could not keep up dropped arrivals (a backlog
		// short of that shows in the latencies).
		keptUp := p.Errors["dropped:overload"] == 0
		if !keptUp {
			measured += ", arrivals dropped"
		}
		out = append(out, Target{What: fmt.Sprintf("search_catalog p99 at %.0f searches/s (%s)", rate, p.Name), Want: "< 20 ms",
			Measured: measured, Met: s.Count > 0 && s.P99 < 20e6 && keptUp && len(p.Errors) == 0})
	}
	return out
}

func printSearch(w io.Writer, res *SearchResult) {
	s := res.Seed
	fmt.Fprintf(w, "\nbcpbench search — %d CPUs (%s), %s, %s, loadavg at start %s, at end %s\n", res.Machine.CPUs, res.Machine.CPUModel, res.Machine.GoVersion,
		res.Started.Format(time.RFC3339), res.Machine.LoadAvg, res.LoadAfter)
	fmt.Fprintf(w, "catalog: %d merchants × %d products seeded (%d to %d per merchant with the bench's own Camiseta), %d products, %d variants; seeded in %.0f s (%.0f products/s), VACUUM ANALYZE %.0f s\n",
		s.Merchants, s.ProductsPerMerchant, s.MinPerMerchant, s.MaxPerMerchant, s.Products, s.Variants, s.Seconds, s.ProductsPerS, s.VacuumSeconds)
	names := make([]string, 0, len(s.SizesMB))
	for n := range s.SizesMB {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.0f", n, s.SizesMB[n])
	}
	fmt.Fprintf(w, "sizes (MB): %s\n", strings.Join(parts, ", "))
	if res.Plans.Checked > 0 {
		fmt.Fprintf(w, "\nplans (EXPLAIN ANALYZE on the seeded data, merchant 0): %d checked, %d problems\n", res.Plans.Checked, len(res.Plans.Problems))
		for _, st := range res.Plans.Stats {
			fmt.Fprintf(w, "  %-20s %-19s %2d combinations, seq scans %d, indexes %s; slowest %.2f ms (%s)\n",
				st.Statement, st.Mode, st.Combos, st.SeqScans, strings.Join(st.Indexes, " "), st.MaxExecMs, st.Slowest)
		}
		for _, p := range res.Plans.Problems {
			fmt.Fprintf(w, "  PROBLEM %s\n", p)
		}
	}
	fmt.Fprintln(w)
	printReport(w, &Result{Started: res.Started, Machine: res.Machine, Phases: res.Phases, Targets: res.Targets})
	for _, p := range res.Phases {
		if em := res.Empty[p.Name]; len(em) > 0 {
			fmt.Fprintf(w, "empty results in %s: %v\n", p.Name, em)
		}
	}
}
