package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/edge"
)

// rate limits shows the effective limits, sets only the ones given
// (keeping the other settings), and leaves validation to the tenants
// service: its refusal exits 2 with the code and field.
func TestRateLimitsCommand(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: []string{platform.Tenants}, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{5}, 32), Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"--server", "http://" + r.InternalAddr, "--token", "op"}, args...), &out)
		return out.String(), err
	}
	mustOK := func(want string, args ...string) {
		t.Helper()
		out, err := ctl(args...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("bcpctl %v: %v\n%s\nwant %q", args, err, out, want)
		}
	}
	mustOK("", "tenant", "create", "--name", "Loja Limites", "--domain", "limites.localhost", "--slug", "limites")
	ctx := context.Background()
	ops := r.ClientsWithToken("op").Tenants
	if _, err := ops.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: "limites", Settings: &tenantsv1.Settings{
		ConsentPurposes: []string{"marketing"}, CheckoutTtlSeconds: 3600}})); err != nil {
		t.Fatal(err)
	}
	mustOK("tenant Loja Limites (limites): merchant 200 requests/s, bursts of 400; each agent 100 requests/s, bursts of 200", "rate", "limits", "limites.localhost")
	mustOK("merchant 0.5 requests/s, bursts of 400; each agent 100 requests/s, bursts of 7", "rate", "limits", "limites", "--merchant-rate", "0.5", "--agent-burst", "7")
	mustOK(`"merchant_rate_per_second": 0.5`, "--json", "rate", "limits", "limites")
	// The rest of the settings are kept.
	tn, _ := ops.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: "limites"}))
	s, err := ops.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: tn.Msg.GetTenant().GetId()}))
	if err != nil || s.Msg.GetSettings().GetCheckoutTtlSeconds() != 3600 || len(s.Msg.GetSettings().GetConsentPurposes()) != 1 {
		t.Fatalf("settings after rate limits: %v %v", s.Msg.GetSettings(), err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--agent-rate", "-1"}, "invalid_rate_limit"},
		{[]string{"--merchant-burst", "2000000"}, "settings.rate_limits.merchant_burst"},
		{[]string{"--merchant-rate", "lots"}, "--merchant-rate must be a number"},
	} {
		_, err := ctl(append([]string{"rate", "limits", "limites"}, tc.args...)...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(errorMessage(err)+err.Error(), tc.want) {
			t.Fatalf("rate limits %v: %v (exit %d), want exit 2 with %q", tc.args, err, exitCode(err), tc.want)
		}
	}
	mustOK("merchant 200 requests/s", "rate", "limits", "limites", "--merchant-rate", "0")
	mustOK("usage: bcpctl", "rate", "limits", "--help")
}
