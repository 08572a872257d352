package bcp

// Fulfillment is the fulfillment extension's object.
type Fulfillment struct {
	Methods          []FulfillmentMethod `json:"methods,omitempty"`
	AvailableMethods []AvailableMethod   `json:"available_methods,omitempty"`
}

// Fulfillment method types (2026-04-08: shipping or pickup).
const (
	MethodShipping = "shipping"
	MethodPickup   = "pickup"
)

// FulfillmentMethod groups line items fulfilled one way. In responses,
// ID, Type and LineItemIDs are always set. SelectedDestinationID is a
// pointer because the schema allows null.
type FulfillmentMethod struct {
	ID                    string             `json:"id,omitempty"`
	Type                  string             `json:"type,omitempty"`
	LineItemIDs           []string           `json:"line_item_ids,omitempty"`
	Destinations          []Destination      `json:"destinations,omitempty"`
	SelectedDestinationID *string            `json:"selected_destination_id,omitempty"`
	Groups                []FulfillmentGroup `json:"groups,omitempty"`
}

// Destination is a shipping address (postal fields) or a pickup location
// (Name and Address). ID is required in responses.
type Destination struct {
	ID string `json:"id,omitempty"`
	PostalAddress
	Name    string         `json:"name,omitempty"`
	Address *PostalAddress `json:"address,omitempty"`
}

// FulfillmentGroup is a package of line items with its options.
type FulfillmentGroup struct {
	ID               string              `json:"id,omitempty"`
	LineItemIDs      []string            `json:"line_item_ids,omitempty"`
	Options          []FulfillmentOption `json:"options,omitempty"`
	SelectedOptionID *string             `json:"selected_option_id,omitempty"`
}

// FulfillmentOption is one way to fulfil a group, with its cost.
type FulfillmentOption struct {
	ID                      string  `json:"id"`
	Title                   string  `json:"title"`
	Description             string  `json:"description,omitempty"`
	Carrier                 string  `json:"carrier,omitempty"`
	EarliestFulfillmentTime string  `json:"earliest_fulfillment_time,omitempty"`
	LatestFulfillmentTime   string  `json:"latest_fulfillment_time,omitempty"`
	Totals                  []Total `json:"totals"`
}

// AvailableMethod is an inventory availability hint.
type AvailableMethod struct {
	Type          string   `json:"type"`
	LineItemIDs   []string `json:"line_item_ids"`
	FulfillableOn string   `json:"fulfillable_on,omitempty"`
	Description   string   `json:"description,omitempty"`
}

// Discounts is the discount extension's object. Codes are what the agent
// submitted (echoed, rejected ones too); Applied is what the business
// applied.
type Discounts struct {
	Codes   []string          `json:"codes,omitempty"`
	Applied []AppliedDiscount `json:"applied,omitempty"`
}

// Discount allocation methods.
const (
	AllocationEach   = "each"
	AllocationAcross = "across"
)

// AppliedDiscount is one applied discount; Amount is positive and equals
// the sum of its allocations.
type AppliedDiscount struct {
	Code        string       `json:"code,omitempty"`
	Title       string       `json:"title"`
	Amount      int64        `json:"amount"`
	Automatic   bool         `json:"automatic,omitempty"`
	Method      string       `json:"method,omitempty"`
	Priority    int          `json:"priority,omitempty"`
	Provisional bool         `json:"provisional,omitempty"`
	Eligibility string       `json:"eligibility,omitempty"`
	Allocations []Allocation `json:"allocations,omitempty"`
}

// Allocation is the part of a discount assigned to a JSONPath target
// (e.g. "$.line_items[0]").
type Allocation struct {
	Path   string `json:"path"`
	Amount int64  `json:"amount"`
}
