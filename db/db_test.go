package db_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestMigrateUpOnEmptyDatabase(t *testing.T) {
	ctx := context.Background()
	d := testdb.NewEmpty(t)
	n, err := db.MigrateUp(ctx, d.OwnerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir("migrations")
	if n != len(entries) || n < 3 {
		t.Fatalf("applied %d migrations, want every file in db/migrations (%d)", n, len(entries))
	}
	again, err := db.MigrateUp(ctx, d.OwnerURL, nil)
	if err != nil || again != 0 {
		t.Fatalf("second migrate up applied %d (err %v), want 0", again, err)
	}
	p, closeFn, err := db.Provider(d.OwnerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	st, err := p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.State != "applied" {
			t.Errorf("migration %d is %s", s.Source.Version, s.State)
		}
	}
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schemas int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('tenants','catalog','pricing','checkout','payments','orders')`).Scan(&schemas); err != nil || schemas != 6 {
		t.Fatalf("service schemas = %d (%v), want 6", schemas, err)
	}
}

// Every table in a service schema carries tenant_id, leads its primary key
// with it, and has row-level security enabled and forced; bcp_app owns none
// of them and cannot bypass RLS.
func TestEveryTableIsTenantScopedWithForcedRLS(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT n.nspname, c.relname, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner),
		       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped),
		       coalesce((SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		                 WHERE i.indrelid = c.oid AND i.indisprimary), '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname IN ('tenants','catalog','pricing','checkout','payments','orders','pspsim')
		ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for rows.Next() {
		var schema, table, owner, pkLead string
		var rls, force, hasTenant bool
		if err := rows.Scan(&schema, &table, &rls, &force, &owner, &hasTenant, &pkLead); err != nil {
			t.Fatal(err)
		}
		count++
		name := schema + "." + table
		if !hasTenant || pkLead != "tenant_id" {
			t.Errorf("%s: has tenant_id=%v, primary key leads with %q; want tenant_id first", name, hasTenant, pkLead)
		}
		if !rls || !force {
			t.Errorf("%s: row security enabled=%v forced=%v, want both", name, rls, force)
		}
		if owner == db.AppRole {
			t.Errorf("%s is owned by the application role", name)
		}
	}
	if count < 7 {
		t.Fatalf("found %d tables, expected the service tables", count)
	}
	var super, bypass bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1`, db.AppRole).Scan(&super, &bypass); err != nil || super || bypass {
		t.Fatalf("bcp_app superuser=%v bypassrls=%v (%v)", super, bypass, err)
	}
}

