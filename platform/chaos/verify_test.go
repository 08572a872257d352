package chaos

import (
	"context"
	"os"
	"strings"
	"testing"

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
