package orders_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/wire"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

func TestCreateOrderBuildsTheBCPOrder(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)

	res := e.create(ctx, "chk_1", "")
	if !res.GetCreated() || !ids.HasPrefix(res.GetOrderId(), "ord") {
		t.Fatalf("created %v id %q", res.GetCreated(), res.GetOrderId())
	}
	validateOrder(t, res.GetOrderJson())
	o := decode(t, res.GetOrderJson())
	if o.UCP != nil || bytes.Contains(res.GetOrderJson(), []byte(`"ucp"`)) {
		t.Fatalf("stored/served order must not carry ucp: %s", res.GetOrderJson())
	}
	wantPermalink := "https://loja.example.com.br/orders/" + o.ID
	if o.ID != res.GetOrderId() || o.CheckoutID != "chk_1" || o.Label != "#1001" || o.PermalinkURL != wantPermalink || res.GetPermalinkUrl() != wantPermalink {
		t.Fatalf("order header: %+v", o)
	}
	if o.Currency != "BRL" || len(o.Totals) != 4 || o.Totals[3].Type != bcp.TotalTotal || o.Totals[3].Amount != 12282 {
		t.Fatalf("currency/totals: %s %+v", o.Currency, o.Totals)
	}
	if len(o.LineItems) != 2 {
		t.Fatalf("lines: %+v", o.LineItems)
	}
	for i, want := range []struct {
		id, item string
		qty      int64
	}{{"li_1", "var_camiseta_p", 2}, {"li_2", "var_caneca", 1}} {
		l := o.LineItems[i]
		if l.ID != want.id || l.Item.ID != want.item || l.Quantity.Total != want.qty || l.Quantity.Fulfilled != 0 ||
			l.Quantity.Original == nil || *l.Quantity.Original != want.qty || l.Status != bcp.LineProcessing || len(l.Totals) != 2 {
			t.Fatalf("line %d: %+v", i, l)
		}
	}
	if len(o.Fulfillment.Events) != 0 || len(o.Adjustments) != 0 || !bytes.Contains(res.GetOrderJson(), []byte(`"events":[]`)) ||
		!bytes.Contains(res.GetOrderJson(), []byte(`"adjustments":[]`)) {
		t.Fatalf("events/adjustments must be empty arrays: %s", res.GetOrderJson())
	}
	if len(o.Fulfillment.Expectations) != 1 {
		t.Fatalf("expectations: %+v", o.Fulfillment.Expectations)
	}
	x := o.Fulfillment.Expectations[0]
	if x.MethodType != bcp.MethodShipping || x.Destination.PostalCode != "01310-100" || x.Destination.StreetAddress != "Av. Paulista, 1000" ||
		x.Description != "Sedex — Chega em 1 a 3 dias úteis" || len(x.LineItems) != 2 || x.LineItems[0] != (bcp.LineItemRef{ID: "li_1", Quantity: 2}) {
		t.Fatalf("expectation: %+v", x)
	}

	// A sequential retry is answered with the same order and bytes, and
	// its failed insert gives its label number back.
	if again := e.create(ctx, "chk_1", ""); again.GetCreated() || again.GetOrderId() != o.ID || !bytes.Equal(again.GetOrderJson(), res.GetOrderJson()) {
		t.Fatalf("retry: created %v id %q\n%s", again.GetCreated(), again.GetOrderId(), again.GetOrderJson())
	}

	// Get serves the same bytes; the next order takes the next label.
	g, err := e.client.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: o.ID}))
	if err != nil || !bytes.Equal(g.Msg.GetOrderJson(), res.GetOrderJson()) || g.Msg.GetAgentProfileUrl() != "https://agent.example/profile.json" {
		t.Fatalf("get: %v\n%s\n%s", err, g.Msg.GetOrderJson(), res.GetOrderJson())
	}
	if o2 := decode(t, e.create(ctx, "chk_2", "").GetOrderJson()); o2.Label != "#1002" {
		t.Fatalf("second label %q", o2.Label)
	}
	l, err := e.client.ListOrders(ctx, connect.NewRequest(&ordersv1.ListOrdersRequest{PageSize: 1}))
	if err != nil || len(l.Msg.GetOrders()) != 1 || l.Msg.GetOrders()[0].GetCheckoutId() != "chk_2" || l.Msg.GetNextPageToken() == "" {
		t.Fatalf("list page 1: %v %+v", err, l.Msg)
	}
	l2, err := e.client.ListOrders(ctx, connect.NewRequest(&ordersv1.ListOrdersRequest{PageSize: 1, PageToken: l.Msg.GetNextPageToken()}))
	if err != nil || len(l2.Msg.GetOrders()) != 1 || l2.Msg.GetOrders()[0].GetId() != o.ID || l2.Msg.GetOrders()[0].GetTotal() != 12282 ||
		l2.Msg.GetOrders()[0].GetStatus() != "processing" {
		t.Fatalf("list page 2: %v %+v", err, l2.Msg)
	}
}