func TestRLSIsolatesTenantsEvenWithoutFilters(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	a, b := uuid.New(), uuid.New()
	seed := func(tid uuid.UUID, products ...string) {
		err := pgstore.InTenant(tenancy.With(ctx, tid), d.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO tenants.tenants (tenant_id, slug, name, capabilities) VALUES ($1, $2, 'x', '{}')`, tid, "t-"+tid.String()[:8]); err != nil {
				return err
			}
			for _, p := range products {
				if _, err := tx.Exec(ctx, `INSERT INTO catalog.products (tenant_id, id, title) VALUES ($1, $2, $2)`, tid, p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed %s: %v", tid, err)
		}
	}
	seed(a, "prd_a1", "prd_a2")
	seed(b, "prd_b1")

	inA := tenancy.With(ctx, a)
	err := pgstore.InTenant(inA, d.Pool, func(tx pgx.Tx) error {
		// A query that forgets its tenant filter still sees only A.
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM catalog.products`).Scan(&n); err != nil || n != 2 {
			t.Errorf("unfiltered count in tenant A = %d (%v), want 2", n, err)
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM catalog.products WHERE tenant_id = $1`, b).Scan(&n); err != nil || n != 0 {
			t.Errorf("tenant A reading B's rows by id = %d (%v), want 0", n, err)
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tenants.tenants`).Scan(&n); err != nil || n != 1 {
			t.Errorf("tenant A sees %d tenants rows (%v), want only its own", n, err)
		}
		tag, err := tx.Exec(ctx, `UPDATE catalog.products SET title = 'hijacked'`)
		if err != nil || tag.RowsAffected() != 2 {
			t.Errorf("unfiltered update touched %d rows (%v), want A's 2", tag.RowsAffected(), err)
		}
		tag, err = tx.Exec(ctx, `DELETE FROM catalog.products WHERE tenant_id = $1`, b)
		if err != nil || tag.RowsAffected() != 0 {
			t.Errorf("delete of B's rows from A affected %d (%v), want 0", tag.RowsAffected(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Writing a row for another tenant is refused by the policy's WITH CHECK.
	err = pgstore.InTenant(inA, d.Pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO catalog.products (tenant_id, id, title) VALUES ($1, 'prd_evil', 'x')`, b)
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("insert for another tenant: err = %v, want RLS violation 42501", err)
	}
	err = pgstore.InTenant(inA, d.Pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE catalog.products SET tenant_id = $1 WHERE id = 'prd_a1'`, b)
		return err
	})
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("moving a row to another tenant: err = %v, want 42501", err)
	}
	// B's row is untouched.
	err = pgstore.InTenant(tenancy.With(ctx, b), d.Pool, func(tx pgx.Tx) error {
		var title string
		return tx.QueryRow(ctx, `SELECT title FROM catalog.products WHERE id = 'prd_b1'`).Scan(&title)
	})
	if err != nil {
		t.Fatalf("tenant B lost its row: %v", err)
	}
	// No tenant at all: nothing visible, nothing writable, and InTenant
	// refuses to start.
	var n int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM catalog.products`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("query without tenant saw %d rows (%v), want 0", n, err)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO catalog.products (tenant_id, id, title) VALUES ($1, 'prd_x', 'x')`, a); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("insert without tenant: err = %v, want 42501", err)
	}
	if err := pgstore.InTenant(ctx, d.Pool, func(pgx.Tx) error { return nil }); !errors.Is(err, tenancy.ErrNoTenant) {
		t.Fatalf("InTenant without tenant: err = %v, want ErrNoTenant", err)
	}
}

// With a single pooled connection, the tenant set in one transaction is gone
// in the next one that borrows the same connection.
func TestPooledConnectionDoesNotCarryTenant(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	pool, err := pgstore.Open(ctx, d.AppURL, pgstore.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a := uuid.New()
	err = pgstore.InTenant(tenancy.With(ctx, a), pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO catalog.products (tenant_id, id, title) VALUES ($1, 'prd_1', 'x')`, a)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var pid1, pid2 int
	var setting string
	var n int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid1); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid(), coalesce(current_setting('app.tenant_id', true), '')`).Scan(&pid2, &setting); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM catalog.products`).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	if pid1 != pid2 {
		t.Fatalf("expected the same pooled connection (pid %d vs %d)", pid1, pid2)
	}
	if setting != "" || n != 0 {
		t.Fatalf("next transaction on the same connection sees app.tenant_id=%q and %d rows; want empty and 0", setting, n)
	}
	// A failed transaction (error inside) does not leak either.
	_ = pgstore.InTenant(tenancy.With(ctx, a), pool, func(tx pgx.Tx) error { return errors.New("boom") })
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM catalog.products`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after a rolled-back tenant transaction: %d rows (%v), want 0", n, err)
	}
}

// The privileged-role guard: pgstore refuses a superuser connection.
func TestOpenRefusesPrivilegedRole(t *testing.T) {
	d := testdb.New(t)
	if _, err := pgstore.Open(context.Background(), d.SuperURL, pgstore.Options{}); err == nil {
		t.Fatal("pgstore.Open accepted a superuser role")
	}
}

