package bcp

import "time"

// Order is the order capability's object (shopping/order.json): what was
// bought, how it is being fulfilled and what changed after purchase. It is
// a full current-state snapshot, served by get_order and posted whole in
// every order webhook. UCP is set only on the wire (webhook bodies and
// tool results), never in storage.
type Order struct {
	UCP          *UCP              `json:"ucp,omitempty"`
	ID           string            `json:"id"`
	Label        string            `json:"label,omitempty"`
	CheckoutID   string            `json:"checkout_id"`
	PermalinkURL string            `json:"permalink_url"`
	LineItems    []OrderLineItem   `json:"line_items"`
	Fulfillment  OrderFulfillment  `json:"fulfillment"`
	Adjustments  []Adjustment      `json:"adjustments"`
	Currency     string            `json:"currency"`
	Totals       []Total           `json:"totals"`
	Messages     []Message         `json:"messages,omitempty"`
	Attribution  map[string]string `json:"attribution,omitempty"`
}

// Order line statuses, derived from the quantities (see LineStatus).
const (
	LineProcessing = "processing"
	LinePartial    = "partial"
	LineFulfilled  = "fulfilled"
	LineRemoved    = "removed"
)

// OrderLineItem is one line of an order. Lines are never dropped: a line
// whose whole quantity was canceled stays with status removed.
type OrderLineItem struct {
	ID       string        `json:"id"`
	Item     Item          `json:"item"`
	Quantity OrderQuantity `json:"quantity"`
	Totals   []Total       `json:"totals"`
	Status   string        `json:"status"`
	ParentID string        `json:"parent_id,omitempty"`
}

// OrderQuantity tracks a line's units: Original as checked out, Total
// still active after post-order changes, Fulfilled so far.
type OrderQuantity struct {
	Original  *int64 `json:"original,omitempty"`
	Total     int64  `json:"total"`
	Fulfilled int64  `json:"fulfilled"`
}

// LineStatus derives a line's status from its quantities, as
// order_line_item.json defines it.
func LineStatus(q OrderQuantity) string {
	switch {
	case q.Total == 0:
		return LineRemoved
	case q.Fulfilled >= q.Total:
		return LineFulfilled
	case q.Fulfilled > 0:
		return LinePartial
	default:
		return LineProcessing
	}
}

// OrderFulfillment is what the buyer was told to expect and what actually
// happened (an append-only event log).
type OrderFulfillment struct {
	Expectations []Expectation      `json:"expectations"`
	Events       []FulfillmentEvent `json:"events"`
}

// Fulfillment method types of expectations (shipping and pickup come
// from the checkout's fulfillment methods).
const MethodDigital = "digital"

// Expectation is a buyer-facing group of units and how/where they arrive.
type Expectation struct {
	ID            string        `json:"id"`
	LineItems     []LineItemRef `json:"line_items"`
	MethodType    string        `json:"method_type"`
	Destination   PostalAddress `json:"destination"`
	Description   string        `json:"description,omitempty"`
	FulfillableOn string        `json:"fulfillable_on,omitempty"`
}

// LineItemRef names units of a line. In fulfillment events and
// expectations Quantity is at least 1; in adjustments it is signed
// (negative for units taken back).
type LineItemRef struct {
	ID       string `json:"id"`
	Quantity int64  `json:"quantity"`
}

// Fulfillment event types (the UCP vocabulary).
const (
	EventProcessing       = "processing"
	EventShipped          = "shipped"
	EventInTransit        = "in_transit"
	EventDelivered        = "delivered"
	EventFailedAttempt    = "failed_attempt"
	EventCanceled         = "canceled"
	EventUndeliverable    = "undeliverable"
	EventReturnedToSender = "returned_to_sender"
)

// FulfillmentEvent is one entry of the append-only fulfillment log.
type FulfillmentEvent struct {
	ID             string        `json:"id"`
	OccurredAt     time.Time     `json:"occurred_at"`
	Type           string        `json:"type"`
	LineItems      []LineItemRef `json:"line_items"`
	TrackingNumber string        `json:"tracking_number,omitempty"`
	TrackingURL    string        `json:"tracking_url,omitempty"`
	Carrier        string        `json:"carrier,omitempty"`
	Description    string        `json:"description,omitempty"`
}

// Adjustment types and statuses.
const (
	AdjustmentRefund = "refund"

	AdjustmentPending   = "pending"
	AdjustmentCompleted = "completed"
	AdjustmentFailed    = "failed"
)

// Adjustment is a post-order change, typically money moving (a refund).
// Totals are signed: negative for money returned to the buyer.
type Adjustment struct {
	ID          string        `json:"id"`
	Type        string        `json:"type"`
	OccurredAt  time.Time     `json:"occurred_at"`
	Status      string        `json:"status"`
	LineItems   []LineItemRef `json:"line_items,omitempty"`
	Totals      []Total       `json:"totals,omitempty"`
	Description string        `json:"description,omitempty"`
}
