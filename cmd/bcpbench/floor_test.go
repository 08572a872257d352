package main

import (
	"context"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// noop_durable stores one row per call, for the request's tenant, before
// it answers; without a tenant it fails and stores nothing.
func TestDurableNoopStoresOneRowPerCall(t *testing.T) {
	ctx := context.Background()
	d := testdb.NewEmpty(t)
	pool, err := openFloor(ctx, d.SuperURL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if n := pool.Stat().TotalConns(); n != 2 {
		t.Fatalf("%d connections open, want all 2 dialled before the phase", n)
	}
	// A second open finds the table and keeps its rows.
	again, err := openFloor(ctx, d.SuperURL, 1)
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	again.Close()

	tool := durableNoop(pool)
	tenant := uuid.New()
	for range 3 {
		res, err := tool(tenancy.With(ctx, tenant), &mcp.CallToolRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != `{"ok":true}` {
			t.Fatalf("answer %s", got)
		}
	}
	if _, err := tool(ctx, &mcp.CallToolRequest{}); err != tenancy.ErrNoTenant {
		t.Fatalf("without a tenant: %v, want ErrNoTenant", err)
	}
	var rows, ofTenant int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE tenant_id = $1) FROM `+floorTable, tenant).Scan(&rows, &ofTenant); err != nil {
		t.Fatal(err)
	}
	if rows != 3 || ofTenant != 3 {
		t.Fatalf("%d rows, %d of the tenant; want 3 and 3", rows, ofTenant)
	}
}
