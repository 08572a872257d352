package admin

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// orderData is the order page: the order, what the merchant ships from
// (buyer, delivery, payment) and its two forms as typed.
type orderData struct {
	Order       *bcp.Order
	Details     orderDetails
	Agent       string        // the agent's name (agentNamer)
	Mandate     *orderMandate // nil: not an AP2 purchase
	Total       int64
	Refunded    int64
	Refund      refundForm
	Fulfillment fulfillmentForm
	EventTypes  []string
}

type refundForm struct {
	Amount string
	Reason string
	Key    string // idempotency: one refund per rendered form
	Errors map[string]string
}

type fulfillmentForm struct {
	Type           string
	TrackingNumber string
	TrackingURL    string
	Carrier        string
	Description    string
	Key            string
	Errors         map[string]string
}

var eventTypes = []string{"processing", "shipped", "in_transit", "delivered", "failed_attempt", "canceled", "undeliverable", "returned_to_sender"}

// orderMandate is what the order page shows of the AP2 checkout mandate
// the order was paid with: its digest and claims (the mandate itself is
// not kept).
type orderMandate struct {
	Digest      string    `json:"digest"`
	IssuerKID   string    `json:"issuer_kid"`
	Issuer      string    `json:"iss"`
	Expires     int64     `json:"exp"`
	KeyBoundAt  int64     `json:"kb_iat"`
	Audience    string    `json:"aud"`
	MerchantKID string    `json:"merchant_kid"`
	Total       int64     `json:"total"`
	VerifiedAt  time.Time `json:"verified_at"`
	// AP2's layout: the mandate type and checkout_hash; the payment
	// mandate, when the instrument carried one.
	VCT          string `json:"vct"`
	CheckoutHash string `json:"checkout_hash"`
	Payment      *struct {
		Digest         string `json:"digest"`
		VCT            string `json:"vct"`
		TransactionID  string `json:"transaction_id"`
		Amount         int64  `json:"amount"`
		InstrumentID   string `json:"instrument_id"`
		InstrumentType string `json:"instrument_type"`
	} `json:"payment_mandate"`
}

func (m *orderMandate) ExpiresAt() time.Time    { return time.Unix(m.Expires, 0) }
func (m *orderMandate) KeyBoundTime() time.Time { return time.Unix(m.KeyBoundAt, 0) }

// loadedOrder is one GetOrder answer as the pages use it.
type loadedOrder struct {
	order   *bcp.Order
	mandate *orderMandate
	details orderDetails
	agent   string // profile URL
}

func (a *Admin) loadOrder(r *http.Request) (*loadedOrder, error) {
	resp, err := a.opts.Orders.GetOrder(r.Context(), connect.NewRequest(&ordersv1.GetOrderRequest{Id: r.PathValue("id")}))
	if err != nil {
		return nil, err
	}
	o := &bcp.Order{}
	if err := json.Unmarshal(resp.Msg.GetOrderJson(), o); err != nil {
		return nil, err
	}
	l := &loadedOrder{order: o, agent: resp.Msg.GetAgentProfileUrl()}
	if raw := resp.Msg.GetAp2MandateJson(); len(raw) > 0 {
		l.mandate = &orderMandate{}
		if err := json.Unmarshal(raw, l.mandate); err != nil {
			return nil, err
		}
	}
	l.details = newOrderDetails(o, resp.Msg.GetDetails())
	return l, nil
}

// orderTitle names an order everywhere the merchant sees it: "Pedido #1007"
// (the id for an order without a number).
func orderTitle(o *bcp.Order) string {
	if o.Label != "" {
		return "Pedido " + o.Label
	}
	return "Pedido " + o.ID
}

func newOrderData(l *loadedOrder) orderData {
	o := l.order
	d := orderData{Order: o, Mandate: l.mandate, Details: l.details, EventTypes: eventTypes,
		Refund:      refundForm{Key: ids.New("rfd")},
		Fulfillment: fulfillmentForm{Type: "shipped", Key: ids.New("evt")}}
	for _, t := range o.Totals {
		if t.Type == "total" {
			d.Total = t.Amount
		}
	}
	for _, adj := range o.Adjustments {
		if adj.Type == bcp.AdjustmentRefund && adj.Status != "failed" {
			for _, t := range adj.Totals {
				if t.Type == "total" {
					d.Refunded += -t.Amount * sign(t.Amount)
				}
			}
		}
	}
	return d
}

func sign(v int64) int64 {
	if v < 0 {
		return -1
	}
	return 1
}

