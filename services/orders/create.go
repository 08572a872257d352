package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/wire"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/orders/ordersdb"
)

// errLostRace rolls back a create whose checkout got its order from a
// concurrent call meanwhile (and with it the label number it took).
var errLostRace = errors.New("orders: the checkout already has an order")

// isLostRace reports the unique violation InsertNumberedOrder raises when
// the checkout already has its order.
func isLostRace(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505" && pg.ConstraintName == "orders_tenant_id_checkout_id_key"
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// CreateOrder makes the order of a completed checkout, once: any later or
// concurrent call for the same checkout returns that same order (created
// false). The "order created" webhook is queued with it.
func (s *Service) CreateOrder(ctx context.Context, r *connect.Request[ordersv1.CreateOrderRequest]) (*connect.Response[ordersv1.CreateOrderResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	m := r.Msg
	checkoutID := m.GetCheckoutId()
	if checkoutID == "" || len(checkoutID) > 200 {
		return nil, apperr.Invalid("checkout_id", "invalid_checkout_id", "checkout_id is required (at most 200 characters)")
	}
	// No look-up first: a retry (or a concurrent call) fails the numbered
	// insert on the checkout's unique key, which rolls its label number
	// back, and then reads the existing order. The first call, the common
	// one, saves a round trip.
	base, err := baseURL(m.GetBaseUrl())
	if err != nil {
		return nil, err
	}
	c := m.GetCheckout()
	// The AP2 mandate record (digest and claims) is the checkout service's,
	// kept as it came; it must be a JSON object.
	var ap2Mandate []byte
	if a := m.GetAp2MandateJson(); len(a) > 0 {
		var obj map[string]json.RawMessage
		if len(a) > 16<<10 || json.Unmarshal(a, &obj) != nil || obj == nil {
			return nil, apperr.Invalid("ap2_mandate_json", "invalid_ap2_mandate", "ap2_mandate_json must be a JSON object (at most 16 KiB)")
		}
		ap2Mandate = a
	}
	id := ids.New("ord")
	o, total, err := buildOrder(id, checkoutID, base, c)
	if err != nil {
		return nil, err
	}
	snap, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	det := details(c, m.GetPayment())
	detJSON, err := marshalDetails(det)
	if err != nil {
		return nil, err
	}
	row := ordersdb.OrdersOrder{
		TenantID: tid, ID: id, CheckoutID: checkoutID, PaymentAttemptID: m.GetPaymentAttemptId(),
		AgentProfileUrl: m.GetAgentProfileUrl(), WebhookUrl: strings.TrimSpace(m.GetWebhookUrl()), BaseUrl: base,
		Currency: o.Currency, Total: total, Status: orderStatus(o), Version: 1,
	}
	params := ordersdb.InsertNumberedOrderParams{
		TenantID: tid, ID: id, CheckoutID: checkoutID, PaymentAttemptID: row.PaymentAttemptID,
		AgentProfileUrl: row.AgentProfileUrl, WebhookUrl: row.WebhookUrl, BaseUrl: base, Currency: row.Currency,
		Total: total, Status: row.Status, Snapshot: snap, Ap2Mandate: ap2Mandate,
		BuyerName: buyerName(det.GetBuyer()), BuyerEmail: det.GetBuyer().GetEmail(), PaymentMethod: det.GetPayment().GetMethod(), Details: detJSON,
	}
	if row.WebhookUrl == "" {
		// Nothing else to write: the numbered insert is the whole
		// transaction, one round trip.
		err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
			var err error
			row.Label, err = ordersdb.New(q).InsertNumberedOrder(ctx, params)
			return err
		})
	} else {
		err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
			q := ordersdb.New(tx)
			var err error
			if row.Label, err = q.InsertNumberedOrder(ctx, params); err != nil {
				return err
			}
			return s.queueWebhook(ctx, tx, q, tid, &row, 1)
		})
	}
	if isLostRace(err) {
		err = errLostRace
	}
	if errors.Is(err, errLostRace) {
		existing, err := s.byCheckout(ctx, tid, checkoutID)
		if err != nil {
			return nil, err
		}
		return createResponse(existing, false)
	}
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "order created", "tenant_id", tid, "order_id", id, "checkout_id", checkoutID, "label", row.Label)
	s.metrics.created.Inc()
	o.Label = row.Label // as the statement wrote it into the stored snapshot
	return orderResponse(id, o, true)
}

func (s *Service) byCheckout(ctx context.Context, tid uuid.UUID, checkoutID string) (ordersdb.OrdersOrder, error) {
	var row ordersdb.OrdersOrder
	err := pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		var err error
		row, err = ordersdb.New(q).GetOrderByCheckout(ctx, ordersdb.GetOrderByCheckoutParams{TenantID: tid, CheckoutID: checkoutID})
		return err
	})
	return row, err
}

// createResponse answers with a stored order.
func createResponse(row ordersdb.OrdersOrder, created bool) (*connect.Response[ordersv1.CreateOrderResponse], error) {
	o, err := decodeOrder(row.Snapshot)
	if err != nil {
		return nil, err
	}
	return orderResponse(row.ID, o, created)
}

func orderResponse(id string, o *bcp.Order, created bool) (*connect.Response[ordersv1.CreateOrderResponse], error) {
	b, err := render(o)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ordersv1.CreateOrderResponse{OrderJson: b, OrderId: id, PermalinkUrl: o.PermalinkURL, Created: created, Label: o.Label}), nil
}

// baseURL checks the merchant origin permalinks and the webhook BCP-Agent
// header are built from.
func baseURL(raw string) (string, error) {
	base := strings.TrimRight(strings.TrimSpace(raw), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", apperr.Invalid("base_url", "invalid_base_url", "base_url must be the merchant origin, e.g. https://loja.example.com.br")
	}
	return base, nil
}

