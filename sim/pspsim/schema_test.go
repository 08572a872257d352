package pspsim

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// Row-level security keeps each account to its rows, even in a statement
// that forgets its filter; only app.scope = 'pspsim' sees them all.
func TestAccountsAreIsolatedByRowLevelSecurity(t *testing.T) {
	e := newEnv(t)
	a := e.provision("a").login()
	b := e.provision("b").login()
	a.createCob(txid(1), "1.00")
	a.createCob(txid(2), "1.00")
	b.createCob(txid(3), "1.00")
	ctx := context.Background()
	count := func(run func(context.Context, func(pgx.Tx) error) error, ctx context.Context) int {
		t.Helper()
		var n int
		if err := run(ctx, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM pspsim.charges`).Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	inTenant := func(ctx context.Context, fn func(pgx.Tx) error) error {
		return pgstore.InTenant(ctx, e.srv.cfg.Pool, fn)
	}
	inSim := func(ctx context.Context, fn func(pgx.Tx) error) error {
		return pgstore.InPSPSim(ctx, e.srv.cfg.Pool, fn)
	}
	if n := count(inTenant, tenancy.With(ctx, accountID(t, e, a))); n != 2 {
		t.Errorf("account A sees %d charges, want 2", n)
	}
	if n := count(inTenant, tenancy.With(ctx, accountID(t, e, b))); n != 1 {
		t.Errorf("account B sees %d charges, want 1", n)
	}
	if n := count(inSim, ctx); n != 3 {
		t.Errorf("scope pspsim sees %d charges, want 3", n)
	}
	var n int
	if err := e.srv.cfg.Pool.QueryRow(ctx, `SELECT count(*) FROM pspsim.accounts`).Scan(&n); err != nil || n != 0 {
		t.Errorf("without a scope: %d accounts (%v), want 0", n, err)
	}
}

func accountID(t *testing.T, e *env, m *merchant) (id uuid.UUID) {
	t.Helper()
	err := e.srv.allAccounts(context.Background(), func(q *pspsimdb.Queries) error {
		a, err := q.AccountByClientID(context.Background(), m.creds.ClientID)
		id = a.TenantID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Migration 00042 goes down and up again.
func TestMigrationGoesDownAndUp(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	p, closeFn, err := db.Provider(d.OwnerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	exists := func() bool {
		var ok bool
		if err := d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'pspsim')`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists() {
		t.Fatal("schema pspsim missing after migrating")
	}
	if _, err := p.DownTo(ctx, 41); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatal("schema pspsim left after going down")
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("schema pspsim missing after going up again")
	}
}
