package merchantio_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/edge"
	"github.com/bcpdev/bcp/services/merchantio"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// A document's bad values are reported with their paths and the owning
// service's own codes and messages (pricing for rates, pickup points and
// discounts, tenants for settings), and nothing is applied.
func TestImportAsksTheOwners(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{5}, 32), Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ops := r.ClientsWithToken("op")
	ctx := context.Background()
	tn, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja Regras", Domains: []string{"regras.localhost"}}))
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse(tn.Msg.GetTenant().GetId())
	c := merchantio.Clients{Tenants: ops.Tenants, Catalog: ops.Catalog, Pricing: ops.Pricing}

	doc, ps := merchantio.Decode([]byte(`{"format":"bcp.merchant.v1",
	  "shipping_rates":[{"title":"PAC","price":1500,"regions":["sp","XX"],"cep_ranges":[{"from":"01000-000","to":"0599"}],"min_days":1,"max_days":3,"active":true,"position":1},
	                    {"title":"PAC","price":-1,"min_days":1,"max_days":3,"active":true,"position":2}],
	  "pickup_points":[{"name":"Centro","street_address":"Rua A, 1","address_locality":"São Paulo","address_region":"SP","postal_code":"0100-200","address_country":"BR","price":0,"active":true,"position":1}],
	  "discount_codes":[{"code":"NÃO VALE","title":"Oi","kind":"percent","value":1000,"priority":1,"combinable":true,"active":true}],
	  "automatic_discounts":[{"code":"X","title":"Auto","kind":"free_shipping","value":0,"priority":1,"combinable":true,"active":true}],
	  "settings":{"links":[],"consent_purposes":["marketing"],"checkout_ttl_seconds":60}}`))
	if len(ps) != 0 {
		t.Fatal(ps)
	}
	rep, ps, err := merchantio.Import(ctx, c, id, doc)
	if err != nil || rep != nil {
		t.Fatalf("import: %v %v", rep, err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{
		`$.automatic_discounts[0].code: automatic discounts have no code (invalid_code)`,
		`$.discount_codes[0].code: codes are 1 to 64 letters, digits, '-' or '_' (invalid_code)`,
		`$.pickup_points[0].postal_code: "0100-200" is not a CEP (8 digits) (invalid_cep)`,
		`$.settings.checkout_ttl_seconds: checkout lifetime must be between 5 minutes and 30 days (invalid_ttl)`,
		`$.shipping_rates[0].cep_ranges[0].to: "0599" is not a CEP (8 digits) (invalid_cep)`,
		`$.shipping_rates[0].regions[1]: "XX" is not a Brazilian UF (unknown_uf)`,
		`$.shipping_rates[1].price: rate.price must be between 0 and 9007199254740991 centavos (invalid_price)`,
		`$.shipping_rates[1].title: same title as $.shipping_rates[0] (duplicate_title)`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n got %q\nwant %q", got, want)
	}
	// Nothing was applied.
	exported, err := merchantio.Export(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(exported.ShippingRates)+len(exported.PickupPoints)+len(exported.DiscountCodes)+len(exported.AutomaticDiscounts) != 0 || exported.Settings.CheckoutTTLSeconds != 6*3600 {
		t.Fatalf("a rejected import changed the merchant: %+v", exported)
	}
}
