package pricing

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/internal/wire"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
)

const testToken = "pricing-test-token"

// rpc mounts the service on a real HTTP server with the interceptors the
// platform uses (error mapping, service auth with tenant header).
func rpc(t testing.TB) pricingv1connect.PricingServiceClient {
	t.Helper()
	d := testdb.New(t)
	mux := http.NewServeMux()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux.Handle(pricingv1connect.NewPricingServiceHandler(New(d.Pool),
		connect.WithInterceptors(apperr.Interceptor(log), svcauth.Server(svcauth.Tokens{Internal: testToken}, Policy))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return pricingv1connect.NewPricingServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(testToken)))
}

func tenant() context.Context { return tenancy.With(context.Background(), uuid.New()) }

func wantErr(t *testing.T, err error, kind apperr.Kind, code, field string) {
	t.Helper()
	e := apperr.As(err)
	if err == nil || e.Kind != kind || e.Code != code || e.Field != field {
		t.Fatalf("err = %v (kind %d code %q field %q), want kind %d %s at %q", err, e.Kind, e.Code, e.Field, kind, code, field)
	}
}

func req[T any](m *T) *connect.Request[T] { return connect.NewRequest(m) }

func TestShippingRateRPCs(t *testing.T) {
	c, ctx := rpc(t), tenant()
	set, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{
		Title: "PAC", Carrier: "Correios", Regions: []string{"sp", "RJ"}, CepRanges: []*pricingv1.CepRange{{From: "69000-000", To: "69299999"}},
		Price: 1500, FreeAbove: 20000, MinDays: 5, MaxDays: 8, Active: true, Position: 2,
	}}))
	if err != nil {
		t.Fatal(err)
	}
	r := set.Msg.GetRate()
	if !ids.HasPrefix(r.GetId(), "shr") || strings.Join(r.GetRegions(), ",") != "SP,RJ" || r.GetCepRanges()[0].GetFrom() != "69000000" || r.GetPrice() != 1500 {
		t.Fatalf("stored rate = %v", r)
	}
	r.Price, r.CepRanges = 1700, nil
	if _, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: r})); err != nil {
		t.Fatal(err)
	}
	second, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{Title: "SEDEX", Price: 2500, Position: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.ListShippingRates(ctx, req(&pricingv1.ListShippingRatesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	got := list.Msg.GetRates()
	if len(got) != 2 || got[0].GetId() != second.Msg.GetRate().GetId() || got[1].GetPrice() != 1700 || len(got[1].GetCepRanges()) != 0 || got[0].GetActive() {
		t.Fatalf("list = %v", got)
	}

	for _, tc := range []struct {
		name        string
		rate        *pricingv1.ShippingRate
		code, field string
	}{
		{"negative price", &pricingv1.ShippingRate{Title: "X", Price: -1}, "invalid_price", "rate.price"},
		{"malformed CEP", &pricingv1.ShippingRate{Title: "X", CepRanges: []*pricingv1.CepRange{{From: "0100", To: "02000000"}}}, "invalid_cep", "rate.cep_ranges[0].from"},
		{"reversed CEP range", &pricingv1.ShippingRate{Title: "X", CepRanges: []*pricingv1.CepRange{{From: "02000000", To: "01000000"}}}, "invalid_cep_range", "rate.cep_ranges[0]"},
		{"unknown UF", &pricingv1.ShippingRate{Title: "X", Regions: []string{"SP", "ZZ"}}, "unknown_uf", "rate.regions[1]"},
		{"no rate", nil, "rate_required", "rate"},
	} {
		_, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: tc.rate}))
		wantErr(t, err, apperr.KindInvalidArgument, tc.code, tc.field)
	}
	_, err = c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{Id: "shr_nope", Title: "X"}}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")

	if _, err := c.DeleteShippingRate(ctx, req(&pricingv1.DeleteShippingRateRequest{Id: r.GetId()})); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteShippingRate(ctx, req(&pricingv1.DeleteShippingRateRequest{Id: r.GetId()}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")
	list, _ = c.ListShippingRates(ctx, req(&pricingv1.ListShippingRatesRequest{}))
	if len(list.Msg.GetRates()) != 1 {
		t.Fatalf("after delete: %v", list.Msg.GetRates())
	}
}

func TestPickupLocationRPCs(t *testing.T) {
	c, ctx := rpc(t), tenant()
	set, err := c.SetPickupLocation(ctx, req(&pricingv1.SetPickupLocationRequest{Location: &pricingv1.PickupLocation{
		Name: "Loja Centro", StreetAddress: "Rua Direita, 10", AddressLocality: "São Paulo", AddressRegion: "sp",
		PostalCode: "01002-000", Price: 0, Description: "Retire em 2 horas", Active: true,
	}}))
	if err != nil {
		t.Fatal(err)
	}
	l := set.Msg.GetLocation()
	if !ids.HasPrefix(l.GetId(), "pkp") || l.GetPostalCode() != "01002000" || l.GetAddressRegion() != "SP" || l.GetAddressCountry() != "BR" {
		t.Fatalf("stored = %v", l)
	}
	l.Price = 300
	if _, err := c.SetPickupLocation(ctx, req(&pricingv1.SetPickupLocationRequest{Location: l})); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListPickupLocations(ctx, req(&pricingv1.ListPickupLocationsRequest{}))
	if err != nil || len(list.Msg.GetLocations()) != 1 || list.Msg.GetLocations()[0].GetPrice() != 300 {
		t.Fatalf("list = %v %v", list, err)
	}
	_, err = c.SetPickupLocation(ctx, req(&pricingv1.SetPickupLocationRequest{Location: &pricingv1.PickupLocation{
		Name: "X", StreetAddress: "Rua", AddressLocality: "Cidade", AddressRegion: "SP", PostalCode: "123"}}))
	wantErr(t, err, apperr.KindInvalidArgument, "invalid_cep", "location.postal_code")
	if _, err := c.DeletePickupLocation(ctx, req(&pricingv1.DeletePickupLocationRequest{Id: l.GetId()})); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeletePickupLocation(ctx, req(&pricingv1.DeletePickupLocationRequest{Id: l.GetId()}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")
}

func TestDiscountRPCs(t *testing.T) {
	c, ctx := rpc(t), tenant()
	starts := timestamppb.New(now.Add(-time.Hour))
	ends := timestamppb.New(now.Add(time.Hour))
	set, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "BemVindo10", Title: "Boas-vindas", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, StartsAt: starts, EndsAt: ends,
		UsageLimit: 100, Combinable: true, Active: true, TimesUsed: 99,
	}}))
	if err != nil {
		t.Fatal(err)
	}
	d := set.Msg.GetDiscount()
	if !ids.HasPrefix(d.GetId(), "dsc") || d.GetCode() != "BemVindo10" || d.GetPriority() != 1 || d.GetTimesUsed() != 0 ||
		!d.GetStartsAt().AsTime().Equal(starts.AsTime()) || d.GetKind() != pricingv1.Discount_KIND_PERCENT {
		t.Fatalf("stored = %v", d)
	}
	// Codes are unique per tenant, case-insensitively.
	_, err = c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "BEMVINDO10", Title: "Outro", Kind: pricingv1.Discount_KIND_FIXED, Value: 500, Active: true}}))
	wantErr(t, err, apperr.KindAlreadyExists, "duplicate_code", "discount.code")
	other, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "FRETE", Title: "Frete grátis", Kind: pricingv1.Discount_KIND_FREE_SHIPPING, Active: true}}))
	if err != nil {
		t.Fatal(err)
	}
	// Renaming onto a taken code is a duplicate too.
	o := other.Msg.GetDiscount()
	o.Code = "bemvindo10"
	_, err = c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: o}))
	wantErr(t, err, apperr.KindAlreadyExists, "duplicate_code", "discount.code")
	// Another tenant may use the same code.
	if _, err := c.SetDiscount(tenant(), req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "bemvindo10", Title: "Boas-vindas", Kind: pricingv1.Discount_KIND_FIXED, Value: 500, Active: true}})); err != nil {
		t.Fatalf("other tenant, same code: %v", err)
	}
	auto, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Title: "Inverno", Kind: pricingv1.Discount_KIND_FIXED, Value: 300, Automatic: true, Priority: 5, Active: true}}))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name        string
		d           *pricingv1.Discount
		code, field string
	}{
		{"percent 0", &pricingv1.Discount{Code: "A", Title: "A", Kind: pricingv1.Discount_KIND_PERCENT, Value: 0}, "invalid_value", "discount.value"},
		{"percent 10001", &pricingv1.Discount{Code: "A", Title: "A", Kind: pricingv1.Discount_KIND_PERCENT, Value: 10001}, "invalid_value", "discount.value"},
		{"fixed 0", &pricingv1.Discount{Code: "A", Title: "A", Kind: pricingv1.Discount_KIND_FIXED}, "invalid_value", "discount.value"},
		{"no kind", &pricingv1.Discount{Code: "A", Title: "A", Value: 5}, "invalid_kind", "discount.kind"},
		{"ends before starts", &pricingv1.Discount{Code: "A", Title: "A", Kind: pricingv1.Discount_KIND_FIXED, Value: 5, StartsAt: ends, EndsAt: starts}, "invalid_ends_at", "discount.ends_at"},
		{"bad timestamp", &pricingv1.Discount{Code: "A", Title: "A", Kind: pricingv1.Discount_KIND_FIXED, Value: 5, EndsAt: &timestamppb.Timestamp{Nanos: -1}}, "invalid_time", "discount.ends_at"},
	} {
		_, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: tc.d}))
		wantErr(t, err, apperr.KindInvalidArgument, tc.code, tc.field)
	}

	list, err := c.ListDiscounts(ctx, req(&pricingv1.ListDiscountsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range list.Msg.GetDiscounts() {
		got = append(got, x.GetTitle())
	}
	if strings.Join(got, ",") != "Boas-vindas,Frete grátis,Inverno" && strings.Join(got, ",") != "Frete grátis,Boas-vindas,Inverno" {
		t.Errorf("list (priority order) = %v", got)
	}
	if _, err := c.DeleteDiscount(ctx, req(&pricingv1.DeleteDiscountRequest{Id: auto.Msg.GetDiscount().GetId()})); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteDiscount(ctx, req(&pricingv1.DeleteDiscountRequest{Id: auto.Msg.GetDiscount().GetId()}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")
}

// quoteRPC calls Quote with checkout c (previous state prev) over the
// typed contract, as the checkout service does, and returns the priced
// checkout.
func quoteRPC(t *testing.T, cl pricingv1connect.PricingServiceClient, ctx context.Context, c *bcp.Checkout, prev *bcp.Checkout) *bcp.Checkout {
	t.Helper()
	return quoteAt(t, cl, ctx, c, prev, now, bcpnames.Checkout, bcpnames.Fulfillment, bcpnames.Discount)
}

func quoteAt(t *testing.T, cl pricingv1connect.PricingServiceClient, ctx context.Context, c, prev *bcp.Checkout, at time.Time, caps ...string) *bcp.Checkout {
	t.Helper()
	resp, err := cl.Quote(ctx, req(wire.QuoteRequest(c, prev, caps, timestamppb.New(at))))
	if err != nil {
		t.Fatalf("Quote: %v", err)
	}
	out := *c
	out.LineItems, out.Messages = slices.Clone(c.LineItems), slices.Clone(c.Messages)
	wire.ApplyQuote(&out, resp.Msg)
	checkInvariants(t, Request{Checkout: c, Fulfillment: slices.Contains(caps, bcpnames.Fulfillment), Discounts: slices.Contains(caps, bcpnames.Discount)}, &out)
	return &out
}

func TestCrossTenantIsolation(t *testing.T) {
	c := rpc(t)
	a, b := tenant(), tenant()
	rate, err := c.SetShippingRate(a, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{Title: "PAC", Price: 1500, Active: true}}))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := c.SetPickupLocation(a, req(&pricingv1.SetPickupLocationRequest{Location: &pricingv1.PickupLocation{
		Name: "Loja A", StreetAddress: "Rua A", AddressLocality: "São Paulo", AddressRegion: "SP", PostalCode: "01002000", Active: true}}))
	if err != nil {
		t.Fatal(err)
	}
	disc, err := c.SetDiscount(a, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "SOA", Title: "Só A", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, Active: true}}))
	if err != nil {
		t.Fatal(err)
	}

	// B sees nothing of A's.
	if l, err := c.ListShippingRates(b, req(&pricingv1.ListShippingRatesRequest{})); err != nil || len(l.Msg.GetRates()) != 0 {
		t.Errorf("B lists rates %v (%v)", l.Msg.GetRates(), err)
	}
	if l, err := c.ListPickupLocations(b, req(&pricingv1.ListPickupLocationsRequest{})); err != nil || len(l.Msg.GetLocations()) != 0 {
		t.Errorf("B lists locations %v (%v)", l.Msg.GetLocations(), err)
	}
	if l, err := c.ListDiscounts(b, req(&pricingv1.ListDiscountsRequest{})); err != nil || len(l.Msg.GetDiscounts()) != 0 {
		t.Errorf("B lists discounts %v (%v)", l.Msg.GetDiscounts(), err)
	}
	// B cannot delete, overwrite or redeem A's rows: not_found.
	_, err = c.DeleteShippingRate(b, req(&pricingv1.DeleteShippingRateRequest{Id: rate.Msg.GetRate().GetId()}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")
	_, err = c.DeletePickupLocation(b, req(&pricingv1.DeletePickupLocationRequest{Id: loc.Msg.GetLocation().GetId()}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")
	_, err = c.DeleteDiscount(b, req(&pricingv1.DeleteDiscountRequest{Id: disc.Msg.GetDiscount().GetId()}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")
	stolen := rate.Msg.GetRate()
	stolen.Price = 1
	_, err = c.SetShippingRate(b, req(&pricingv1.SetShippingRateRequest{Rate: stolen}))
	wantErr(t, err, apperr.KindNotFound, "not_found", "")
	_, err = c.RedeemDiscounts(b, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_b", DiscountIds: []string{"SOA"}}))
	wantErr(t, err, apperr.KindNotFound, "discount_not_found", "")
	// B's quotes do not see A's rates, locations or codes.
	co := withCodes(&bcp.Checkout{LineItems: lines(10000), Fulfillment: shipTo(sp())}, "SOA")
	qb := quoteRPC(t, c, b, co, nil)
	if len(qb.Fulfillment.Methods[0].Groups[0].Options) != 0 || qb.Fulfillment.AvailableMethods != nil {
		t.Errorf("B's quote offers A's rates: %+v", qb.Fulfillment)
	}
	wantMsgs(t, qb, "error address_undeliverable $.fulfillment.methods[0].selected_destination_id", "warning discount_code_invalid $.discounts.codes[0]")
	// A still has everything, unchanged.
	qa := quoteRPC(t, c, a, co, nil)
	wantTotals(t, "A", qa.Totals, "subtotal=10000 items_discount=-1000 fulfillment=1500 total=10500")
	// Without a tenant the service refuses tenant-scoped calls.
	_, err = c.ListShippingRates(context.Background(), req(&pricingv1.ListShippingRatesRequest{}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("no tenant header: %v", err)
	}
}

func TestQuoteRPC(t *testing.T) {
	c, ctx := rpc(t), tenant()
	mustSet := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{
		Title: "PAC", Carrier: "Correios", Price: 1500, FreeAbove: 20000, MinDays: 5, MaxDays: 8, Active: true}}))
	mustSet(err)
	_, err = c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{
		Title: "SEDEX Capital", Carrier: "Correios", Price: 2500, CepRanges: []*pricingv1.CepRange{{From: "01000000", To: "05999999"}},
		MinDays: 1, MaxDays: 1, Active: true}}))
	mustSet(err)
	_, err = c.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{Title: "Inativa", Price: 1, Active: false}}))
	mustSet(err)
	_, err = c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "DEZ", Title: "10% off", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, Priority: 1, Combinable: true, Active: true,
		EndsAt: timestamppb.New(now.Add(time.Hour))}}))
	mustSet(err)
	_, err = c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Title: "Compre 3 ganhe 5 reais", Kind: pricingv1.Discount_KIND_FIXED, Value: 500, Automatic: true, MinSubtotal: 9000,
		Priority: 2, Combinable: true, Active: true}}))
	mustSet(err)

	co := withCodes(&bcp.Checkout{LineItems: lines(3333, 3333, 3333), Fulfillment: shipTo(sp())}, "dez")
	first := quoteRPC(t, c, ctx, co, nil)
	g := first.Fulfillment.Methods[0].Groups[0]
	if len(g.Options) != 2 || g.Options[0].Title != "PAC" || g.Options[1].Title != "SEDEX Capital" || g.Options[1].Description != "Entrega em 1 dia útil" {
		t.Fatalf("options = %+v", g.Options)
	}
	// DEZ: 1000 (334/333/333), then the automatic 500 on what is left
	// (2999/3000/3000): 166 each and two centavos to the larger remainders.
	wantApplied(t, first, "dez:1000 $.line_items[0]=334 $.line_items[1]=333 $.line_items[2]=333; auto(Compre 3 ganhe 5 reais):500 $.line_items[0]=166 $.line_items[1]=167 $.line_items[2]=167")
	wantLine(t, first, 0, "subtotal=3333 items_discount=-500 total=2833")
	wantTotals(t, "first", first.Totals, "subtotal=9999 items_discount=-1500 total=8499")

	co.Fulfillment = &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{ID: first.Fulfillment.Methods[0].ID,
		Groups: []bcp.FulfillmentGroup{{ID: g.ID, SelectedOptionID: ptr(g.Options[1].ID)}}}}}
	second := quoteRPC(t, c, ctx, co, first)
	wantTotals(t, "second", second.Totals, "subtotal=9999 items_discount=-1500 fulfillment=2500 total=10999")
	if m := second.Fulfillment.Methods[0]; m.Destinations[0].ID != "dest_1" || m.Groups[0].ID != "grp_1" {
		t.Errorf("ids moved: %+v", m)
	}

	// An hour later DEZ has expired.
	late := quoteAt(t, c, ctx, co, nil, now.Add(time.Hour), bcpnames.Checkout, bcpnames.Discount)
	wantMsgs(t, late, "warning discount_code_expired $.discounts.codes[0]")
	if late.Fulfillment != nil {
		t.Errorf("fulfillment not negotiated but returned")
	}
	wantTotals(t, "late", late.Totals, "subtotal=9999 items_discount=-500 total=9499")

	// Lines out of range are an invalid argument with the field.
	_, err = c.Quote(ctx, req(&pricingv1.QuoteRequest{Lines: []*pricingv1.QuoteLine{{Id: "li_1", VariantId: "x", UnitPrice: 1}}}))
	wantErr(t, err, apperr.KindInvalidArgument, "invalid_quantity", "checkout_json.line_items[0].quantity")
	_, err = c.Quote(ctx, req(&pricingv1.QuoteRequest{Lines: []*pricingv1.QuoteLine{{Id: "li_1", VariantId: "x", UnitPrice: 9007199254740991, Quantity: 2}}}))
	wantErr(t, err, apperr.KindInvalidArgument, "amount_out_of_range", "checkout_json.line_items[0]")
	_, err = c.Quote(ctx, req(&pricingv1.QuoteRequest{Lines: []*pricingv1.QuoteLine{{VariantId: "x", UnitPrice: 1, Quantity: 1}}}))
	wantErr(t, err, apperr.KindInvalidArgument, "line_id_required", "checkout_json.line_items[0].id")
}