func TestCreateOrderPickupExpectation(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	c := completedCheckout("chk_p")
	loc, opt := "loc_centro", "pickup"
	c.Fulfillment.Methods[0] = bcp.FulfillmentMethod{
		ID: "fm_1", Type: bcp.MethodPickup, LineItemIDs: []string{"li_1", "li_2"},
		Destinations: []bcp.Destination{{ID: loc, Name: "Loja Centro", Address: &bcp.PostalAddress{
			StreetAddress: "Rua Direita, 10", AddressLocality: "São Paulo", AddressRegion: "SP", AddressCountry: "BR", PostalCode: "01002-000",
		}}},
		SelectedDestinationID: &loc,
		Groups: []bcp.FulfillmentGroup{{ID: "fg_1", LineItemIDs: []string{"li_1", "li_2"}, SelectedOptionID: &opt,
			Options: []bcp.FulfillmentOption{{ID: opt, Title: "Retirada na loja", Totals: []bcp.Total{{Type: bcp.TotalTotal, Amount: 0}}}}}},
	}
	req := createRequest("chk_p", "")
	req.Checkout = wire.PaidCheckout(c)
	r, err := e.client.CreateOrder(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	validateOrder(t, r.Msg.GetOrderJson())
	x := decode(t, r.Msg.GetOrderJson()).Fulfillment.Expectations
	if len(x) != 1 || x[0].MethodType != bcp.MethodPickup || x[0].Destination.StreetAddress != "Rua Direita, 10" || x[0].Description != "Retirada na loja — Loja Centro" {
		t.Fatalf("pickup expectation: %+v", x)
	}
}

func TestCreateOrderRefusesBadInput(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	for name, mut := range map[string]func(*ordersv1.CreateOrderRequest){
		"no checkout id": func(r *ordersv1.CreateOrderRequest) { r.CheckoutId = "" },
		"no base url":    func(r *ordersv1.CreateOrderRequest) { r.BaseUrl = "" },
		"ftp base url":   func(r *ordersv1.CreateOrderRequest) { r.BaseUrl = "ftp://loja.example" },
		"no checkout":    func(r *ordersv1.CreateOrderRequest) { r.Checkout = nil },
		"no currency":    func(r *ordersv1.CreateOrderRequest) { r.Checkout.Currency = "" },
		"no lines":       func(r *ordersv1.CreateOrderRequest) { r.Checkout.Lines = nil },
		"no title":       func(r *ordersv1.CreateOrderRequest) { r.Checkout.Lines[1].Title = "" },
		"line twice":     func(r *ordersv1.CreateOrderRequest) { r.Checkout.Lines[1].Id = r.Checkout.Lines[0].GetId() },
		"two totals": func(r *ordersv1.CreateOrderRequest) {
			r.Checkout.Totals = append(r.Checkout.Totals, &ordersv1.OrderTotal{Type: bcp.TotalTotal, Amount: 1})
		},
	} {
		req := createRequest("chk_bad", "")
		mut(req)
		_, err := e.client.CreateOrder(ctx, connect.NewRequest(req))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: want invalid_argument, got %v", name, err)
		}
	}
	if n := e.superCount(`SELECT count(*) FROM orders.orders`); n != 0 {
		t.Fatalf("%d orders written by refused calls", n)
	}
}

