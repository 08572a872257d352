package web

import (
	"encoding/json"
	"html/template"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/ids"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// order is the part of the BCP order JSON the page shows.
type order struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	LineItems []struct {
		Item     bcp.Item `json:"item"`
		Quantity struct {
			Total int64 `json:"total"`
		} `json:"quantity"`
		Totals []bcp.Total `json:"totals"`
	} `json:"line_items"`
	Fulfillment struct {
		Expectations []struct {
			MethodType  string             `json:"method_type"`
			Destination *bcp.PostalAddress `json:"destination"`
			Description string             `json:"description"`
		} `json:"expectations"`
		Events []struct {
			OccurredAt     time.Time `json:"occurred_at"`
			Type           string    `json:"type"`
			TrackingNumber string    `json:"tracking_number"`
			TrackingURL    string    `json:"tracking_url"`
			Description    string    `json:"description"`
		} `json:"events"`
	} `json:"fulfillment"`
	Totals []bcp.Total `json:"totals"`
}

type orderView struct {
	ID           string
	Label        string
	Merchant     string
	Items        []itemView
	Totals       []totalView
	Expectations []expectationView
	Events       []eventView
}

type expectationView struct {
	Method      string
	Description string
	Lines       []string
}

type eventView struct {
	Label          string
	When           string
	Description    string
	TrackingNumber string
	TrackingURL    template.URL
}

var eventLabels = map[string]string{
	"processing":         "Em preparação",
	"shipped":            "Enviado",
	"in_transit":         "Em trânsito",
	"delivered":          "Entregue",
	"failed_attempt":     "Tentativa de entrega sem sucesso",
	"canceled":           "Entrega cancelada",
	"undeliverable":      "Não foi possível entregar",
	"returned_to_sender": "Devolvido à loja",
}

// orderPage is the buyer's order confirmation. The orders service may not
// serve GetOrder yet: unimplemented, like unknown, is a plain 404.
func (w *Web) orderPage(rw http.ResponseWriter, r *http.Request) {
	tenant, ok := w.tenantOf(r)
	id := r.PathValue("id")
	if !ok || w.opts.Orders == nil || !ids.HasPrefix(id, "ord") {
		w.notFound(rw, r)
		return
	}
	resp, err := w.opts.Orders.GetOrder(r.Context(), connect.NewRequest(&ordersv1.GetOrderRequest{Id: id}))
	if err != nil {
		if unimplemented(err) {
			w.notFound(rw, r)
			return
		}
		w.errorPage(rw, r, w.httpStatus(r, err))
		return
	}
	var o order
	if err := json.Unmarshal(resp.Msg.GetOrderJson(), &o); err != nil {
		w.errorPage(rw, r, w.httpStatus(r, err))
		return
	}
	v := orderView{ID: id, Label: o.Label, Merchant: w.merchant(r.Context(), tenant).name}
	if v.Label == "" {
		v.Label = id
	}
	for _, li := range o.LineItems {
		it := itemView{Title: li.Item.Title, Quantity: li.Quantity.Total, UnitPrice: li.Item.Price}
		it.LineTotal, _ = mulCents(li.Item.Price, li.Quantity.Total)
		for _, t := range li.Totals {
			if t.Type == bcp.TotalSubtotal {
				it.LineTotal = t.Amount
			}
		}
		v.Items = append(v.Items, it)
	}
	for _, t := range o.Totals {
		v.Totals = append(v.Totals, totalView{Label: totalLabel(t), Amount: t.Amount, IsTotal: t.Type == bcp.TotalTotal})
	}
	for _, e := range o.Fulfillment.Expectations {
		x := expectationView{Method: e.MethodType, Description: e.Description}
		if e.Destination != nil {
			x.Lines = addressLines(*e.Destination)
		}
		v.Expectations = append(v.Expectations, x)
	}
	for _, e := range o.Fulfillment.Events {
		label := eventLabels[e.Type]
		if label == "" {
			label = strings.ReplaceAll(e.Type, "_", " ")
		}
		ev := eventView{Label: label, Description: e.Description, TrackingNumber: e.TrackingNumber, TrackingURL: safeLink(e.TrackingURL)}
		if !e.OccurredAt.IsZero() {
			ev.When = localTime(e.OccurredAt)
		}
		v.Events = append(v.Events, ev)
	}
	w.render(rw, r, http.StatusOK, "order", v)
}

// unimplemented reports an RPC the serving side does not have yet. The
// platform's error interceptor (apperr) turns connect's Unimplemented into
// Internal but keeps connect's message, so both forms are recognised.
func unimplemented(err error) bool {
	return connect.CodeOf(err) == connect.CodeUnimplemented || strings.HasSuffix(err.Error(), " is not implemented")
}
