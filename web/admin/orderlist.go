package admin

import (
	"encoding/csv"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
)

// The orders list (issue 34): search by order number or buyer, filters
// (status, creation dates in São Paulo days, payment method), and the
// filtered list as CSV.

// orderFilters is the filter form as typed.
type orderFilters struct {
	Query   string // order number ("#1007", "1007") or part of the buyer's name or e-mail
	Status  string
	From    string // YYYY-MM-DD, São Paulo day, inclusive
	To      string // YYYY-MM-DD, inclusive
	Payment string // pix | card
	Errors  map[string]string
}

var orderStatuses = []string{"processing", "partial", "fulfilled", "canceled"}

var paymentMethods = [][2]string{{"pix", "Pix"}, {"card", "Cartão"}}

// parseOrderFilters reads the filters from the query string into the
// request the orders service answers; a bad date is an error next to its
// field and that filter is left out.
func parseOrderFilters(v url.Values) (orderFilters, *ordersv1.ListOrdersRequest) {
	f := orderFilters{Query: strings.TrimSpace(v.Get("q")), Status: v.Get("status"), From: strings.TrimSpace(v.Get("de")),
		To: strings.TrimSpace(v.Get("ate")), Payment: v.Get("pagamento"), Errors: map[string]string{}}
	req := &ordersv1.ListOrdersRequest{Query: f.Query}
	if len(f.Query) > 200 {
		f.Errors["q"] = "No máximo 200 caracteres."
		req.Query = ""
	}
	for _, s := range orderStatuses {
		if f.Status == s {
			req.Status = s
		}
	}
	if req.Status == "" {
		f.Status = ""
	}
	for _, p := range paymentMethods {
		if f.Payment == p[0] {
			req.PaymentMethod = p[0]
		}
	}
	if req.PaymentMethod == "" {
		f.Payment = ""
	}
	day := func(field, s string) (time.Time, bool) {
		if s == "" {
			return time.Time{}, false
		}
		t, err := time.ParseInLocation(time.DateOnly, s, saoPaulo)
		if err != nil {
			f.Errors[field] = "Use uma data válida (dd/mm/aaaa)."
			return time.Time{}, false
		}
		return t, true
	}
	from, okFrom := day("de", f.From)
	to, okTo := day("ate", f.To)
	if okFrom {
		req.SinceUnix = from.Unix()
	}
	if okTo {
		req.UntilUnix = to.AddDate(0, 0, 1).Unix() // the whole last day
	}
	if okFrom && okTo && to.Before(from) {
		f.Errors["ate"] = "A data final vem depois da inicial."
		req.UntilUnix = 0
	}
	return f, req
}

// values is the filters as a query (without pagina), for the next-page
// and CSV links.
func (f orderFilters) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"q": f.Query, "status": f.Status, "de": f.From, "ate": f.To, "pagamento": f.Payment} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// Active reports whether any filter is set.
func (f orderFilters) Active() bool { return len(f.values()) > 0 }

func href(path string, v url.Values) template.URL {
	if len(v) == 0 {
		return template.URL(path)
	}
	return template.URL(path + "?" + v.Encode())
}

type ordersData struct {
	Filters  orderFilters
	Orders   []*ordersv1.OrderSummary
	Statuses []string
	Payments [][2]string
	CSVHref  template.URL
	NextHref template.URL // "" on the last page
}

func (a *Admin) orders(rw http.ResponseWriter, r *http.Request) {
	f, req := parseOrderFilters(r.URL.Query())
	req.PageSize, req.PageToken = 50, r.URL.Query().Get("pagina")
	resp, err := a.opts.Orders.ListOrders(r.Context(), connect.NewRequest(req))
	if err != nil {
		if e := appErr(err); e.Kind == apperr.KindInvalidArgument {
			f.Errors["q"] = "Filtro recusado: " + e.Message
			resp = connect.NewResponse(&ordersv1.ListOrdersResponse{})
		} else {
			a.serviceError(rw, r, err)
			return
		}
	}
	d := ordersData{Filters: f, Orders: resp.Msg.GetOrders(), Statuses: orderStatuses, Payments: paymentMethods, CSVHref: href("/admin/pedidos.csv", f.values())}
	if next := resp.Msg.GetNextPageToken(); next != "" {
		v := f.values()
		v.Set("pagina", next)
		d.NextHref = href("/admin/pedidos", v)
	}
	status := http.StatusOK
	if len(f.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	a.render(rw, r, status, "orders", a.newPage(r, "Pedidos", "pedidos", d))
}

// paymentLabel names a payment method for people.
func paymentLabel(method string) string {
	for _, p := range paymentMethods {
		if p[0] == method {
			return p[1]
		}
	}
	return method
}

// ordersCSV is the filtered list (every page) as CSV: one header row, one
// row per order, newest first; money in decimal reais ("184.70"), times in
// São Paulo.
func (a *Admin) ordersCSV(rw http.ResponseWriter, r *http.Request) {
	f, req := parseOrderFilters(r.URL.Query())
	if len(f.Errors) > 0 {
		a.errorPage(rw, r, http.StatusBadRequest)
		return
	}
	var rows []*ordersv1.OrderSummary
	for req.PageSize = 500; ; {
		resp, err := a.opts.Orders.ListOrders(r.Context(), connect.NewRequest(req))
		if err != nil {
			a.serviceError(rw, r, err)
			return
		}
		rows = append(rows, resp.Msg.GetOrders()...)
		if req.PageToken = resp.Msg.GetNextPageToken(); req.PageToken == "" || len(rows) >= 100000 {
			break
		}
	}
	rw.Header().Set("Content-Type", "text/csv; charset=utf-8")
	rw.Header().Set("Content-Disposition", `attachment; filename="pedidos-`+time.Now().In(saoPaulo).Format(time.DateOnly)+`.csv"`)
	rw.Header().Set("Cache-Control", "no-store")
	w := csv.NewWriter(rw)
	_ = w.Write([]string{"pedido", "id", "data", "status", "comprador", "email", "pagamento", "total", "moeda", "mandato_ap2"})
	for _, o := range rows {
		ap2 := ""
		if len(o.GetAp2MandateJson()) > 0 {
			ap2 = "sim"
		}
		_ = w.Write([]string{o.GetLabel(), o.GetId(), time.Unix(o.GetCreateTimeUnix(), 0).In(saoPaulo).Format("2006-01-02 15:04"),
			statusPT(o.GetStatus()), cell(o.GetBuyerName()), cell(o.GetBuyerEmail()), paymentLabel(o.GetPaymentMethod()),
			FormatDecimal(o.GetTotal()), o.GetCurrency(), ap2})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		a.log.WarnContext(r.Context(), "admin: orders CSV", "err", err)
	}
}

// cell keeps what a buyer typed from being read as a spreadsheet formula.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