// Fifty concurrent completions of one checkout make one order, and every
// caller gets it, byte for byte; one "order created" webhook is queued.
// Without a webhook URL the order is one statement (no transaction around
// it): the same holds, and the losers' label numbers roll back too.
func TestCreateOrderConcurrentlyMakesExactlyOne(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	rc := newReceiver(t, 0)
	race := func(checkout, webhookURL, wantLabel string) *ordersv1.CreateOrderResponse {
		t.Helper()
		const n = 50
		res := make([]*ordersv1.CreateOrderResponse, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r, err := e.client.CreateOrder(ctx, connect.NewRequest(createRequest(checkout, webhookURL)))
				if err == nil {
					res[i] = r.Msg
				}
				errs[i] = err
			}()
		}
		close(start)
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("%s, call %d: %v", checkout, i, errs[i])
			}
			if res[i].GetCreated() {
				created++
			}
			if !bytes.Equal(res[i].GetOrderJson(), res[0].GetOrderJson()) || res[i].GetOrderId() != res[0].GetOrderId() || res[i].GetPermalinkUrl() != res[0].GetPermalinkUrl() {
				t.Fatalf("%s, call %d got a different order:\n%s\n%s", checkout, i, res[i].GetOrderJson(), res[0].GetOrderJson())
			}
		}
		if created != 1 {
			t.Fatalf("%s: %d callers were told they created the order", checkout, created)
		}
		if rows := e.superCount(`SELECT count(*) FROM orders.orders WHERE checkout_id = '` + checkout + `'`); rows != 1 {
			t.Fatalf("%s: %d order rows for one checkout", checkout, rows)
		}
		if o := decode(t, res[0].GetOrderJson()); o.Label != wantLabel {
			t.Fatalf("%s: label %q, want %q: the losers' numbers must roll back", checkout, o.Label, wantLabel)
		}
		return res[0]
	}
	first := race("chk_race", rc.url(), "#1001")
	if d := e.deliveries(ctx, first.GetOrderId()); len(d) != 1 {
		t.Fatalf("%d webhook messages for one creation", len(d))
	}
	eventually(t, waitFor, "the order created webhook", func() bool { return len(rc.got()) == 1 })
	second := race("chk_race_nohook", "", "#1002")
	if d := e.deliveries(ctx, second.GetOrderId()); len(d) != 0 {
		t.Fatalf("%d webhook messages for an order without a webhook URL", len(d))
	}
	// The stored snapshot carries the label the statement assigned.
	if n := e.superCount(`SELECT count(*) FROM orders.orders WHERE checkout_id = 'chk_race_nohook' AND snapshot->>'label' = '#1002' AND label = '#1002'`); n != 1 {
		t.Fatalf("stored label and snapshot label disagree (%d rows match)", n)
	}
	// A later checkout still gets the next number.
	if o := decode(t, e.create(ctx, "chk_next", "").GetOrderJson()); o.Label != "#1003" {
		t.Fatalf("next label %q", o.Label)
	}
}

// A new tenant's first orders, created at once for different checkouts,
// are numbered #1001 onward without a gap or a repeat: whichever inserts
// the tenant's counter row first takes #1001, the others bump it.
func TestConcurrentFirstOrdersAreNumberedWithoutGaps(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja Nova", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	const n = 20
	raw := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			r, err := e.client.CreateOrder(ctx, connect.NewRequest(createRequest("chk_first_"+strconv.Itoa(i), "")))
			if err == nil {
				raw[i] = r.Msg.GetOrderJson()
			}
			errs[i] = err
		}()
	}
	close(begin)
	wg.Wait()
	labels := make([]string, n)
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("checkout %d: %v", i, errs[i])
		}
		labels[i] = decode(t, raw[i]).Label
		seen[labels[i]] = true
	}
	for k := range n {
		if want := "#" + strconv.Itoa(1001+k); !seen[want] {
			t.Fatalf("labels %v: %s missing", labels, want)
		}
	}
	if len(seen) != n {
		t.Fatalf("labels %v: %d distinct, want %d", labels, len(seen), n)
	}
	if o := decode(t, e.create(ctx, "chk_first_after", "").GetOrderJson()); o.Label != "#"+strconv.Itoa(1001+n) {
		t.Fatalf("next label %q, want #%d", o.Label, 1001+n)
	}
}

