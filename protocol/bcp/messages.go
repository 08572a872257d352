package bcp

// Message types.
const (
	MessageError   = "error"
	MessageWarning = "warning"
	MessageInfo    = "info"
)

// Error severities.
const (
	SeverityRecoverable         = "recoverable"
	SeverityRequiresBuyerInput  = "requires_buyer_input"
	SeverityRequiresBuyerReview = "requires_buyer_review"
	SeverityUnrecoverable       = "unrecoverable"
)

// Message codes the platform emits. The vocabularies are open; these are
// the ones we use, so producers and tests agree on spelling.
const (
	CodeOutOfStock                  = "out_of_stock"
	CodeItemUnavailable             = "item_unavailable"
	CodeQuantityAdjusted            = "quantity_adjusted"
	CodeAddressUndeliverable        = "address_undeliverable"
	CodeMissing                     = "missing"
	CodeInvalidAddress              = "invalid_address"
	CodeInvalidSelection            = "invalid_selection"
	CodeNotFound                    = "not_found"
	CodePaymentFailed               = "payment_failed"
	CodeFreeShipping                = "free_shipping"
	CodeFulfillmentChanged          = "fulfillment_changed"
	CodeDiscountCodeExpired         = "discount_code_expired"
	CodeDiscountCodeInvalid         = "discount_code_invalid"
	CodeDiscountCodeAlreadyApplied  = "discount_code_already_applied"
	CodeDiscountCodeCombination     = "discount_code_combination_disallowed"
	CodeDiscountCodeUserIneligible  = "discount_code_user_ineligible"
	CodeDiscountCodeUserNotLoggedIn = "discount_code_user_not_logged_in"
	CodeMissingConsentData          = "missing_consent_data"
	CodeCapabilitiesIncompatible    = "capabilities_incompatible"
	CodeCheckoutNotModifiable       = "checkout_not_modifiable"
	CodeCurrencyUnsupported         = "currency_unsupported"
)

// Message is an error, warning or info message. Severity is set on errors
// only; Path is an RFC 9535 JSONPath into the response.
type Message struct {
	Type         string `json:"type"`
	Code         string `json:"code,omitempty"`
	Path         string `json:"path,omitempty"`
	ContentType  string `json:"content_type,omitempty"`
	Content      string `json:"content"`
	Severity     string `json:"severity,omitempty"`
	Presentation string `json:"presentation,omitempty"`
}

// Error returns an error message.
func Error(code, severity, path, content string) Message {
	return Message{Type: MessageError, Code: code, Severity: severity, Path: path, Content: content}
}

// Warning returns a warning message.
func Warning(code, path, content string) Message {
	return Message{Type: MessageWarning, Code: code, Path: path, Content: content}
}

// Info returns an info message.
func Info(code, path, content string) Message {
	return Message{Type: MessageInfo, Code: code, Path: path, Content: content}
}