// buildOrder turns the completed checkout into the order as first
// created: every line processing with nothing fulfilled, expectations
// from the selected fulfillment, no events, no adjustments, the
// checkout's currency and totals. It returns the grand total too.
func buildOrder(id, checkoutID, base string, c *ordersv1.PaidCheckout) (*bcp.Order, int64, error) {
	if !currencyRE.MatchString(c.GetCurrency()) {
		return nil, 0, apperr.Invalid("checkout.currency", "invalid_checkout", "the checkout has no valid currency")
	}
	if len(c.GetLines()) == 0 {
		return nil, 0, apperr.Invalid("checkout.lines", "invalid_checkout", "the checkout has no line items")
	}
	o := &bcp.Order{
		ID: id, CheckoutID: checkoutID, PermalinkURL: base + "/orders/" + id, Currency: c.GetCurrency(),
		LineItems: make([]bcp.OrderLineItem, 0, len(c.GetLines())), Adjustments: []bcp.Adjustment{},
		Fulfillment: bcp.OrderFulfillment{Expectations: []bcp.Expectation{}, Events: []bcp.FulfillmentEvent{}},
		Attribution: c.GetAttribution(),
	}
	qty := map[string]int64{}
	for i, l := range c.GetLines() {
		path := fmt.Sprintf("checkout.lines[%d]", i)
		item := bcp.Item{ID: l.GetItemId(), Title: l.GetTitle(), Price: l.GetPrice(), ImageURL: l.GetImageUrl()}
		quantity := l.GetQuantity()
		if l.GetId() == "" || item.ID == "" || item.Title == "" || item.Price < 0 || quantity < 1 {
			return nil, 0, apperr.Invalid(path, "invalid_checkout", "each line needs id, item id, title, a price and a quantity of at least 1")
		}
		if _, dup := qty[l.GetId()]; dup {
			return nil, 0, apperr.Invalid(path+".id", "invalid_checkout", "line id %q appears twice", l.GetId())
		}
		qty[l.GetId()] = quantity
		totals := wire.Totals(l.GetTotals())
		if len(totals) == 0 {
			if item.Price > 0 && quantity > math.MaxInt64/item.Price {
				return nil, 0, apperr.Invalid(path, "invalid_checkout", "line amount overflows")
			}
			amount := item.Price * quantity
			totals = []bcp.Total{{Type: bcp.TotalSubtotal, Amount: amount}, {Type: bcp.TotalTotal, Amount: amount}}
		}
		original := quantity
		line := bcp.OrderLineItem{
			ID: l.GetId(), Item: item, Totals: totals, ParentID: l.GetParentId(),
			Quantity: bcp.OrderQuantity{Original: &original, Total: quantity},
		}
		line.Status = bcp.LineStatus(line.Quantity)
		o.LineItems = append(o.LineItems, line)
	}
	subtotals, grand, total := 0, 0, int64(0)
	for _, t := range c.GetTotals() {
		switch t.GetType() {
		case bcp.TotalSubtotal:
			subtotals++
		case bcp.TotalTotal:
			grand++
			total = t.GetAmount()
		}
	}
	if subtotals != 1 || grand != 1 || total < 0 {
		return nil, 0, apperr.Invalid("checkout.totals", "invalid_checkout", "the checkout totals need exactly one subtotal and one non-negative total")
	}
	o.Totals = wire.Totals(c.GetTotals())
	o.Fulfillment.Expectations = expectations(c.GetMethods(), qty)
	return o, total, nil
}

// expectations tells the buyer what to expect from each fulfillment
// method the checkout settled: where (the selected destination: the
// shipping address, or the pickup location's address), how (the selected
// option) and which units.
func expectations(methods []*ordersv1.PaidMethod, qty map[string]int64) []bcp.Expectation {
	out := []bcp.Expectation{}
	for _, m := range methods {
		if !settled(m) {
			continue
		}
		groups := m.GetGroups()
		if len(groups) == 0 {
			groups = []*ordersv1.PaidGroup{{LineItemIds: m.GetLineItemIds()}}
		}
		for _, g := range groups {
			lines := []bcp.LineItemRef{}
			for _, lid := range g.GetLineItemIds() {
				if n := qty[lid]; n > 0 {
					lines = append(lines, bcp.LineItemRef{ID: lid, Quantity: n})
				}
			}
			if len(lines) == 0 {
				continue
			}
			out = append(out, bcp.Expectation{
				ID: fmt.Sprintf("exp_%d", len(out)+1), LineItems: lines, MethodType: m.GetType(),
				Destination: wire.PostalAddress(m.GetAddress()), Description: describe(m, g),
			})
		}
	}
	return out
}

// settled reports whether m is a method orders know (shipping or pickup)
// with its destination's address.
func settled(m *ordersv1.PaidMethod) bool {
	return (m.GetType() == bcp.MethodShipping || m.GetType() == bcp.MethodPickup) && m.GetAddress() != nil
}

// describe is the buyer-facing line of an expectation: the selected
// option's title and description, and for pickup the location's name.
func describe(m *ordersv1.PaidMethod, g *ordersv1.PaidGroup) string {
	var parts []string
	if opt := g.GetOption(); opt != nil {
		parts = append(parts, opt.GetTitle())
		if opt.GetDescription() != "" {
			parts = append(parts, opt.GetDescription())
		}
	}
	if m.GetType() == bcp.MethodPickup && m.GetLocationName() != "" {
		parts = append(parts, m.GetLocationName())
	}
	return strings.Join(parts, " — ")
}