func TestOrdersAreInvisibleToOtherTenants(t *testing.T) {
	e := start(t)
	ctxA, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	ctxB, _ := e.tenant("Loja B", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	a := e.create(ctxA, "chk_1", "")
	id := a.GetOrderId()

	_, err := e.client.GetOrder(ctxB, connect.NewRequest(&ordersv1.GetOrderRequest{Id: id}))
	wantCode(t, err, connect.CodeNotFound, bcp.CodeNotFound)
	_, err = e.client.AddFulfillmentEvent(ctxB, connect.NewRequest(&ordersv1.AddFulfillmentEventRequest{OrderId: id, Type: bcp.EventShipped}))
	wantCode(t, err, connect.CodeNotFound, bcp.CodeNotFound)
	_, err = e.client.RefundOrder(ctxB, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 100}))
	wantCode(t, err, connect.CodeNotFound, bcp.CodeNotFound)
	_, err = e.client.ListWebhookDeliveries(ctxB, connect.NewRequest(&ordersv1.ListWebhookDeliveriesRequest{OrderId: id}))
	wantCode(t, err, connect.CodeNotFound, bcp.CodeNotFound)
	l, err := e.client.ListOrders(ctxB, connect.NewRequest(&ordersv1.ListOrdersRequest{}))
	if err != nil || len(l.Msg.GetOrders()) != 0 {
		t.Fatalf("tenant B lists %v %v", l.Msg.GetOrders(), err)
	}
	if len(e.payments.refunds()) != 0 {
		t.Fatal("a refund reached payments for another tenant's order")
	}

	// The same checkout id in tenant B is B's own checkout: its own order
	// and label sequence.
	b := e.create(ctxB, "chk_1", "")
	if b.GetOrderId() == id || !b.GetCreated() || decode(t, b.GetOrderJson()).Label != "#1001" {
		t.Fatalf("tenant B order %+v", b)
	}
	if o := e.get(ctxA, id); o.ID != id || len(o.Fulfillment.Events) != 0 {
		t.Fatalf("tenant A's order changed: %+v", o)
	}
}

func TestFulfillmentEventsUpdateQuantitiesAndStatuses(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	id := e.create(ctx, "chk_1", "").GetOrderId()
	add := func(req *ordersv1.AddFulfillmentEventRequest) (*bcp.Order, error) {
		req.OrderId = id
		r, err := e.client.AddFulfillmentEvent(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		validateOrder(t, r.Msg.GetOrderJson())
		return decode(t, r.Msg.GetOrderJson()), nil
	}
	statuses := func(o *bcp.Order) string {
		var s []string
		for _, l := range o.LineItems {
			s = append(s, l.Status)
		}
		return strings.Join(s, ",")
	}
	lines := func(kv ...any) []*ordersv1.LineQuantity {
		var out []*ordersv1.LineQuantity
		for i := 0; i < len(kv); i += 2 {
			out = append(out, &ordersv1.LineQuantity{Id: kv[i].(string), Quantity: int64(kv[i+1].(int))})
		}
		return out
	}

	// Refused: unknown type, unknown line, zero, more than remains, the
	// same line twice, a bad tracking URL, in_transit before anything shipped.
	for name, c := range map[string]struct {
		req  *ordersv1.AddFulfillmentEventRequest
		code string
	}{
		"type":        {&ordersv1.AddFulfillmentEventRequest{Type: "teleported"}, "invalid_event_type"},
		"line":        {&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, LineItems: lines("li_9", 1)}, "unknown_line_item"},
		"zero":        {&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, LineItems: lines("li_1", 0)}, "invalid_quantity"},
		"too many":    {&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, LineItems: lines("li_1", 3)}, "quantity_exceeds_remaining"},
		"twice":       {&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, LineItems: lines("li_1", 1, "li_1", 1)}, "duplicate_line_item"},
		"tracking":    {&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, TrackingUrl: "not a url"}, "invalid_tracking_url"},
		"unshipped":   {&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventInTransit, LineItems: lines("li_1", 1)}, "quantity_exceeds_remaining"},
		"bad eventid": {&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, EventId: "a b"}, "invalid_event_id"},
	} {
		if _, err := add(c.req); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: want invalid_argument, got %v", name, err)
		} else {
			wantCode(t, err, connect.CodeInvalidArgument, c.code)
		}
	}
	if _, err := add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventInTransit}); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("in_transit of nothing shipped: %v", err)
	}

	o, err := add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventProcessing})
	if err != nil || statuses(o) != "processing,processing" || len(o.Fulfillment.Events) != 1 || len(o.Fulfillment.Events[0].LineItems) != 2 {
		t.Fatalf("processing: %v %+v", err, o)
	}
	o, err = add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, LineItems: lines("li_1", 1), TrackingNumber: "BR123456789BR",
		TrackingUrl: "https://rastreamento.correios.com.br/app/index.php?objeto=BR123456789BR", Carrier: "Correios", EventId: "ship-1"})
	if err != nil || statuses(o) != "partial,processing" || o.LineItems[0].Quantity.Fulfilled != 1 {
		t.Fatalf("ship 1 of 2: %v %s %+v", err, statuses(o), o.LineItems)
	}
	// A retry of the same event adds nothing.
	o, err = add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, LineItems: lines("li_1", 1), EventId: "ship-1"})
	if err != nil || o.LineItems[0].Quantity.Fulfilled != 1 || len(o.Fulfillment.Events) != 2 {
		t.Fatalf("retried event: %v %+v", err, o.Fulfillment.Events)
	}
	if _, err := add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventDelivered, EventId: "ship-1"}); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("same event id, other type: %v", err)
	}
	if _, err := add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped, LineItems: lines("li_1", 2)}); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("ship beyond remaining: %v", err)
	}
	o, err = add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventInTransit, LineItems: lines("li_1", 1)})
	if err != nil || statuses(o) != "partial,processing" {
		t.Fatalf("in transit: %v %s", err, statuses(o))
	}
	// Cancel the unshipped unit of li_1: it is fulfilled as far as it goes.
	o, err = add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventCanceled, LineItems: lines("li_1", 1)})
	if err != nil || statuses(o) != "fulfilled,processing" || o.LineItems[0].Quantity.Total != 1 || *o.LineItems[0].Quantity.Original != 2 {
		t.Fatalf("cancel: %v %s %+v", err, statuses(o), o.LineItems[0].Quantity)
	}
	// Delivered: li_1's shipped unit, and li_2 handed over without shipping.
	o, err = add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventDelivered, Description: "Entregue na portaria"})
	if err != nil || statuses(o) != "fulfilled,fulfilled" || o.LineItems[1].Quantity.Fulfilled != 1 || o.LineItems[0].Quantity.Fulfilled != 1 {
		t.Fatalf("delivered: %v %s %+v", err, statuses(o), o.LineItems)
	}
	if _, err := add(&ordersv1.AddFulfillmentEventRequest{Type: bcp.EventShipped}); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("ship with nothing left: %v", err)
	}
	got := e.get(ctx, id)
	if len(got.Fulfillment.Events) != 5 || got.Fulfillment.Events[1].TrackingNumber != "BR123456789BR" || got.Fulfillment.Events[1].Carrier != "Correios" {
		t.Fatalf("event log: %+v", got.Fulfillment.Events)
	}
	if n := e.superCount(`SELECT count(*) FROM orders.events WHERE order_id = $1`, id); n != 5 {
		t.Fatalf("%d event rows", n)
	}
	l, _ := e.client.ListOrders(ctx, connect.NewRequest(&ordersv1.ListOrdersRequest{}))
	if s := l.Msg.GetOrders()[0].GetStatus(); s != "fulfilled" {
		t.Fatalf("order status %q", s)
	}
}

