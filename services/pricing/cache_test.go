package pricing

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/testdb"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Two pricing processes over one database: configuration cached by one is
// dropped when the other writes (NOTIFY), a process's own writes are seen
// at once, and usage counts are never served from the cache.
func TestQuoteConfigCache(t *testing.T) {
	d := testdb.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	serve := func(s *Service) pricingv1connect.PricingServiceClient {
		mux := http.NewServeMux()
		mux.Handle(pricingv1connect.NewPricingServiceHandler(s,
			connect.WithInterceptors(apperr.Interceptor(log), svcauth.Server(svcauth.Tokens{Internal: testToken}, Policy))))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return pricingv1connect.NewPricingServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(svcauth.Client(testToken)))
	}
	sa, sb := New(d.Pool), New(d.Pool)
	a, b, ctx := serve(sa), serve(sb), tenant()

	// The first rate is written before b listens, so its notification can
	// never reach b after b has cached the configuration below.
	rate, err := a.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: &pricingv1.ShippingRate{
		Title: "PAC", Carrier: "Correios", Price: 1500, MinDays: 5, MaxDays: 8, Active: true}}))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go sb.Run(runCtx, log)
	// Once b listens its entries live 5 minutes: only the notification
	// can explain a fresh answer below.
	deadline := time.Now().Add(10 * time.Second)
	for !sb.store.cache.Stats().Watched && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	co := &bcp.Checkout{ID: "chk_1", LineItems: lines(10000), Fulfillment: shipTo(sp()), Buyer: &bcp.Buyer{Email: "ana@example.com"}}
	price := func(cl pricingv1connect.PricingServiceClient) int64 {
		out := quoteRPC(t, cl, ctx, co, nil)
		return out.Fulfillment.Methods[0].Groups[0].Options[0].Totals[0].Amount
	}
	if got := price(b); got != 1500 {
		t.Fatalf("b quotes PAC at %d, want 1500", got)
	}
	if s := sb.store.cache.Stats(); s.Len != 1 {
		t.Fatalf("b's cache holds %d tenants, want 1", s.Len)
	}

	// Another process changes the rate: b drops its copy on the notification.
	r := rate.Msg.GetRate()
	r.Price = 1900
	if _, err := a.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: r})); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for price(b) != 1900 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("b still quotes the old rate 5 s after the change")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A process sees its own writes at once (no waiting for NOTIFY).
	r.Price = 2100
	if _, err := b.SetShippingRate(ctx, req(&pricingv1.SetShippingRateRequest{Rate: r})); err != nil {
		t.Fatal(err)
	}
	if got := price(b); got != 2100 {
		t.Fatalf("b quotes %d right after its own write, want 2100", got)
	}

	// A limited discount: its usage is read live, not cached.
	if _, err := a.SetDiscount(ctx, req(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "UMAVEZ", Title: "Uma vez", Kind: pricingv1.Discount_KIND_FIXED, Value: 500, UsageLimit: 1, Combinable: true, Active: true}})); err != nil {
		t.Fatal(err)
	}
	co.Discounts = &bcp.Discounts{Codes: []string{"umavez"}}
	deadline = time.Now().Add(5 * time.Second)
	for appliedString(quoteRPC(t, b, ctx, co, nil)) == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	wantApplied(t, quoteRPC(t, b, ctx, co, nil), "umavez:500 $.line_items[0]=500")
	if _, err := a.RedeemDiscounts(ctx, req(&pricingv1.RedeemDiscountsRequest{CheckoutId: "chk_other", DiscountIds: []string{"UMAVEZ"}})); err != nil {
		t.Fatal(err)
	}
	late := quoteRPC(t, b, ctx, co, nil)
	wantMsgs(t, late, "warning discount_code_user_ineligible $.discounts.codes[0]")
}