func TestRedeemDiscounts(t *testing.T) {
	c, ctx := rpc(t), tenant()
	mk := func(d *pricingv1.Discount) string {
		t.Helper()
		r, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: d}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetDiscount().GetId()
	}
	once := mk(&pricingv1.Discount{Code: "UMAVEZ", Title: "Uma vez", Kind: pricingv1.Discount_KIND_FIXED, Value: 500, UsageLimit: 1, Combinable: true, Active: true})
	perBuyer := mk(&pricingv1.Discount{Code: "CPF", Title: "Por comprador", Kind: pricingv1.Discount_KIND_FIXED, Value: 300, UsageLimitPerBuyer: 1, Combinable: true, Active: true})
	auto := mk(&pricingv1.Discount{Title: "Automático", Kind: pricingv1.Discount_KIND_PERCENT, Value: 100, Automatic: true, Combinable: true, Active: true})
	used := func(id string) int64 {
		t.Helper()
		l, err := c.ListDiscounts(ctx, req(&pricingv1.ListDiscountsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range l.Msg.GetDiscounts() {
			if d.GetId() == id {
				return d.GetTimesUsed()
			}
		}
		t.Fatalf("discount %s not listed", id)
		return 0
	}

	// By code (any case) and by id; twice is the same as once.
	for range 2 {
		if _, err := c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_1", BuyerEmail: " Ana@Example.com",
			DiscountIds: []string{"umavez", "CPF", auto, auto}})); err != nil {
			t.Fatal(err)
		}
	}
	if used(once) != 1 || used(perBuyer) != 1 || used(auto) != 1 {
		t.Fatalf("times used %d %d %d, want 1 each", used(once), used(perBuyer), used(auto))
	}

	// Discounts without limits are redeemed in one statement: all or
	// nothing, and idempotent too.
	_, err := c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_u", DiscountIds: []string{auto, "NAOEXISTE"}}))
	wantErr(t, err, apperr.KindNotFound, "discount_not_found", "")
	if used(auto) != 1 {
		t.Fatalf("a redemption with an unknown code recorded the automatic discount: used %d", used(auto))
	}
	for range 2 {
		if _, err := c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_u", DiscountIds: []string{auto}})); err != nil {
			t.Fatal(err)
		}
	}
	if used(auto) != 2 {
		t.Fatalf("automatic discount used %d times, want 2", used(auto))
	}

	// Re-pricing the redeemed checkout still applies its discounts; another
	// checkout and the same buyer are over the limits.
	co := withCodes(&bcp.Checkout{ID: "chk_1", LineItems: lines(10000), Buyer: &bcp.Buyer{Email: "ana@example.com"}}, "UMAVEZ", "CPF")
	own := quoteRPC(t, c, ctx, co, nil)
	wantMsgs(t, own)
	co.ID, co.Buyer.Email = "chk_2", "ANA@example.com"
	other := quoteRPC(t, c, ctx, co, nil)
	wantMsgs(t, other, "warning discount_code_user_ineligible $.discounts.codes[0]", "warning discount_code_user_ineligible $.discounts.codes[1]")
	co.Buyer.Email = "bia@example.com"
	bia := quoteRPC(t, c, ctx, co, nil)
	wantMsgs(t, bia, "warning discount_code_user_ineligible $.discounts.codes[0]")
	co.Buyer = nil
	anon := quoteRPC(t, c, ctx, co, nil)
	wantMsgs(t, anon, "warning discount_code_user_ineligible $.discounts.codes[0]", "warning discount_code_user_not_logged_in $.discounts.codes[1]")

	// Redeeming over the limit records nothing at all (one transaction).
	_, err = c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_2", BuyerEmail: "bia@example.com",
		DiscountIds: []string{"CPF", "UMAVEZ"}}))
	wantErr(t, err, apperr.KindFailedPrecondition, "discount_usage_limit_reached", "")
	if used(perBuyer) != 1 {
		t.Errorf("a failed redemption recorded CPF: %d", used(perBuyer))
	}
	_, err = c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_3", BuyerEmail: "ANA@example.com", DiscountIds: []string{"CPF"}}))
	wantErr(t, err, apperr.KindFailedPrecondition, "discount_buyer_limit_reached", "")
	_, err = c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_3", DiscountIds: []string{"CPF"}}))
	wantErr(t, err, apperr.KindFailedPrecondition, "discount_buyer_required", "")
	_, err = c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_3", DiscountIds: []string{"NAOEXISTE"}}))
	wantErr(t, err, apperr.KindNotFound, "discount_not_found", "")
	_, err = c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{DiscountIds: []string{"CPF"}}))
	wantErr(t, err, apperr.KindInvalidArgument, "invalid_checkout_id", "checkout_id")
	if _, err := c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_4", BuyerEmail: "bia@example.com",
		DiscountIds: []string{"cpf"}})); err != nil {
		t.Fatalf("another buyer: %v", err)
	}
	if used(perBuyer) != 2 {
		t.Errorf("CPF used %d times, want 2", used(perBuyer))
	}
}