func TestCancelEveryUnitRemovesTheLines(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	id := e.create(ctx, "chk_1", "").GetOrderId()
	r, err := e.client.AddFulfillmentEvent(ctx, connect.NewRequest(&ordersv1.AddFulfillmentEventRequest{OrderId: id, Type: bcp.EventCanceled, Description: "Sem estoque"}))
	if err != nil {
		t.Fatal(err)
	}
	validateOrder(t, r.Msg.GetOrderJson())
	o := decode(t, r.Msg.GetOrderJson())
	for _, l := range o.LineItems {
		if l.Status != bcp.LineRemoved || l.Quantity.Total != 0 || l.Quantity.Original == nil {
			t.Fatalf("canceled line kept with status removed: %+v", l)
		}
	}
	l, _ := e.client.ListOrders(ctx, connect.NewRequest(&ordersv1.ListOrdersRequest{}))
	if s := l.Msg.GetOrders()[0].GetStatus(); s != "canceled" {
		t.Fatalf("order status %q", s)
	}
}

func TestEventsAreAppendOnlyInTheDatabase(t *testing.T) {
	e := start(t)
	ctx, tn := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	id := e.create(ctx, "chk_1", "").GetOrderId()
	if _, err := e.client.AddFulfillmentEvent(ctx, connect.NewRequest(&ordersv1.AddFulfillmentEventRequest{OrderId: id, Type: bcp.EventShipped})); err != nil {
		t.Fatal(err)
	}
	// As the application role, in the tenant's scope: updates and deletes
	// of events, and deletes of orders, are not privileges it has.
	conn, err := pgx.Connect(context.Background(), e.db.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `SELECT set_config('app.tenant_id', $1, false)`, tn.GetId()); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`UPDATE orders.events SET type = 'canceled'`,
		`DELETE FROM orders.events`,
		`DELETE FROM orders.orders`,
		`DELETE FROM orders.adjustments`,
	} {
		_, err := conn.Exec(context.Background(), stmt)
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s: want permission denied, got %v", stmt, err)
		}
	}
}
