package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// The edge caches each merchant's negotiation offer and shares equal parts
// of offers between merchants. A tool response must still carry exactly
// the merchant's own payment handlers, and follow a change of them.
func TestNegotiationFollowsMerchantChanges(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	alfa := setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)
	beta := setupMerchant(t, r, "Loja Beta", "beta.localhost", 0)
	profiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(agentProfile("br.dev.bcp.shopping.checkout", "br.dev.bcp.shopping.fulfillment")))
	}))
	t.Cleanup(profiles.Close)
	v, err := bcpschema.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	profile := profiles.URL + "/agent.json"
	agents := map[string]*agent{
		alfa.host: {t: t, s: agentSession(t, r, alfa.host, profile), profile: profile, v: v},
		beta.host: {t: t, s: agentSession(t, r, beta.host, profile), profile: profile, v: v},
	}
	pixIDs := func(host string) []string {
		res, _ := agents[host].call("create_checkout", map[string]any{"checkout": map[string]any{
			"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		}})
		handlers, _ := res["ucp"].(map[string]any)["payment_handlers"].(map[string]any)
		var ids []string
		for _, h := range handlers["br.dev.bcp.pix"].([]any) {
			ids = append(ids, h.(map[string]any)["id"].(string))
		}
		slices.Sort(ids)
		return ids
	}
	if got := pixIDs(alfa.host); !slices.Equal(got, []string{alfa.pixHandler}) {
		t.Fatalf("alfa's Pix handlers = %v, want [%s]", got, alfa.pixHandler)
	}
	if got := pixIDs(beta.host); !slices.Equal(got, []string{beta.pixHandler}) {
		t.Fatalf("beta's Pix handlers = %v, want [%s]", got, beta.pixHandler)
	}

	// Alfa adds a second Pix handler: its next responses offer both,
	// beta's still only its own.
	if _, err := r.ClientsWithToken(operatorToken).Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{
		Tenant: alfa.tenantID.String(), Handler: &tenantsv1.PaymentHandler{Id: "pix_extra", Name: "br.dev.bcp.pix", Position: 1, AvailableInstrumentsJson: `[{"type":"pix"}]`},
	})); err != nil {
		t.Fatal(err)
	}
	want := []string{alfa.pixHandler, "pix_extra"}
	slices.Sort(want)
	eventually(t, 10*time.Second, "alfa's responses offer the new handler", func() bool {
		return slices.Equal(pixIDs(alfa.host), want)
	})
	if got := pixIDs(beta.host); !slices.Equal(got, []string{beta.pixHandler}) {
		t.Fatalf("after alfa's change, beta's Pix handlers = %v, want [%s]", got, beta.pixHandler)
	}
}
