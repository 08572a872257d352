// Package bcp holds the BCP wire types (UCP release 2026-04-08 shapes with
// BCP names) that the services exchange and the edge serves: checkout,
// line items, totals, messages, fulfillment, discounts, buyer consent,
// payment and the error response. Amounts are int64 minor units
// (centavos). Field order follows the schemas.
package bcp

import (
	"encoding/json"
	"time"
)

// Checkout statuses.
const (
	StatusIncomplete         = "incomplete"
	StatusRequiresEscalation = "requires_escalation"
	StatusReadyForComplete   = "ready_for_complete"
	StatusCompleteInProgress = "complete_in_progress"
	StatusCompleted          = "completed"
	StatusCanceled           = "canceled"
)

// Statuses are every checkout status in lifecycle order, the order pages,
// filters and counts list them in. The one list: code elsewhere names
// statuses through the constants above and lists them through this.
func Statuses() []string {
	return []string{StatusIncomplete, StatusRequiresEscalation, StatusReadyForComplete,
		StatusCompleteInProgress, StatusCompleted, StatusCanceled}
}

// OpenStatuses are the statuses an agent can still change with
// update_checkout: before completion starts.
func OpenStatuses() []string {
	return []string{StatusIncomplete, StatusRequiresEscalation, StatusReadyForComplete}
}

// Open reports whether status is one of OpenStatuses.
func Open(status string) bool {
	return status == StatusIncomplete || status == StatusRequiresEscalation || status == StatusReadyForComplete
}

// Terminal reports whether a checkout in this status accepts no further
// change (completed or canceled).
func Terminal(status string) bool {
	return status == StatusCompleted || status == StatusCanceled
}

// Checkout is a checkout session. In requests only the writable members
// are present; responses carry everything.
type Checkout struct {
	UCP         *UCP                       `json:"ucp,omitempty"`
	ID          string                     `json:"id,omitempty"`
	LineItems   []LineItem                 `json:"line_items"`
	Buyer       *Buyer                     `json:"buyer,omitempty"`
	Context     *Context                   `json:"context,omitempty"`
	Signals     map[string]json.RawMessage `json:"signals,omitempty"`
	Attribution map[string]string          `json:"attribution,omitempty"`
	Status      string                     `json:"status,omitempty"`
	Currency    string                     `json:"currency,omitempty"`
	Totals      []Total                    `json:"totals"`
	Messages    []Message                  `json:"messages,omitempty"`
	Links       []Link                     `json:"links"`
	ExpiresAt   *time.Time                 `json:"expires_at,omitempty"`
	ContinueURL string                     `json:"continue_url,omitempty"`
	Payment     *Payment                   `json:"payment,omitempty"`
	Order       *OrderRef                  `json:"order,omitempty"`
	// Extensions.
	Fulfillment *Fulfillment    `json:"fulfillment,omitempty"`
	Discounts   *Discounts      `json:"discounts,omitempty"`
	AP2         json.RawMessage `json:"ap2,omitempty"`
}

// UCP is the reserved "ucp" envelope of responses.
type UCP struct {
	Version         string                       `json:"version"`
	Status          string                       `json:"status,omitempty"` // "error" on error responses
	Capabilities    map[string][]CapabilityRef   `json:"capabilities,omitempty"`
	PaymentHandlers map[string][]json.RawMessage `json:"payment_handlers,omitempty"`
	Services        map[string][]json.RawMessage `json:"services,omitempty"`
}

// CapabilityRef names an active capability version in a response.
type CapabilityRef struct {
	Version string `json:"version"`
}

// LineItem is one line of a checkout.
type LineItem struct {
	ID       string  `json:"id,omitempty"`
	Item     Item    `json:"item"`
	Quantity int64   `json:"quantity"`
	Totals   []Total `json:"totals,omitempty"`
	ParentID string  `json:"parent_id,omitempty"`
}

// Item is the product variant a line buys; agents send only its id.
type Item struct {
	ID       string `json:"id"`
	Title    string `json:"title,omitempty"`
	Price    int64  `json:"price"`
	ImageURL string `json:"image_url,omitempty"`
}

