package orders_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/wire"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// What the merchant ships from is recorded at creation (buyer, the
// settled delivery with its option and address, the payment) and served
// to the platform's callers only; the list searches and filters on it.
func TestOrderDetailsAndListFilters(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja Detalhes", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)

	pixReq := createRequest("chk_pix", "")
	pixCheckout := completedCheckout("chk_pix")
	pixCheckout.Buyer.PhoneNumber = "+5511987654321"
	pixReq.Checkout = wire.PaidCheckout(pixCheckout)
	pixReq.Payment = &ordersv1.OrderPayment{Method: "pix", HandlerId: "pix_loja", EndToEndId: "E12345678202612021623abcdefghijk", Txid: "tx0123456789abcdef0123456789abcd"}
	pix, err := e.client.CreateOrder(ctx, connect.NewRequest(pixReq))
	if err != nil {
		t.Fatal(err)
	}
	if pix.Msg.GetLabel() != "#1001" {
		t.Fatalf("label %q", pix.Msg.GetLabel())
	}
	cardReq := createRequest("chk_card", "")
	cardCheckout := completedCheckout("chk_card")
	cardCheckout.Buyer = &bcp.Buyer{FirstName: "Bruno", LastName: "Lima", Email: "bruno_100%@example.com"}
	cardReq.Checkout = wire.PaidCheckout(cardCheckout)
	cardReq.Payment = &ordersv1.OrderPayment{Method: "card", HandlerId: "card", CardBrand: "visa", CardLastDigits: "4242"}
	card, err := e.client.CreateOrder(ctx, connect.NewRequest(cardReq))
	if err != nil {
		t.Fatal(err)
	}

	g, err := e.client.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: pix.Msg.GetOrderId()}))
	if err != nil {
		t.Fatal(err)
	}
	want := &ordersv1.OrderDetails{
		Buyer: &ordersv1.OrderBuyer{FirstName: "Ana", LastName: "Souza", Email: "ana@example.com.br", PhoneNumber: "+5511987654321"},
		Deliveries: []*ordersv1.OrderDelivery{{
			MethodType: "shipping", OptionTitle: "Sedex", OptionDescription: "Chega em 1 a 3 dias úteis", OptionAmount: 1500,
			LineItemIds: []string{"li_1", "li_2"},
			Address: &ordersv1.OrderAddress{FirstName: "Ana", LastName: "Souza", StreetAddress: "Av. Paulista, 1000", AddressLocality: "São Paulo",
				AddressRegion: "SP", PostalCode: "01310-100", AddressCountry: "BR"},
		}},
		Payment: &ordersv1.OrderPayment{Method: "pix", HandlerId: "pix_loja", EndToEndId: "E12345678202612021623abcdefghijk", Txid: "tx0123456789abcdef0123456789abcd"},
	}
	if !proto.Equal(g.Msg.GetDetails(), want) {
		t.Fatalf("details\n got %v\nwant %v", g.Msg.GetDetails(), want)
	}
	// An agent reading its own order gets no merchant details.
	ga, err := e.client.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: pix.Msg.GetOrderId(), AgentProfileUrl: "https://agent.example/profile.json"}))
	if err != nil || ga.Msg.GetDetails() != nil {
		t.Fatalf("agent read: %v details %v", err, ga.Msg.GetDetails())
	}
	gc, err := e.client.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: card.Msg.GetOrderId()}))
	if err != nil {
		t.Fatal(err)
	}
	if p := gc.Msg.GetDetails().GetPayment(); !proto.Equal(p, &ordersv1.OrderPayment{Method: "card", HandlerId: "card", CardBrand: "visa", CardLastDigits: "4242"}) {
		t.Fatalf("card payment %v", p)
	}

	list := func(req *ordersv1.ListOrdersRequest) []string {
		t.Helper()
		r, err := e.client.ListOrders(ctx, connect.NewRequest(req))
		if err != nil {
			t.Fatalf("list %v: %v", req, err)
		}
		var out []string
		for _, o := range r.Msg.GetOrders() {
			out = append(out, o.GetLabel())
		}
		return out
	}
	all, err := e.client.ListOrders(ctx, connect.NewRequest(&ordersv1.ListOrdersRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Msg.GetOrders()) != 2 {
		t.Fatalf("list: %v", all.Msg.GetOrders())
	}
	if s := all.Msg.GetOrders()[0]; s.GetLabel() != "#1002" || s.GetBuyerName() != "Bruno Lima" || s.GetBuyerEmail() != "bruno_100%@example.com" || s.GetPaymentMethod() != "card" || s.GetTotal() != 12282 {
		t.Fatalf("summary %v", s)
	}
	now := time.Now()
	for _, c := range []struct {
		req  *ordersv1.ListOrdersRequest
		want []string
	}{
		{&ordersv1.ListOrdersRequest{Query: "#1001"}, []string{"#1001"}},
		{&ordersv1.ListOrdersRequest{Query: "1002"}, []string{"#1002"}},
		{&ordersv1.ListOrdersRequest{Query: "souza"}, []string{"#1001"}},
		{&ordersv1.ListOrdersRequest{Query: "BRUNO_100%"}, []string{"#1002"}},
		{&ordersv1.ListOrdersRequest{Query: "_"}, []string{"#1002"}}, // a literal underscore, not any character
		{&ordersv1.ListOrdersRequest{Query: "example"}, []string{"#1002", "#1001"}},
		{&ordersv1.ListOrdersRequest{Query: "ninguém"}, nil},
		{&ordersv1.ListOrdersRequest{PaymentMethod: "pix"}, []string{"#1001"}},
		{&ordersv1.ListOrdersRequest{PaymentMethod: "card", Status: "processing"}, []string{"#1002"}},
		{&ordersv1.ListOrdersRequest{Status: "fulfilled"}, nil},
		{&ordersv1.ListOrdersRequest{SinceUnix: now.Add(-time.Hour).Unix(), UntilUnix: now.Add(time.Hour).Unix()}, []string{"#1002", "#1001"}},
		{&ordersv1.ListOrdersRequest{SinceUnix: now.Add(time.Hour).Unix()}, nil},
		{&ordersv1.ListOrdersRequest{UntilUnix: now.Add(-time.Hour).Unix()}, nil},
	} {
		if got := list(c.req); !slices.Equal(got, c.want) {
			t.Errorf("list %v = %v, want %v", c.req, got, c.want)
		}
	}
	for _, bad := range []*ordersv1.ListOrdersRequest{{Status: "shipped"}, {PaymentMethod: "boleto"}, {SinceUnix: 20, UntilUnix: 10}} {
		if _, err := e.client.ListOrders(ctx, connect.NewRequest(bad)); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("list %v: %v, want InvalidArgument", bad, err)
		}
	}
	// A pickup: the location's name and address, the option chosen; no
	// payment recorded by the caller comes from the checkout's instrument.
	pick := createRequest("chk_pickup", "")
	pick.Checkout = wire.PaidCheckout(withPickup(completedCheckout("chk_pickup")))
	po, err := e.client.CreateOrder(ctx, connect.NewRequest(pick))
	if err != nil {
		t.Fatal(err)
	}
	gp, err := e.client.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: po.Msg.GetOrderId()}))
	if err != nil {
		t.Fatal(err)
	}
	wantPickup := &ordersv1.OrderDetails{
		Buyer: &ordersv1.OrderBuyer{FirstName: "Ana", LastName: "Souza", Email: "ana@example.com.br"},
		Deliveries: []*ordersv1.OrderDelivery{{MethodType: "pickup", OptionTitle: "Retirada na loja", LocationName: "Loja Centro", LineItemIds: []string{"li_1", "li_2"},
			Address: &ordersv1.OrderAddress{StreetAddress: "Rua XV de Novembro, 10", AddressLocality: "Curitiba", AddressRegion: "PR", PostalCode: "80020-310", AddressCountry: "BR"}}},
		Payment: &ordersv1.OrderPayment{Method: "card", HandlerId: "card", CardBrand: "mastercard", CardLastDigits: "5454"},
	}
	if !proto.Equal(gp.Msg.GetDetails(), wantPickup) {
		t.Fatalf("pickup details\n got %v\nwant %v", gp.Msg.GetDetails(), wantPickup)
	}

	// Another merchant finds none of them.
	other, _ := e.tenant("Outra Loja", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	if r, err := e.client.ListOrders(other, connect.NewRequest(&ordersv1.ListOrdersRequest{Query: "souza"})); err != nil || len(r.Msg.GetOrders()) != 0 {
		t.Fatalf("other tenant: %v %v", err, r)
	}
}

