package orders

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/tenancy"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/orders/ordersdb"
)

// clientIDRE bounds the idempotency ids callers may choose (event and
// refund ids end up in URLs, logs and the payments service).
var clientIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// eventScope says which units of a line an event type may name.
type eventScope int

const (
	scopeUnfulfilled eventScope = iota // total - fulfilled
	scopeFulfilled                     // fulfilled
	scopeUndelivered                   // total - delivered so far
)

// eventTypes is the fulfillment event vocabulary and what each type may
// name (see AddFulfillmentEventRequest.type).
var eventTypes = map[string]eventScope{
	bcp.EventProcessing:       scopeUnfulfilled,
	bcp.EventShipped:          scopeUnfulfilled,
	bcp.EventCanceled:         scopeUnfulfilled,
	bcp.EventDelivered:        scopeUndelivered,
	bcp.EventInTransit:        scopeFulfilled,
	bcp.EventFailedAttempt:    scopeFulfilled,
	bcp.EventUndeliverable:    scopeFulfilled,
	bcp.EventReturnedToSender: scopeFulfilled,
}

// AddFulfillmentEvent appends a fulfillment event, updates the lines'
// quantities and statuses, and notifies the agent.
func (s *Service) AddFulfillmentEvent(ctx context.Context, r *connect.Request[ordersv1.AddFulfillmentEventRequest]) (*connect.Response[ordersv1.AddFulfillmentEventResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	m := r.Msg
	if _, ok := eventTypes[m.GetType()]; !ok {
		return nil, apperr.Invalid("type", "invalid_event_type", "type must be one of processing, shipped, in_transit, delivered, failed_attempt, canceled, undeliverable, returned_to_sender")
	}
	eventID := m.GetEventId()
	if eventID == "" {
		eventID = ids.New("evt")
	} else if !clientIDRE.MatchString(eventID) {
		return nil, apperr.Invalid("event_id", "invalid_event_id", "event_id must be 1-100 letters, digits, '_' or '-'")
	}
	if u := m.GetTrackingUrl(); u != "" && !absoluteHTTP(u) {
		return nil, apperr.Invalid("tracking_url", "invalid_tracking_url", "tracking_url must be an absolute http(s) URL")
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"tracking_number", m.GetTrackingNumber(), 200}, {"carrier", m.GetCarrier(), 200}, {"description", m.GetDescription(), 2000}, {"tracking_url", m.GetTrackingUrl(), 2048}} {
		if len(f.v) > f.max {
			return nil, apperr.Invalid(f.name, "too_long", "%s is longer than %d bytes", f.name, f.max)
		}
	}
	at := s.now().UTC().Truncate(time.Millisecond)
	o, err := s.mutate(ctx, m.GetOrderId(), func(tx pgx.Tx, q *ordersdb.Queries, row *ordersdb.OrdersOrder, o *bcp.Order) error {
		for _, e := range o.Fulfillment.Events {
			if e.ID == eventID {
				if e.Type != m.GetType() {
					return apperr.New(apperr.KindAlreadyExists, "event_id_conflict", "event %q already exists with type %s", eventID, e.Type)
				}
				return errNoChange // a retry of an event already added
			}
		}
		refs, err := applyEvent(o, m.GetType(), m.GetLineItems())
		if err != nil {
			return err
		}
		ev := bcp.FulfillmentEvent{
			ID: eventID, OccurredAt: at, Type: m.GetType(), LineItems: refs, TrackingNumber: m.GetTrackingNumber(),
			TrackingURL: m.GetTrackingUrl(), Carrier: m.GetCarrier(), Description: m.GetDescription(),
		}
		o.Fulfillment.Events = append(o.Fulfillment.Events, ev)
		lines, err := json.Marshal(refs)
		if err != nil {
			return err
		}
		return q.InsertEvent(ctx, ordersdb.InsertEventParams{
			TenantID: tid, ID: ev.ID, OrderID: row.ID, Type: ev.Type, LineItems: lines, TrackingNumber: ev.TrackingNumber,
			TrackingUrl: ev.TrackingURL, Carrier: ev.Carrier, Description: ev.Description, OccurredAt: at,
		})
	})
	if err != nil {
		return nil, err
	}
	b, err := render(o)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ordersv1.AddFulfillmentEventResponse{OrderJson: b, EventId: eventID}), nil
}

// applyEvent checks the event's units against what its type may name and
// applies it to the lines: shipped fulfils, delivered fulfils units that
// were never shipped, canceled takes unfulfilled units off the line. With
// no lines given it names every line's whole allowed quantity. It returns
// the event's line references.
func applyEvent(o *bcp.Order, typ string, req []*ordersv1.LineQuantity) ([]bcp.LineItemRef, error) {
	scope := eventTypes[typ]
	delivered := map[string]int64{}
	for _, e := range o.Fulfillment.Events {
		if e.Type == bcp.EventDelivered {
			for _, l := range e.LineItems {
				delivered[l.ID] += l.Quantity
			}
		}
	}
	index := map[string]int{}
	for i, l := range o.LineItems {
		index[l.ID] = i
	}
	allowed := func(l bcp.OrderLineItem) int64 {
		switch scope {
		case scopeFulfilled:
			return l.Quantity.Fulfilled
		case scopeUndelivered:
			return l.Quantity.Total - delivered[l.ID]
		default:
			return l.Quantity.Total - l.Quantity.Fulfilled
		}
	}
	var refs []bcp.LineItemRef
	if len(req) == 0 {
		for _, l := range o.LineItems {
			if n := allowed(l); n > 0 {
				refs = append(refs, bcp.LineItemRef{ID: l.ID, Quantity: n})
			}
		}
		if len(refs) == 0 {
			return nil, apperr.New(apperr.KindFailedPrecondition, "nothing_to_fulfill", "no line has units a %s event can name", typ)
		}
	}
	seen := map[string]bool{}
	for i, lq := range req {
		path := fmt.Sprintf("line_items[%d]", i)
		li, ok := index[lq.GetId()]
		if !ok {
			return nil, apperr.Invalid(path+".id", "unknown_line_item", "the order has no line %q", lq.GetId())
		}
		if seen[lq.GetId()] {
			return nil, apperr.Invalid(path+".id", "duplicate_line_item", "line %q is named twice", lq.GetId())
		}
		seen[lq.GetId()] = true
		if lq.GetQuantity() < 1 {
			return nil, apperr.Invalid(path+".quantity", "invalid_quantity", "quantity must be at least 1")
		}
		if n := allowed(o.LineItems[li]); lq.GetQuantity() > n {
			return nil, apperr.Invalid(path+".quantity", "quantity_exceeds_remaining", "line %q has %d units a %s event can name, not %d", lq.GetId(), n, typ, lq.GetQuantity())
		}
		refs = append(refs, bcp.LineItemRef{ID: lq.GetId(), Quantity: lq.GetQuantity()})
	}
	for _, ref := range refs {
		l := &o.LineItems[index[ref.ID]]
		switch typ {
		case bcp.EventShipped:
			l.Quantity.Fulfilled += ref.Quantity
		case bcp.EventDelivered:
			l.Quantity.Fulfilled = max(l.Quantity.Fulfilled, delivered[ref.ID]+ref.Quantity)
		case bcp.EventCanceled:
			l.Quantity.Total -= ref.Quantity
		}
		l.Status = bcp.LineStatus(l.Quantity)
	}
	return refs, nil
}

func absoluteHTTP(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil
}
