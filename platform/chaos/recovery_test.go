package chaos

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/testdb"
)

// The kill recovery's queries are valid against the schema: on an empty
// platform nothing is left, and ids that do not exist are not open.
func TestKillRecoveryQueriesMatchTheSchema(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	left, err := snapshotLeft(ctx, pool)
	if err != nil || left.size() != 0 {
		t.Fatalf("snapshotLeft on an empty platform: %s, %v", left, err)
	}
	gone := leftWork{sessions: []string{"00000000-0000-0000-0000-000000000000/chk_x"}, attempts: []string{"pay_x"}, charges: []string{"pi_x"}}
	if open, err := gone.stillOpen(ctx, pool); err != nil || len(open) != 0 {
		t.Fatalf("stillOpen of ids that do not exist: %v, %v", open, err)
	}
}
