package agentauth_test

import (
	"os"
	"testing"

	"github.com/bcpdev/bcp/internal/testdb"
)

// The platform tests run the real tenants service on a private PostgreSQL.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