// The documents written on every purchase are compressed with lz4 (00020),
// and the migration goes down and up again.
func TestDocumentsCompressWithLZ4(t *testing.T) {
	ctx := context.Background()
	conn, p := migrated(t)
	methods := func() map[string]string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT c.relnamespace::regnamespace || '.' || c.relname || '.' || a.attname, a.attcompression::text
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			WHERE c.relnamespace::regnamespace::text IN ('checkout', 'orders', 'payments') AND c.relkind = 'r'
			  AND a.atttypid IN ('json'::regtype, 'jsonb'::regtype, 'bytea'::regtype) AND NOT a.attisdropped`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]string, err error) {
			err = r.Scan(&kv[0], &kv[1])
			return kv, err
		})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range got {
			m[kv[0]] = kv[1]
		}
		return m
	}
	docs := []string{"checkout.sessions.request", "checkout.sessions.state", "checkout.idempotency_keys.response",
		"orders.orders.snapshot", "orders.events.line_items", "orders.adjustments.line_items",
		"payments.attempts.display", "payments.pix_receipts.raw"}
	up := methods()
	for _, col := range docs {
		if up[col] != "l" {
			t.Errorf("%s compression = %q, want l (lz4)", col, up[col])
		}
	}
	if up["payments.attempts.request_hash"] != "" {
		t.Errorf("payments.attempts.request_hash compression = %q, want the default", up["payments.attempts.request_hash"])
	}

	if _, err := p.DownTo(ctx, 19); err != nil {
		t.Fatal(err)
	}
	down := methods()
	for _, col := range docs {
		if down[col] != "" {
			t.Errorf("after down, %s compression = %q, want the default", col, down[col])
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if again := methods(); again["checkout.sessions.state"] != "l" {
		t.Errorf("after up again, checkout.sessions.state compression = %q", again["checkout.sessions.state"])
	}
}

// Completions the old settle sweep left in progress without a settle_after
// get one again (00021), in every tenant, and row security stays forced.
func TestPendingSettlesAreArmedAgain(t *testing.T) {
	ctx := context.Background()
	d := testdb.NewEmpty(t)
	p, closeFn, err := db.Provider(d.OwnerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if _, err := p.UpTo(ctx, 20); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	t1, t2 := uuid.New(), uuid.New()
	for _, s := range []struct {
		tenant      uuid.UUID
		id, status  string
		attempt     *string
		settleAfter string
	}{
		{t1, "chk_pending", "complete_in_progress", ptr("pay_1"), "NULL"},
		{t2, "chk_pending_other_tenant", "complete_in_progress", ptr("pay_2"), "NULL"},
		{t1, "chk_armed", "complete_in_progress", ptr("pay_3"), "'2030-01-01'"},
		{t1, "chk_done", "completed", ptr("pay_4"), "NULL"},
		{t1, "chk_open", "ready_for_complete", nil, "NULL"},
	} {
		if _, err := conn.Exec(ctx, `INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, agent_profile_url, capabilities,
			request, state, expires_at, payment_attempt_id, settle_after)
			VALUES ($1, $2, $3, 'BRL', 100, 'https://agent.example/profile', '{}', '{}', '{}', now() + interval '1 hour', $4, `+s.settleAfter+`)`,
			s.tenant, s.id, s.status, s.attempt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT id, settle_after IS NOT NULL AND settle_after <= now(), settle_after IS NULL FROM checkout.sessions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]bool{}
	for rows.Next() {
		var id string
		var due, null bool
		if err := rows.Scan(&id, &due, &null); err != nil {
			t.Fatal(err)
		}
		got[id] = [2]bool{due, null}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	want := map[string][2]bool{
		"chk_pending": {true, false}, "chk_pending_other_tenant": {true, false},
		"chk_armed": {false, false}, "chk_done": {false, true}, "chk_open": {false, true},
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: (due, null) = %v, want %v", id, got[id], w)
		}
	}
	var forced bool
	if err := conn.QueryRow(ctx, `SELECT relforcerowsecurity FROM pg_class WHERE oid = 'checkout.sessions'::regclass`).Scan(&forced); err != nil || !forced {
		t.Fatalf("checkout.sessions row security forced = %v (%v), want true", forced, err)
	}
}

func ptr[T any](v T) *T { return &v }

// Every column of checkout.sessions keeps a statistics target of 10
// (00022): ANALYZE samples 300 rows per point of the largest target, so a
// column added later at the default would bring back the 30 000-row
// sample on its own.
func TestSessionsStatisticsTarget(t *testing.T) {
	ctx := context.Background()
	conn, p := migrated(t)
	targets := func() map[string]int32 {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT attname::text, attstattarget::int4 FROM pg_attribute
			WHERE attrelid = 'checkout.sessions'::regclass AND attnum > 0 AND NOT attisdropped`)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int32{}
		var name string
		var target int32
		if _, err := pgx.ForEachRow(rows, []any{&name, &target}, func() error { m[name] = target; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(m) < 19 {
			t.Fatalf("checkout.sessions has %d columns, want at least 19", len(m))
		}
		return m
	}
	for col, target := range targets() {
		if target != 10 {
			t.Errorf("checkout.sessions.%s statistics target = %d, want 10", col, target)
		}
	}
	if _, err := p.DownTo(ctx, 21); err != nil {
		t.Fatal(err)
	}
	for col, target := range targets() {
		if target != -1 {
			t.Errorf("after down, checkout.sessions.%s statistics target = %d, want -1 (the default)", col, target)
		}
	}
}

