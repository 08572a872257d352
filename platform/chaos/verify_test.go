package chaos

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// pixStory's query is valid against the schema (PostgreSQL checks every
// column it names even when no row matches): an unknown attempt has no
// story, rather than an SQL error in the middle of a failing run's report.
func TestPixStoryQueryMatchesTheSchema(t *testing.T) {
	d := testdb.New(t)
	pool, err := pgxpool.New(context.Background(), d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	got := pixStory(context.Background(), pool, "chk_x", &seen{paid: "pay_x", race: "cancel vs the Pix payment"})
	if got != "no story: no rows in result set" {
		t.Fatalf("pixStory = %q", got)
	}
	if strings.Contains(got, "SQLSTATE") {
		t.Fatal(got)
	}
}

// The queries that read the PSP simulator's ledgers (schema pspsim) and
// the platform's tables are valid against the schema: a renamed column
// must fail here, not in the middle of a run's report.
func TestChaosQueriesMatchTheSchema(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c, err := keptTwice(ctx, pool)
	if err != nil || c.checked != 0 || len(c.violations) != 0 {
		t.Fatalf("keptTwice on an empty platform: %+v, %v", c, err)
	}
	for _, q := range standbyDigests {
		var n int
		var digest string
		if err := pool.QueryRow(ctx, q.sql).Scan(&n, &digest); err != nil || n != 0 || digest != "" {
			t.Errorf("standby digest of %s: %d %q, %v", q.what, n, digest, err)
		}
	}
	var txid, clientID string
	var amount int64
	if err := pool.QueryRow(ctx, payQuery, "pay_x").Scan(&txid, &amount, &clientID); err == nil || !strings.Contains(err.Error(), "no rows") {
		t.Errorf("payQuery for an unknown attempt: %v", err)
	}
	if n, err := warp(ctx, pool, time.Now(), time.Now()); err != nil || n != 0 {
		t.Errorf("warp on an empty platform: %d, %v", n, err)
	}
}