// Total types.
const (
	TotalSubtotal      = "subtotal"
	TotalItemsDiscount = "items_discount"
	TotalDiscount      = "discount"
	TotalFulfillment   = "fulfillment"
	TotalTax           = "tax"
	TotalFee           = "fee"
	TotalTotal         = "total"
)

// Total is one cost entry.
type Total struct {
	Type        string      `json:"type"`
	DisplayText string      `json:"display_text,omitempty"`
	Amount      int64       `json:"amount"`
	Lines       []TotalLine `json:"lines,omitempty"`
}

// TotalLine itemises a total.
type TotalLine struct {
	DisplayText string `json:"display_text"`
	Amount      int64  `json:"amount"`
}

// Buyer is who buys. Consent is the buyer_consent extension.
type Buyer struct {
	FirstName   string   `json:"first_name,omitempty"`
	LastName    string   `json:"last_name,omitempty"`
	Email       string   `json:"email,omitempty"`
	PhoneNumber string   `json:"phone_number,omitempty"`
	Consent     *Consent `json:"consent,omitempty"`
}

// Consent is the buyer_consent extension's consent object (2026-04-08
// shape: one boolean per purpose). Nil members were not stated.
type Consent struct {
	Analytics   *bool `json:"analytics,omitempty"`
	Preferences *bool `json:"preferences,omitempty"`
	Marketing   *bool `json:"marketing,omitempty"`
	SaleOfData  *bool `json:"sale_of_data,omitempty"`
}

// Context holds provisional buyer hints.
type Context struct {
	AddressCountry string   `json:"address_country,omitempty"`
	AddressRegion  string   `json:"address_region,omitempty"`
	PostalCode     string   `json:"postal_code,omitempty"`
	Intent         string   `json:"intent,omitempty"`
	Language       string   `json:"language,omitempty"`
	Currency       string   `json:"currency,omitempty"`
	Eligibility    []string `json:"eligibility,omitempty"`
}

// Link is a legal or policy link.
type Link struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// OrderRef is the partial order on a completed checkout.
type OrderRef struct {
	ID           string `json:"id"`
	Label        string `json:"label,omitempty"`
	PermalinkURL string `json:"permalink_url"`
}

// Payment carries the instruments of a completion (and, in responses,
// their non-secret display data).
type Payment struct {
	Instruments []PaymentInstrument `json:"instruments,omitempty"`
}

// PaymentInstrument is one instrument; Credential is never echoed.
type PaymentInstrument struct {
	ID             string          `json:"id"`
	HandlerID      string          `json:"handler_id"`
	Type           string          `json:"type"`
	BillingAddress *PostalAddress  `json:"billing_address,omitempty"`
	Credential     json.RawMessage `json:"credential,omitempty"`
	Display        json.RawMessage `json:"display,omitempty"`
	Selected       *bool           `json:"selected,omitempty"`
}

// PixAttemptID reads the payment attempt a Pix instrument's display names
// (display.pix.attempt_id, as the platform's Pix handler writes it); "" if
// the display has none.
func PixAttemptID(display json.RawMessage) string {
	var d struct {
		Pix struct {
			AttemptID string `json:"attempt_id"`
		} `json:"pix"`
	}
	_ = json.Unmarshal(display, &d)
	return d.Pix.AttemptID
}

// PostalAddress is a postal address.
type PostalAddress struct {
	ExtendedAddress string `json:"extended_address,omitempty"`
	StreetAddress   string `json:"street_address,omitempty"`
	AddressLocality string `json:"address_locality,omitempty"`
	AddressRegion   string `json:"address_region,omitempty"`
	AddressCountry  string `json:"address_country,omitempty"`
	PostalCode      string `json:"postal_code,omitempty"`
	FirstName       string `json:"first_name,omitempty"`
	LastName        string `json:"last_name,omitempty"`
	PhoneNumber     string `json:"phone_number,omitempty"`
}

// ErrorResponse is the business outcome when no resource exists.
type ErrorResponse struct {
	UCP         *UCP      `json:"ucp,omitempty"`
	Messages    []Message `json:"messages"`
	ContinueURL string    `json:"continue_url,omitempty"`
}
