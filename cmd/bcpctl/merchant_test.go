package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/edge"
)

func TestMerchantExportImport(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{4}, 32), Edge: edge.Config{PublicScheme: "http"},
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
	mustOK := func(args ...string) string {
		t.Helper()
		out, err := ctl(args...)
		if err != nil {
			t.Fatalf("bcpctl %v: %v", args, err)
		}
		return out
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Source merchant: catalog, two rates (one with regions and CEP
	// ranges), a pickup point, a code, an automatic discount, settings.
	mustOK("tenant", "create", "--name", "Loja Origem", "--domain", "origem.localhost")
	mustOK("catalog", "import", "origem.localhost", write("cat.json", []byte(`{"products":[
	  {"id":"prd_cam","title":"Camiseta","description":"Algodão","category":"Vestuário","variants":[
	    {"id":"var_cam_p","sku":"CAM-P","title":"Camiseta P","price":5990,"stock":10},
	    {"id":"var_cam_m","sku":"CAM-M","title":"Camiseta M","price":5990,"stock":3,"active":false}]},
	  {"id":"prd_can","title":"Caneca","variants":[{"id":"var_can","sku":"CAN","title":"Caneca 350 ml","price":3990,"stock":2}]}]}`)))
	ops := r.ClientsWithToken("op")
	src, err := ops.Tenants.GetTenant(context.Background(), connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: "origem.localhost"}))
	if err != nil {
		t.Fatal(err)
	}
	tctx := tenancy.With(context.Background(), uuid.MustParse(src.Msg.GetTenant().GetId()))
	for _, rate := range []*pricingv1.ShippingRate{
		{Title: "SEDEX", Price: 3000, MinDays: 1, MaxDays: 3, Active: true, Carrier: "Correios", Position: 1},
		{Title: "Motoboy SP", Price: 1200, MinDays: 0, MaxDays: 1, Active: true, Regions: []string{"SP"}, FreeAbove: 20000,
			CepRanges: []*pricingv1.CepRange{{From: "01000-000", To: "05999-999"}}, Position: 2},
	} {
		if _, err := ops.Pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rate})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ops.Pricing.SetPickupLocation(tctx, connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: &pricingv1.PickupLocation{
		Name: "Loja Centro", StreetAddress: "Rua Direita, 10", AddressLocality: "São Paulo", AddressRegion: "SP", PostalCode: "01002-000", Active: true}})); err != nil {
		t.Fatal(err)
	}
	for _, dsc := range []*pricingv1.Discount{
		{Code: "BEMVINDO10", Title: "10% de boas-vindas", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, Active: true, Combinable: true, Priority: 1,
			StartsAt: timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), UsageLimitPerBuyer: 1},
		{Automatic: true, Title: "Frete grátis acima de R$ 300", Kind: pricingv1.Discount_KIND_FREE_SHIPPING, MinSubtotal: 30000, Active: true, Priority: 2},
	} {
		if _, err := ops.Pricing.SetDiscount(tctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: dsc})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ops.Tenants.SetSettings(context.Background(), connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: "origem.localhost", Settings: &tenantsv1.Settings{
		Links:           []*tenantsv1.Link{{Type: "privacy_policy", Url: "https://origem.example/privacidade"}},
		ConsentPurposes: []string{"marketing", "analytics"}, CheckoutTtlSeconds: 7200,
	}})); err != nil {
		t.Fatal(err)
	}

	// Export → import into a fresh tenant → export again: identical.
	exported := mustOK("merchant", "export", "origem.localhost")
	for _, want := range []string{`"prd_cam"`, `"category": "Vestuário"`, `"CAM-M"`, `"Motoboy SP"`, `"01000000"`, `"Loja Centro"`, `"BEMVINDO10"`, `"free_shipping"`, `"marketing"`, `"checkout_ttl_seconds": 7200`} {
		if !strings.Contains(exported, want) {
			t.Fatalf("export lacks %s:\n%s", want, exported)
		}
	}
	file := write("loja.json", []byte(exported))
	mustOK("tenant", "create", "--name", "Loja Destino", "--domain", "destino.localhost")
	first := mustOK("merchant", "import", "destino.localhost", file)
	if !strings.Contains(first, "shipping rates: created 2") || !strings.Contains(first, "settings: updated") {
		t.Fatalf("first import: %s", first)
	}
	if again := mustOK("merchant", "export", "destino.localhost"); again != exported {
		t.Fatalf("export after import differs:\n--- source\n%s\n--- destination\n%s", exported, again)
	}
	// Same file twice: nothing changes.
	second := mustOK("merchant", "import", "destino.localhost", file)
	for _, want := range []string{"catalog: created 0, updated 0, unchanged 2", "shipping rates: created 0, updated 0, unchanged 2", "pickup points: created 0, updated 0, unchanged 1",
		"discount codes: created 0, updated 0, unchanged 1", "automatic discounts: created 0, updated 0, unchanged 1", "settings: unchanged"} {
		if !strings.Contains(second, want) {
			t.Fatalf("second import %q lacks %q", second, want)
		}
	}

	// Three bad rows in three sections: three path-addressed errors, and
	// nothing changes (a good change in the same file is not applied).
	var doc map[string]any
	if err := json.Unmarshal([]byte(exported), &doc); err != nil {
		t.Fatal(err)
	}
	doc["shipping_rates"].([]any)[0].(map[string]any)["price"] = -1
	doc["pickup_points"].([]any)[0].(map[string]any)["postal_code"] = "sem cep"
	doc["catalog"].(map[string]any)["products"].([]any)[0].(map[string]any)["variants"].([]any)[0].(map[string]any)["price"] = -5
	doc["discount_codes"].([]any)[0].(map[string]any)["title"] = "Título novo que não deve ser aplicado"
	bad, _ := json.Marshal(doc)
	_, err = ctl("merchant", "import", "destino.localhost", write("ruim.json", bad))
	if err == nil || exitCode(err) != 2 {
		t.Fatalf("bad document: %v", err)
	}
	msg := err.Error()
	if n := strings.Count(msg, "\n  "); n != 3 || !strings.Contains(msg, "3 error(s), nothing imported") {
		t.Fatalf("want exactly three errors, got:\n%s", msg)
	}
	for _, path := range []string{"$.shipping_rates[0].price:", "$.pickup_points[0].postal_code:", "$.catalog.products[0].variants[0].price:"} {
		if !strings.Contains(msg, path) {
			t.Fatalf("errors lack %s:\n%s", path, msg)
		}
	}
	if after := mustOK("merchant", "export", "destino.localhost"); after != exported {
		t.Fatalf("a rejected import changed the merchant:\n%s", after)
	}
	// Unknown members are rejected with their path.
	_, err = ctl("merchant", "import", "destino.localhost", write("extra.json", []byte(`{"format":"bcp.merchant.v1","catalogo":{}}`)))
	if err == nil || !strings.Contains(err.Error(), "catalogo") {
		t.Fatalf("unknown member: %v", err)
	}
}
