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
	c := &bcp.Checkout{}
	if err := bcp.DecodeCheckout(m.GetCheckoutJson(), c); err != nil {
		return nil, apperr.Invalid("checkout_json", "invalid_checkout", "checkout_json is not a BCP checkout: %v", err)
	}
	if c.ID != "" && c.ID != checkoutID {
		return nil, apperr.Invalid("checkout_json.id", "checkout_mismatch", "checkout_json is checkout %q, not %q", c.ID, checkoutID)
	}
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
	detJSON, err := detailsJSON.Marshal(det)
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
func buildOrder(id, checkoutID, base string, c *bcp.Checkout) (*bcp.Order, int64, error) {
	if !currencyRE.MatchString(c.Currency) {
		return nil, 0, apperr.Invalid("checkout_json.currency", "invalid_checkout", "the checkout has no valid currency")
	}
	if len(c.LineItems) == 0 {
		return nil, 0, apperr.Invalid("checkout_json.line_items", "invalid_checkout", "the checkout has no line items")
	}
	o := &bcp.Order{
		ID: id, CheckoutID: checkoutID, PermalinkURL: base + "/orders/" + id, Currency: c.Currency,
		LineItems: make([]bcp.OrderLineItem, 0, len(c.LineItems)), Adjustments: []bcp.Adjustment{},
		Fulfillment: bcp.OrderFulfillment{Expectations: []bcp.Expectation{}, Events: []bcp.FulfillmentEvent{}},
		Attribution: c.Attribution,
	}
	qty := map[string]int64{}
	for i, l := range c.LineItems {
		path := fmt.Sprintf("checkout_json.line_items[%d]", i)
		if l.ID == "" || l.Item.ID == "" || l.Item.Title == "" || l.Item.Price < 0 || l.Quantity < 1 {
			return nil, 0, apperr.Invalid(path, "invalid_checkout", "each line needs id, item id, title, a price and a quantity of at least 1")
		}
		if _, dup := qty[l.ID]; dup {
			return nil, 0, apperr.Invalid(path+".id", "invalid_checkout", "line id %q appears twice", l.ID)
		}
		qty[l.ID] = l.Quantity
		totals := l.Totals
		if len(totals) == 0 {
			if l.Item.Price > 0 && l.Quantity > math.MaxInt64/l.Item.Price {
				return nil, 0, apperr.Invalid(path, "invalid_checkout", "line amount overflows")
			}
			amount := l.Item.Price * l.Quantity
			totals = []bcp.Total{{Type: bcp.TotalSubtotal, Amount: amount}, {Type: bcp.TotalTotal, Amount: amount}}
		}
		original := l.Quantity
		line := bcp.OrderLineItem{
			ID: l.ID, Item: l.Item, Totals: totals, ParentID: l.ParentID,
			Quantity: bcp.OrderQuantity{Original: &original, Total: l.Quantity},
		}
		line.Status = bcp.LineStatus(line.Quantity)
		o.LineItems = append(o.LineItems, line)
	}
	subtotals, grand, total := 0, 0, int64(0)
	for _, t := range c.Totals {
		switch t.Type {
		case bcp.TotalSubtotal:
			subtotals++
		case bcp.TotalTotal:
			grand++
			total = t.Amount
		}
	}
	if subtotals != 1 || grand != 1 || total < 0 {
		return nil, 0, apperr.Invalid("checkout_json.totals", "invalid_checkout", "the checkout totals need exactly one subtotal and one non-negative total")
	}
	o.Totals = c.Totals
	o.Fulfillment.Expectations = expectations(c.Fulfillment, qty)
	return o, total, nil
}

// expectations tells the buyer what to expect from each fulfillment
// method the checkout settled: where (the selected destination: the
// shipping address, or the pickup location's address), how (the selected
// option) and which units.
func expectations(f *bcp.Fulfillment, qty map[string]int64) []bcp.Expectation {
	out := []bcp.Expectation{}
	if f == nil {
		return out
	}
	for _, m := range f.Methods {
		if m.Type != bcp.MethodShipping && m.Type != bcp.MethodPickup {
			continue
		}
		dest, ok := selectedDestination(m)
		if !ok {
			continue
		}
		addr := dest.PostalAddress
		if dest.Address != nil {
			addr = *dest.Address
		}
		groups := m.Groups
		if len(groups) == 0 {
			groups = []bcp.FulfillmentGroup{{LineItemIDs: m.LineItemIDs}}
		}
		for _, g := range groups {
			lines := []bcp.LineItemRef{}
			for _, lid := range g.LineItemIDs {
				if n := qty[lid]; n > 0 {
					lines = append(lines, bcp.LineItemRef{ID: lid, Quantity: n})
				}
			}
			if len(lines) == 0 {
				continue
			}
			out = append(out, bcp.Expectation{
				ID: fmt.Sprintf("exp_%d", len(out)+1), LineItems: lines, MethodType: m.Type,
				Destination: addr, Description: describe(m.Type, dest, g),
			})
		}
	}
	return out
}

func selectedDestination(m bcp.FulfillmentMethod) (bcp.Destination, bool) {
	if m.SelectedDestinationID != nil {
		for _, d := range m.Destinations {
			if d.ID == *m.SelectedDestinationID {
				return d, true
			}
		}
		return bcp.Destination{}, false
	}
	if len(m.Destinations) == 1 {
		return m.Destinations[0], true
	}
	return bcp.Destination{}, false
}

// describe is the buyer-facing line of an expectation: the selected
// option's title and description, and for pickup the location's name.
func describe(method string, d bcp.Destination, g bcp.FulfillmentGroup) string {
	var parts []string
	if g.SelectedOptionID != nil {
		for _, opt := range g.Options {
			if opt.ID == *g.SelectedOptionID {
				parts = append(parts, opt.Title)
				if opt.Description != "" {
					parts = append(parts, opt.Description)
				}
			}
		}
	}
	if method == bcp.MethodPickup && d.Name != "" {
		parts = append(parts, d.Name)
	}
	return strings.Join(parts, " — ")
}