// migrated is a fresh database migrated all the way up, a superuser
// connection to read its catalog, and a goose provider to move it down
// and up again; all closed when the test ends.
func migrated(t *testing.T) (*pgx.Conn, *goose.Provider) {
	t.Helper()
	ctx := context.Background()
	d := testdb.NewEmpty(t)
	if _, err := db.MigrateUp(ctx, d.OwnerURL, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	p, closeFn, err := db.Provider(d.OwnerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeFn() })
	return conn, p
}

// Merchants created before the catalog capabilities existed get them with
// migration 00025, once, as new merchants do; their products' variant text
// is filled in.
func TestCatalogCapabilitiesForExistingMerchants(t *testing.T) {
	ctx := context.Background()
	d := testdb.NewEmpty(t)
	p, closeFn, err := db.Provider(d.OwnerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if _, err := p.UpTo(ctx, 24); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	old, had := uuid.New(), uuid.New()
	for _, tn := range []struct {
		id   uuid.UUID
		slug string
		caps []string
	}{
		{old, "antiga", []string{"br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.order"}},
		{had, "ja-tinha", []string{"br.dev.bcp.shopping.catalog.lookup", "br.dev.bcp.shopping.checkout"}},
	} {
		if _, err := conn.Exec(ctx, `INSERT INTO tenants.tenants (tenant_id, slug, name, capabilities) VALUES ($1, $2, $2, $3)`, tn.id, tn.slug, tn.caps); err != nil {
			t.Fatal(err)
		}
	}
	// A product with two active variants and an inactive one: migration
	// 00025 writes what search reads of them.
	for _, q := range []string{`INSERT INTO catalog.products (tenant_id, id, title) VALUES ($1, 'prd_cam', 'Camiseta')`,
		`INSERT INTO catalog.variants (tenant_id, id, product_id, sku, title, price, active) VALUES
		  ($1, 'var_m', 'prd_cam', 'CAM-M', 'Camiseta M', 100, true), ($1, 'var_g', 'prd_cam', 'CAM-G', 'Camiseta G', 100, true),
		  ($1, 'var_x', 'prd_cam', 'CAM-X', 'Camiseta XG', 100, false)`} {
		if _, err := conn.Exec(ctx, q, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var text string
	if err := conn.QueryRow(ctx, `SELECT variant_text FROM catalog.products WHERE tenant_id = $1 AND id = 'prd_cam'`, old).Scan(&text); err != nil || text != "Camiseta G CAM-G Camiseta M CAM-M" {
		t.Errorf("variant_text = %q (%v)", text, err)
	}
	for id, want := range map[uuid.UUID]string{
		// 00027 then adds the cart the same way.
		old: "{br.dev.bcp.shopping.checkout,br.dev.bcp.shopping.order,br.dev.bcp.shopping.catalog.search,br.dev.bcp.shopping.catalog.lookup,br.dev.bcp.shopping.cart}",
		had: "{br.dev.bcp.shopping.catalog.lookup,br.dev.bcp.shopping.checkout,br.dev.bcp.shopping.catalog.search,br.dev.bcp.shopping.cart}",
	} {
		var got string
		if err := conn.QueryRow(ctx, `SELECT capabilities::text FROM tenants.tenants WHERE tenant_id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("capabilities = %s, want %s", got, want)
		}
	}
}

// The search indexes lead with tenant_id (00032), so a search reads its
// merchant's entries only; down to 00027 they are the single-column ones
// again, and up again restores them. The title's trigram index is gone
// since 00041 (nothing reads it) and comes back, leading with tenant_id,
// below it.
func TestCatalogSearchIndexesLeadWithTenant(t *testing.T) {
	ctx := context.Background()
	conn, p := migrated(t)
	defs := func() []string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT pg_get_indexdef(indexrelid) FROM pg_index
			WHERE indexrelid IN (to_regclass('catalog.products_search'), to_regclass('catalog.products_title_trgm')) ORDER BY indexrelid::regclass::text`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	search := "CREATE INDEX products_search ON catalog.products USING gin (tenant_id, search_tsv) WITH (fastupdate=off)"
	want := []string{
		search,
		"CREATE INDEX products_title_trgm ON catalog.products USING gin (tenant_id, search_title gin_trgm_ops) WITH (fastupdate=off)",
	}
	if got := defs(); !slices.Equal(got, []string{search}) {
		t.Fatalf("indexes\n%s\nwant only\n%s", strings.Join(got, "\n"), search)
	}
	if _, err := p.DownTo(ctx, 40); err != nil {
		t.Fatal(err)
	}
	if got := defs(); !slices.Equal(got, want) {
		t.Fatalf("below 00041\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := p.DownTo(ctx, 27); err != nil {
		t.Fatal(err)
	}
	before := []string{
		"CREATE INDEX products_search ON catalog.products USING gin (search_tsv) WITH (fastupdate=off)",
		"CREATE INDEX products_title_trgm ON catalog.products USING gin (search_title gin_trgm_ops) WITH (fastupdate=off)",
	}
	if got := defs(); !slices.Equal(got, before) {
		t.Fatalf("after down\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	if _, err := p.UpTo(ctx, 40); err != nil {
		t.Fatal(err)
	}
	if got := defs(); !slices.Equal(got, want) {
		t.Fatalf("up again to 00040\n%s", strings.Join(got, "\n"))
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var column bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'catalog' AND table_name = 'products' AND column_name = 'search_title')`).Scan(&column); err != nil || column {
		t.Fatalf("search_title still there after 00041 (%v)", err)
	}
	if got := defs(); !slices.Equal(got, []string{search}) {
		t.Fatalf("up again\n%s", strings.Join(got, "\n"))
	}
}

// Migration 00040 counts the words of the catalogs that exist (active
// products only, each merchant apart), and from then on the products'
// triggers keep the count; down removes the table and the triggers (a
// product write still works), up again counts afresh.
func TestSearchWordsCountedForExistingCatalogs(t *testing.T) {
	ctx := context.Background()
	d := testdb.NewEmpty(t)
	p, closeFn, err := db.Provider(d.OwnerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if _, err := p.UpTo(ctx, 39); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	a, b := uuid.New(), uuid.New()
	if _, err := conn.Exec(ctx, `INSERT INTO catalog.products (tenant_id, id, title, description, category, variant_text, active) VALUES
		($1, 'prd_1', 'Caneca de Cerâmica', 'Ideal para presente.', 'Cozinha', 'Unidade CAN-1', true),
		($1, 'prd_2', 'Caneca Esmaltada', '', 'Cozinha', 'Unidade CAN-2', true),
		($1, 'prd_3', 'Garrafa Antiga', '', 'Cozinha', 'Unidade GAR-3', false),
		($2, 'prd_1', 'Geladeira', '', '', 'Unidade GEL-1', true)`, a, b); err != nil {
		t.Fatal(err)
	}
	words := func(tid uuid.UUID) string {
		t.Helper()
		var out string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(word || ':' || products, ' ' ORDER BY word), '') FROM catalog.search_words WHERE tenant_id = $1`, tid).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if _, err := p.UpTo(ctx, 40); err != nil {
		t.Fatal(err)
	}
	wantA := "can:2 caneca:2 ceramica:1 cozinha:2 esmaltada:1 ideal:1 presente:1 unidade:2"
	if got := words(a); got != wantA {
		t.Errorf("merchant a: %s, want %s", got, wantA)
	}
	if got := words(b); got != "gel:1 geladeira:1 unidade:1" {
		t.Errorf("merchant b: %s", got)
	}
	// The triggers take over: a new product, an update, a deletion.
	for _, q := range []string{
		`INSERT INTO catalog.products (tenant_id, id, title) VALUES ($1, 'prd_4', 'Caneca Azul')`,
		`UPDATE catalog.products SET title = 'Xícara Esmaltada' WHERE tenant_id = $1 AND id = 'prd_2'`,
		`DELETE FROM catalog.products WHERE tenant_id = $1 AND id = 'prd_1'`,
	} {
		if _, err := conn.Exec(ctx, q, a); err != nil {
			t.Fatal(err)
		}
	}
	wantA = "azul:1 can:1 caneca:1 cozinha:1 esmaltada:1 unidade:1 xicara:1"
	if got := words(a); got != wantA {
		t.Errorf("after the writes: %s, want %s", got, wantA)
	}
	if _, err := p.DownTo(ctx, 39); err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('catalog.search_words') IS NOT NULL OR EXISTS (SELECT 1 FROM pg_trigger WHERE tgname LIKE 'count_search_words%')`).Scan(&exists); err != nil || exists {
		t.Fatalf("after down: table or triggers left (%v)", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE catalog.products SET title = 'Xícara Lisa' WHERE tenant_id = $1 AND id = 'prd_2'`, a); err != nil {
		t.Fatalf("a product write after down: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	wantA = "azul:1 can:1 caneca:1 cozinha:1 lisa:1 unidade:1 xicara:1"
	if got := words(a); got != wantA {
		t.Errorf("up again: %s, want %s", got, wantA)
	}
}

// Migration 00052: checkout.sessions leaves a fifth of each page for the
// new versions of its sessions (an update that changes no indexed column
// is then heap-only, in place), and sessions_open_expiry is gone; down
// puts both back.
func TestSessionWritesInPlace(t *testing.T) {
	ctx := context.Background()
	conn, p := migrated(t)
	shape := func() (opts []string, indexes []string) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'checkout.sessions'::regclass`).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, `SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'checkout.sessions'::regclass ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		if indexes, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		return opts, indexes
	}
	want := []string{"checkout.sessions_by_created", "checkout.sessions_by_status", "checkout.sessions_due_expiry",
		"checkout.sessions_due_settle", "checkout.sessions_owned", "checkout.sessions_pkey"}
	opts, indexes := shape()
	if !slices.Equal(opts, []string{"fillfactor=80"}) || !slices.Equal(indexes, want) {
		t.Fatalf("checkout.sessions options %v, indexes %v; want [fillfactor=80] and %v", opts, indexes, want)
	}

	// Four sessions of 1.8 KB each (below the 2 KB at which PostgreSQL
	// compresses a row): three fill the first page up to its fillfactor,
	// the fourth goes to the next. An update of the first that keeps its
	// status then finds room on its page and is heap-only; at fillfactor
	// 100 the page would hold all four and the update would move.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tenant := uuid.New()
	if _, err := tx.Exec(ctx, `INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, agent_profile_url, capabilities, request, state, expires_at)
		SELECT $1, 'chk_' || g, 'incomplete', 'BRL', 100, 'https://agent.example/profile.json', '{}', '{}', to_json(repeat('s', 1700)), now() + interval '1 hour'
		FROM generate_series(1, 4) g`, tenant); err != nil {
		t.Fatal(err)
	}
	var pages []int32
	rows, err := tx.Query(ctx, `SELECT (ctid::text::point)[0]::int FROM checkout.sessions WHERE tenant_id = $1 ORDER BY id`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if pages, err = pgx.CollectRows(rows, pgx.RowTo[int32]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pages, []int32{0, 0, 0, 1}) {
		t.Fatalf("sessions on pages %v, want [0 0 0 1]", pages)
	}
	if _, err := tx.Exec(ctx, `UPDATE checkout.sessions SET state = to_json(repeat('t', 1700)), version = version + 1, updated_at = now()
		WHERE tenant_id = $1 AND id = 'chk_1'`, tenant); err != nil {
		t.Fatal(err)
	}
	var updated, hot int64
	if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_updated('checkout.sessions'::regclass), pg_stat_get_xact_tuples_hot_updated('checkout.sessions'::regclass)`).Scan(&updated, &hot); err != nil {
		t.Fatal(err)
	}
	if updated != 1 || hot != 1 {
		t.Fatalf("%d updates, %d heap-only; want 1 and 1", updated, hot)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := p.DownTo(ctx, 51); err != nil {
		t.Fatal(err)
	}
	opts, indexes = shape()
	if len(opts) != 0 || !slices.Contains(indexes, "checkout.sessions_open_expiry") || len(indexes) != len(want)+1 {
		t.Fatalf("after down, checkout.sessions options %v, indexes %v; want none and sessions_open_expiry back", opts, indexes)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
}

// InsertSession and UpdateSession call keep_key only with an idempotency
// key (without one it could only answer false): a keyless write makes no
// PL/pgSQL call, a keyed one keeps its key in the same statement.
func TestSessionWritesCallKeepKeyOnlyWithKey(t *testing.T) {
	ctx := context.Background()
	conn, _ := migrated(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL track_functions = 'pl'`); err != nil {
		t.Fatal(err)
	}
	calls := func() int64 {
		t.Helper()
		var n int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(pg_stat_get_xact_function_calls('checkout.keep_key'::regproc), 0)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	q := checkoutdb.New(tx)
	tenant := uuid.New()
	insert := func(id string, idem []byte) checkoutdb.InsertSessionRow {
		t.Helper()
		row, err := q.InsertSession(ctx, checkoutdb.InsertSessionParams{Idem: idem, TenantID: tenant, IdemResponse: []byte("answer"),
			ID: id, Status: "incomplete", Currency: "BRL", Total: 100, AgentProfileUrl: "https://agent.example/profile.json",
			Capabilities: []string{}, Request: []byte(`{}`), State: []byte(`{}`), ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	update := func(id string, idem []byte) checkoutdb.UpdateSessionRow {
		t.Helper()
		row, err := q.UpdateSession(ctx, checkoutdb.UpdateSessionParams{Idem: idem, TenantID: tenant, IdemResponse: []byte("answer"),
			Status: "incomplete", Total: 200, Capabilities: []string{}, Request: []byte(`{"n":2}`), State: []byte(`{}`), ID: id, Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	key := func(k string) []byte {
		return []byte(`{"scope":"s","key":"` + k + `","hash":"` + strings.Repeat("ab", 32) + `","token":"t","now":"2026-12-03T10:00:00Z","held":false}`)
	}

	if row := insert("chk_a", nil); row.Kept || row.Seen == 0 {
		t.Fatalf("keyless insert: %+v, want not kept and a seen xmin", row)
	}
	if row := update("chk_a", nil); row.Written != 1 || row.Kept || row.NowSeen == 0 {
		t.Fatalf("keyless update: %+v, want written, not kept, a seen xmin", row)
	}
	if n := calls(); n != 0 {
		t.Fatalf("keep_key called %d times by keyless writes, want 0", n)
	}
	if row := insert("chk_b", key("k1")); !row.Kept {
		t.Fatalf("keyed insert: %+v, want kept", row)
	}
	if row := update("chk_b", key("k2")); row.Written != 1 || !row.Kept {
		t.Fatalf("keyed update: %+v, want written and kept", row)
	}
	if row := update("chk_b", key("k3")); row.Written != 0 || row.Kept {
		t.Fatalf("keyed update of a stale version: %+v, want neither written nor kept", row)
	}
	if n := calls(); n != 3 {
		t.Fatalf("keep_key called %d times by keyed writes, want 3", n)
	}
	var keys []string
	rows, err := tx.Query(ctx, `SELECT key || ':' || state FROM checkout.idempotency_keys WHERE tenant_id = $1 ORDER BY key`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if keys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"k1:done", "k2:done"}) {
		t.Fatalf("keys %v, want [k1:done k2:done]", keys)
	}
}