// A ref is a discount's id before it is a code: when one discount's code
// spells another's id, the id wins; the code matches in any case.
func TestRedeemUnlimitedIDWinsOverCode(t *testing.T) {
	c, ctx := rpc(t), tenant()
	mk := func(d *pricingv1.Discount) string {
		t.Helper()
		r, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: d}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetDiscount().GetId()
	}
	byID := mk(&pricingv1.Discount{Code: "PRIMEIRO", Title: "Pelo id", Kind: pricingv1.Discount_KIND_FIXED, Value: 100, Combinable: true, Active: true})
	byCode := mk(&pricingv1.Discount{Code: byID, Title: "Pelo código", Kind: pricingv1.Discount_KIND_FIXED, Value: 200, Combinable: true, Active: true})
	if strings.ToUpper(byID) == byID {
		t.Fatalf("discount id %q has no lower-case letter to tell the code apart", byID)
	}
	used := func() map[string]int64 {
		t.Helper()
		l, err := c.ListDiscounts(ctx, req(&pricingv1.ListDiscountsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, d := range l.Msg.GetDiscounts() {
			out[d.GetId()] = d.GetTimesUsed()
		}
		return out
	}
	if _, err := c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_id", DiscountIds: []string{byID}})); err != nil {
		t.Fatal(err)
	}
	if u := used(); u[byID] != 1 || u[byCode] != 0 {
		t.Fatalf("ref %q redeemed %v, want the discount with that id only", byID, u)
	}
	// Upper-cased, the ref is no id: it is the other discount's code.
	if _, err := c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_code", DiscountIds: []string{strings.ToUpper(byID), "primeiro"}})); err != nil {
		t.Fatal(err)
	}
	if u := used(); u[byID] != 2 || u[byCode] != 1 {
		t.Fatalf("refs %q and primeiro redeemed %v, want each discount once more", strings.ToUpper(byID), u)
	}
}