// withPickup makes the checkout a pickup at a store, paid by a card whose
// display the checkout carries.
func withPickup(c *bcp.Checkout) *bcp.Checkout {
	dest, opt := "loc_centro", "retirada"
	c.Fulfillment = &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
		ID: "fm_p", Type: bcp.MethodPickup, LineItemIDs: []string{"li_1", "li_2"}, SelectedDestinationID: &dest,
		Destinations: []bcp.Destination{{ID: dest, Name: "Loja Centro", Address: &bcp.PostalAddress{StreetAddress: "Rua XV de Novembro, 10",
			AddressLocality: "Curitiba", AddressRegion: "PR", PostalCode: "80020-310", AddressCountry: "BR"}}},
		Groups: []bcp.FulfillmentGroup{{ID: "fg_p", LineItemIDs: []string{"li_1", "li_2"}, SelectedOptionID: &opt,
			Options: []bcp.FulfillmentOption{{ID: opt, Title: "Retirada na loja", Totals: []bcp.Total{{Type: bcp.TotalTotal, Amount: 0}}}}}},
	}}}
	c.Payment = &bcp.Payment{Instruments: []bcp.PaymentInstrument{{ID: "pi_1", HandlerID: "card", Type: "card",
		Display: json.RawMessage(`{"brand":"mastercard","last_digits":"5454"}`)}}}
	return c
}
