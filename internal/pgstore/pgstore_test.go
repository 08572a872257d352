package pgstore_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// The tenant setting is sent with BEGIN; it must hold inside the
// transaction only, never leak to the pooled connection's next borrower,
// and a transaction without a tenant must not start at all.
func TestInTenantScope(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	tid := uuid.New()
	setting := func(tx pgx.Tx) string {
		var v *string
		if err := tx.QueryRow(ctx, `SELECT current_setting('app.tenant_id', true)`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return ""
		}
		return *v
	}
	var inside string
	if err := pgstore.InTenant(tenancy.With(ctx, tid), d.Pool, func(tx pgx.Tx) error { inside = setting(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != tid.String() {
		t.Fatalf("app.tenant_id inside = %q, want %s", inside, tid)
	}
	// A failed transaction rolls back and the connection stays usable.
	boom := errors.New("boom")
	if err := pgstore.InTenant(tenancy.With(ctx, tid), d.Pool, func(pgx.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	for range 3 { // whichever pooled connection comes next
		var after string
		if err := pgstore.InRegistry(ctx, d.Pool, func(tx pgx.Tx) error { after = setting(tx); return nil }); err != nil {
			t.Fatal(err)
		}
		if after != "" {
			t.Fatalf("app.tenant_id leaked to the next transaction: %q", after)
		}
	}
	if err := pgstore.InTenant(ctx, d.Pool, func(pgx.Tx) error { t.Fatal("ran without a tenant"); return nil }); err == nil {
		t.Fatal("InTenant without a tenant succeeded")
	}
}
