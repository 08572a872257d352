package tenants_test

import (
	"os"
	"testing"

	"github.com/bcpdev/bcp/internal/testdb"
)

// Every test of this package gets its own migrated database from testdb.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
