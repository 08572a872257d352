package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/services/edge"
)

// tenant usage prints the figures the console shows; RecordUsage adds up
// and GetUsage keeps to the window.
func TestTenantUsage(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{3}, 32), Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctl := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), append([]string{"--server", "http://" + r.InternalAddr, "--token", "op"}, args...), &out); err != nil {
			t.Fatalf("bcpctl %v: %v", args, err)
		}
		return out.String()
	}
	ctl("tenant", "create", "--name", "Loja Uso", "--domain", "uso.localhost")
	tr, err := r.ClientsWithToken("op").Tenants.GetTenant(context.Background(), connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: "loja-uso"}))
	if err != nil {
		t.Fatal(err)
	}
	id := tr.Msg.GetTenant().GetId()
	edgeClient := tenantsv1connect.NewTenantServiceClient(http.DefaultClient, "http://"+r.InternalAddr, connect.WithInterceptors(svcauth.Client("int")))
	// Usage days are São Paulo dates: a UTC date would be tomorrow there
	// between 21:00 and midnight, outside the window.
	sp, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().In(sp).Format("2006-01-02")
	old := time.Now().In(sp).AddDate(0, 0, -40).Format("2006-01-02")
	for _, batch := range [][]*tenantsv1.UsageCount{
		{{TenantId: id, Day: today, Requests: 3, Errors: 1}, {TenantId: id, Day: old, Requests: 10, Errors: 10}},
		{{TenantId: id, Day: today, Requests: 1, Errors: 0}, {TenantId: id, Day: today, Requests: 1, Errors: 1}},
		// A tenant that does not exist is skipped, not fatal to the batch.
		{{TenantId: "00000000-0000-4000-8000-000000000000", Day: today, Requests: 1}},
	} {
		if _, err := edgeClient.RecordUsage(context.Background(), connect.NewRequest(&tenantsv1.RecordUsageRequest{Counts: batch})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := edgeClient.RecordUsage(context.Background(), connect.NewRequest(&tenantsv1.RecordUsageRequest{Counts: []*tenantsv1.UsageCount{{TenantId: id, Day: today, Requests: 1, Errors: 2}}})); err == nil {
		t.Fatal("more errors than requests accepted")
	}
	out := ctl("tenant", "usage", "uso.localhost")
	for _, want := range []string{"tenant Loja Uso (loja-uso), last 30 days", "checkouts    0\n", "orders       0\n", "GMV          R$ 0,00\n", "requests     5\n", "errors       2\n", "error rate   40.0%\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("usage output lacks %q:\n%s", want, out)
		}
	}
	out = ctl("tenant", "usage", "loja-uso", "--days", "60")
	if !strings.Contains(out, "requests     15\n") || !strings.Contains(out, "errors       12\n") || !strings.Contains(out, "error rate   80.0%\n") {
		t.Fatalf("60-day usage:\n%s", out)
	}
}