// Concurrent completions racing for the last use of a limited discount:
// exactly one wins.
func TestRedeemDiscountsConcurrentLimit(t *testing.T) {
	c, ctx := rpc(t), tenant()
	if _, err := c.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "ULTIMO", Title: "Último", Kind: pricingv1.Discount_KIND_FIXED, Value: 100, UsageLimit: 1, Active: true}})); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_" + string(rune('a'+i)), DiscountIds: []string{"ULTIMO"}}))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case apperr.As(err).Code != "discount_usage_limit_reached":
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d redemptions succeeded, want exactly 1", ok)
	}
}

// A redemption of discounts without limits is planned once per
// connection, not on every call (pgstore.SingleGenericPlan): its refs
// array would otherwise make PostgreSQL prefer a custom plan each time,
// and planning it costs more than running it.
func TestRedeemUnlimitedPlansOnce(t *testing.T) {
	ctx := tenant()
	pool := testdb.New(t).OneConnPool(t, nil) // pg_prepared_statements is per connection
	s := New(pool)
	if _, err := s.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "SEMLIMITE", Title: "Sem limite", Kind: pricingv1.Discount_KIND_FIXED, Value: 500, Combinable: true, Active: true}})); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := s.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: fmt.Sprintf("chk_%d", i), DiscountIds: []string{"semlimite"}})); err != nil {
			t.Fatal(err)
		}
	}
	if custom, generic := testdb.Plans(t, pool, "RedeemUnlimited"); custom != 0 || generic != 8 {
		t.Fatalf("RedeemUnlimited: %d custom and %d generic plans in 8 calls, want 0 and 8", custom, generic)
	}
}
