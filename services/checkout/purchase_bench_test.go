package checkout_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/loadkit"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/edge"
)

// BenchmarkPurchase is one card purchase as bcpbench's agents make it
// (issue 35), call by call, every service in this process: create_checkout
// (one var_cam and the buyer), update_checkout with the shipping address,
// update_checkout with the PAC option and the code BEMVINDO10, and a keyed
// complete_checkout with a card token. Each sub-benchmark prepares its
// checkouts (untimed) up to the call it measures. Judge it by allocs/op and
// B/op (-benchmem): the counts are the whole process's, every service's.
func BenchmarkPurchase(b *testing.B) {
	d := testdb.New(b)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.DevServices, PublicAddr: "127.0.0.1:0",
		DatabaseURL: d.AppURL, InternalAddr: "127.0.0.1:0", InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: masterKey,
		Edge: edge.Config{PublicScheme: "http"}, SweepEvery: time.Hour, Logger: testLog(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Stop)
	m, err := loadkit.SeedMerchant(context.Background(), r.ClientsWithToken(operatorToken), "loja-"+uuid.NewString()[:8]+".localhost", profileURL)
	if err != nil {
		b.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(r.PublicAddr)
	ctx := tenancy.With(context.Background(), m.TenantID)
	e := &env{r: r, m: m, port: port, ctx: ctx}
	cl := r.Clients.Checkout
	body := func(args map[string]any) []byte {
		raw, _ := json.Marshal(args["checkout"])
		return raw
	}
	view := func(b *testing.B, res *checkoutv1.CheckoutResult, want string) *loadkit.CheckoutView {
		v := &loadkit.CheckoutView{}
		if err := json.Unmarshal(res.GetCheckoutJson(), v); err != nil || v.Status != want {
			b.Fatalf("%v: %s", err, res.GetCheckoutJson())
		}
		return v
	}
	email := "rui@example.com"
	create := func(b *testing.B) *loadkit.CheckoutView {
		res, err := cl.CreateCheckout(ctx, connect.NewRequest(&checkoutv1.CreateCheckoutRequest{Agent: e.agent(), CheckoutJson: body(loadkit.CreateArgs(email))}))
		if err != nil {
			b.Fatal(err)
		}
		return view(b, res.Msg.GetResult(), bcp.StatusIncomplete)
	}
	address := func(b *testing.B, c *loadkit.CheckoutView) *loadkit.CheckoutView {
		res, err := cl.UpdateCheckout(ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID,
			CheckoutJson: body(loadkit.AddressArgs(c.ID, c.LineItems[0].ID, email))}))
		if err != nil {
			b.Fatal(err)
		}
		return view(b, res.Msg.GetResult(), bcp.StatusIncomplete)
	}
	option := func(b *testing.B, c *loadkit.CheckoutView) *loadkit.CheckoutView {
		args, ok := loadkit.OptionArgs(c, m.PacRate, email, true)
		if !ok {
			b.Fatalf("no shipping option on %s", c.ID)
		}
		res, err := cl.UpdateCheckout(ctx, connect.NewRequest(&checkoutv1.UpdateCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: body(args)}))
		if err != nil {
			b.Fatal(err)
		}
		return view(b, res.Msg.GetResult(), bcp.StatusReadyForComplete)
	}
	complete := func(b *testing.B, c *loadkit.CheckoutView, n int) {
		args := loadkit.CompleteArgs(c.ID, "k"+uuid.NewString(), loadkit.CardInstrument("tok_"+strconv.Itoa(n)+uuid.NewString()[:8]+"_4242"))
		raw := body(args)
		key := args["meta"].(map[string]any)["idempotency-key"].(string)
		res, err := cl.CompleteCheckout(ctx, connect.NewRequest(&checkoutv1.CompleteCheckoutRequest{Agent: e.agent(), Id: c.ID, CheckoutJson: raw,
			Idempotency: idemOf("complete_checkout", key, raw)}))
		if err != nil {
			b.Fatal(err)
		}
		view(b, res.Msg.GetResult(), bcp.StatusCompleted)
	}
	prepare := func(b *testing.B, steps ...func(*testing.B, *loadkit.CheckoutView) *loadkit.CheckoutView) []*loadkit.CheckoutView {
		cs := make([]*loadkit.CheckoutView, b.N)
		for i := range cs {
			cs[i] = create(b)
			for _, step := range steps {
				cs[i] = step(b, cs[i])
			}
		}
		return cs
	}

	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			create(b)
		}
	})
	b.Run("update_address", func(b *testing.B) {
		cs := prepare(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			address(b, cs[i])
		}
	})
	b.Run("update_option", func(b *testing.B) {
		cs := prepare(b, address)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			option(b, cs[i])
		}
	})
	b.Run("complete", func(b *testing.B) {
		cs := prepare(b, address, option)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			complete(b, cs[i], i)
		}
	})
}