func (a *Admin) order(rw http.ResponseWriter, r *http.Request) {
	l, err := a.loadOrder(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d := newOrderData(l)
	d.Agent = a.agentNames(r).Name(l.agent)
	a.render(rw, r, http.StatusOK, "order", a.newPage(r, orderTitle(l.order), "pedidos", d))
}

func validKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// refund asks the orders service for a refund of the typed amount (empty:
// the whole remaining amount). The form's key makes a double submit one
// refund.
func (a *Admin) refund(rw http.ResponseWriter, r *http.Request) {
	l, err := a.loadOrder(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	o, d := l.order, newOrderData(l)
	f := refundForm{Amount: strings.TrimSpace(r.PostFormValue("amount")), Reason: strings.TrimSpace(r.PostFormValue("reason")), Key: r.PostFormValue("key"), Errors: map[string]string{}}
	if !validKey(f.Key) {
		f.Key = d.Refund.Key
	}
	var amount int64
	if f.Amount != "" {
		var msg string
		amount, msg = ParseBRL(f.Amount)
		if msg == "" && amount == 0 {
			msg = "O valor do reembolso deve ser maior que zero."
		}
		if msg != "" {
			f.Errors["amount"] = strings.Replace(msg, "preço", "valor", 1)
		}
	}
	if len(f.Reason) > 500 {
		f.Errors["reason"] = "Motivo com no máximo 500 caracteres."
	}
	if len(f.Errors) == 0 {
		resp, err := a.opts.Orders.RefundOrder(r.Context(), connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: o.ID, Amount: amount, Reason: f.Reason, RefundId: f.Key}))
		if err == nil {
			if resp.Msg.GetStatus() == "failed" {
				f.Errors["amount"] = "O reembolso falhou: " + resp.Msg.GetFailureMessage()
			} else {
				http.Redirect(rw, r, "/admin/pedidos/"+url.PathEscape(o.ID)+"?ok=reembolso", http.StatusSeeOther)
				return
			}
		} else {
			e := appErr(err)
			if e.Kind != apperr.KindInvalidArgument && e.Kind != apperr.KindFailedPrecondition && e.Kind != apperr.KindAlreadyExists {
				a.serviceError(rw, r, err)
				return
			}
			f.Errors["amount"] = refundMessage(e)
		}
	}
	d.Refund = f
	d.Agent = a.agentNames(r).Name(l.agent)
	a.render(rw, r, http.StatusUnprocessableEntity, "order", a.newPage(r, orderTitle(o), "pedidos", d))
}

func refundMessage(e *apperr.Error) string {
	switch {
	case strings.Contains(e.Code, "exceed") || strings.Contains(e.Code, "too_large") || strings.Contains(e.Code, "amount"):
		return "Valor acima do que ainda pode ser reembolsado."
	case strings.Contains(e.Code, "nothing") || strings.Contains(e.Code, "refunded"):
		return "Não há valor a reembolsar neste pedido."
	}
	return "Reembolso recusado: " + e.Message
}

func (a *Admin) fulfillment(rw http.ResponseWriter, r *http.Request) {
	l, err := a.loadOrder(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	o, d := l.order, newOrderData(l)
	f := fulfillmentForm{Type: r.PostFormValue("type"), TrackingNumber: strings.TrimSpace(r.PostFormValue("tracking_number")),
		TrackingURL: strings.TrimSpace(r.PostFormValue("tracking_url")), Carrier: strings.TrimSpace(r.PostFormValue("carrier")),
		Description: strings.TrimSpace(r.PostFormValue("description")), Key: r.PostFormValue("key"), Errors: map[string]string{}}
	if !validKey(f.Key) {
		f.Key = d.Fulfillment.Key
	}
	known := false
	for _, t := range eventTypes {
		known = known || t == f.Type
	}
	if !known {
		f.Errors["type"] = "Escolha o tipo de evento."
	}
	if f.TrackingURL != "" {
		if u, err := url.Parse(f.TrackingURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			f.Errors["tracking_url"] = "Use um endereço http(s) completo."
		}
	}
	if len(f.Errors) == 0 {
		_, err := a.opts.Orders.AddFulfillmentEvent(r.Context(), connect.NewRequest(&ordersv1.AddFulfillmentEventRequest{
			OrderId: o.ID, Type: f.Type, TrackingNumber: f.TrackingNumber, TrackingUrl: f.TrackingURL, Carrier: f.Carrier, Description: f.Description, EventId: f.Key,
		}))
		if err == nil {
			http.Redirect(rw, r, "/admin/pedidos/"+url.PathEscape(o.ID)+"?ok=fulfilment", http.StatusSeeOther)
			return
		}
		e := appErr(err)
		if e.Kind != apperr.KindInvalidArgument && e.Kind != apperr.KindFailedPrecondition {
			a.serviceError(rw, r, err)
			return
		}
		field := "type"
		switch {
		case strings.Contains(e.Field, "tracking_url"):
			field = "tracking_url"
		case strings.Contains(e.Field, "tracking_number"):
			field = "tracking_number"
		case strings.Contains(e.Field, "carrier"):
			field = "carrier"
		case strings.Contains(e.Field, "description"):
			field = "description"
		}
		f.Errors[field] = "Evento recusado: " + e.Message
	}
	d.Fulfillment = f
	d.Agent = a.agentNames(r).Name(l.agent)
	a.render(rw, r, http.StatusUnprocessableEntity, "order", a.newPage(r, orderTitle(o), "pedidos", d))
}
