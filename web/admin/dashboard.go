package admin

import (
	"html/template"
	"net/http"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/web/internal/svgchart"
)

// dashboardPeriods are the windows offered (?dias=); the first-listed
// default is 30.
var dashboardPeriods = []int{7, 30, 90}

// funnelOrder is the checkout status machine from start to end.
var funnelOrder = bcp.Statuses()

const (
	colorPaid    = "#0a6b4f"
	colorExpired = "#a4221a"
)

type dashboardData struct {
	Days    int
	Periods []int

	GMV        int64
	Orders     qty
	Ticket     int64
	Refunded   int64
	Checkouts  qty
	Conversion string // "" when there is no checkout

	GMVChart    template.HTML
	FunnelChart template.HTML
	AgentChart  template.HTML
	PixChart    template.HTML

	Payments     bool // the payments service is wired
	PixPaid      qty
	PixExpired   qty
	PixPending   qty
	CardApproved qty
	CardDeclined qty

	// Checklist is the go-live checklist ("Primeiros passos"; nil when
	// the tenants service could not answer it).
	Checklist *checklistView

	// Alerts are the payments the platform could not keep and returned by
	// itself (a Pix paid late or with another amount, a card approved after
	// its payment ended, a payment of a canceled checkout), newest first.
	Alerts []alertRow
}

// alertRow is one payment alert as the dashboard lists it.
type alertRow struct {
	When, Kind, Message, AttemptID string
}

// alertKinds names the alert kinds for merchants.
var alertKinds = map[string]string{
	"pix_paid_after_expiry":   "Pix pago depois do vencimento",
	"pix_wrong_amount":        "Pix com valor diferente",
	"pix_attempt_not_pending": "Pix de pagamento já encerrado",
	"pix_orphan":              "Pix sem cobrança",
	"pix_unconfirmed":         "Pix não confirmado pelo PSP",
	"card_stray_charge":       "Cartão aprovado depois do encerramento",
	"checkout_closed":         "Pagamento de checkout cancelado",
}

// qty is a count as pages show it: "1.234".
type qty int64

func (q qty) String() string { return svgchart.Count(int64(q)) }

// dashboard is the admin's home: the last N days (São Paulo calendar
// days, today included) from the three services' stats RPCs, as totals
// and server-drawn SVG charts.
func (a *Admin) dashboard(rw http.ResponseWriter, r *http.Request) {
	days := 30
	if n, err := strconv.Atoi(r.URL.Query().Get("dias")); err == nil {
		for _, p := range dashboardPeriods {
			if n == p {
				days = n
			}
		}
	}
	now := time.Now().In(saoPaulo)
	start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, saoPaulo).AddDate(0, 0, -(days - 1))
	since := start.Unix()

	ctx := r.Context()
	var (
		wg               sync.WaitGroup
		orders           *ordersv1.GetOrderStatsResponse
		checkouts        *checkoutv1.GetCheckoutStatsResponse
		pays             *paymentsv1.GetPaymentStatsResponse
		alerts           *paymentsv1.ListAlertsResponse
		errO, errC, errP error
		errA             error
		checklist        *checklistView
	)
	wg.Add(3)
	go func() {
		defer wg.Done()
		checklist = a.checklist(ctx, sessionFrom(ctx))
	}()
	go func() {
		defer wg.Done()
		var resp *connect.Response[ordersv1.GetOrderStatsResponse]
		if resp, errO = a.opts.Orders.GetOrderStats(ctx, connect.NewRequest(&ordersv1.GetOrderStatsRequest{SinceUnix: since})); errO == nil {
			orders = resp.Msg
		}
	}()
	go func() {
		defer wg.Done()
		var resp *connect.Response[checkoutv1.GetCheckoutStatsResponse]
		if resp, errC = a.opts.Checkout.GetCheckoutStats(ctx, connect.NewRequest(&checkoutv1.GetCheckoutStatsRequest{SinceUnix: since})); errC == nil {
			checkouts = resp.Msg
		}
	}()
	if a.opts.Payments != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp *connect.Response[paymentsv1.GetPaymentStatsResponse]
			if resp, errP = a.opts.Payments.GetPaymentStats(ctx, connect.NewRequest(&paymentsv1.GetPaymentStatsRequest{SinceUnix: since})); errP == nil {
				pays = resp.Msg
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp *connect.Response[paymentsv1.ListAlertsResponse]
			if resp, errA = a.opts.Payments.ListAlerts(ctx, connect.NewRequest(&paymentsv1.ListAlertsRequest{})); errA == nil {
				alerts = resp.Msg
			}
		}()
	}
	wg.Wait()
	for _, err := range []error{errO, errC, errP, errA} {
		if err != nil {
			a.serviceError(rw, r, err)
			return
		}
	}
	d := dashboardData{Days: days, Periods: dashboardPeriods, Payments: pays != nil, Checklist: checklist}
	d.fillOrders(orders, start, days, a.agentNames(r))
	d.fillCheckouts(checkouts)
	if pays != nil {
		d.fillPayments(pays, start, days)
	}
	for _, al := range alerts.GetAlerts() {
		if len(d.Alerts) == 20 {
			break
		}
		kind := alertKinds[al.GetKind()]
		if kind == "" {
			kind = al.GetKind()
		}
		d.Alerts = append(d.Alerts, alertRow{When: al.GetCreateTime().AsTime().In(saoPaulo).Format("02/01 15:04"), Kind: kind, Message: al.GetMessage(), AttemptID: al.GetAttemptId()})
	}
	a.render(rw, r, http.StatusOK, "dashboard", a.newPage(r, "Painel", "painel", d))
}

// calendar is the window's days, oldest first: the "2006-01-02" keys the
// RPCs use and the "02/01" labels the charts show. Days without data are
// drawn as gaps, not left out.
func calendar(start time.Time, days int) (keys, labels []string) {
	for i := range days {
		t := start.AddDate(0, 0, i)
		keys = append(keys, t.Format(time.DateOnly))
		labels = append(labels, t.Format("02/01"))
	}
	return keys, labels
}

func (d *dashboardData) fillOrders(s *ordersv1.GetOrderStatsResponse, start time.Time, days int, names agentNamer) {
	d.GMV, d.Orders, d.Refunded = s.GetGmvMinor(), qty(s.GetOrders()), s.GetRefundedMinor()
	if n := s.GetOrders(); n > 0 {
		d.Ticket = (d.GMV + n/2) / n
	}
	perDay := map[string]int64{}
	for _, p := range s.GetPerDay() {
		perDay[p.GetDay()] = p.GetGmvMinor()
	}
	keys, labels := calendar(start, days)
	bars := make([]svgchart.Bar, len(keys))
	for i, k := range keys {
		bars[i] = svgchart.Bar{Label: labels[i], Value: perDay[k]}
	}
	d.GMVChart = svgchart.Columns(svgchart.Options{Title: "Vendas (GMV) por dia", Format: FormatBRL}, bars)

	var agents []svgchart.Bar
	for _, ag := range s.GetByAgent() {
		label := names.Name(ag.GetAgent()) // the agent's name, not its profile URL
		if label == "" {
			label = "(agente não identificado)"
		}
		unit := " pedidos"
		if ag.GetOrders() == 1 {
			unit = " pedido"
		}
		agents = append(agents, svgchart.Bar{Label: label, Value: ag.GetGmvMinor(),
			Text: FormatBRL(ag.GetGmvMinor()) + " · " + svgchart.Count(ag.GetOrders()) + unit})
	}
	d.AgentChart = svgchart.HBars(svgchart.Options{Title: "Pedidos por agente (GMV)"}, agents)
}

func (d *dashboardData) fillCheckouts(s *checkoutv1.GetCheckoutStatsResponse) {
	total := s.GetTotal()
	d.Checkouts = qty(total)
	byStatus := map[string]int64{}
	for _, c := range s.GetByStatus() {
		byStatus[c.GetStatus()] = c.GetCount()
	}
	if total > 0 {
		bp := (byStatus["completed"]*10000 + total/2) / total
		d.Conversion = formatPercent(bp) + " %"
	}
	bars := make([]svgchart.Bar, len(funnelOrder))
	for i, st := range funnelOrder {
		bars[i] = svgchart.Bar{Label: statusPT(st), Value: byStatus[st]}
	}
	d.FunnelChart = svgchart.HBars(svgchart.Options{Title: "Checkouts por status"}, bars)
}

func (d *dashboardData) fillPayments(s *paymentsv1.GetPaymentStatsResponse, start time.Time, days int) {
	d.PixPaid, d.PixExpired, d.PixPending = qty(s.GetPixPaid()), qty(s.GetPixExpired()), qty(s.GetPixPending())
	d.CardApproved, d.CardDeclined = qty(s.GetCardApproved()), qty(s.GetCardDeclined())
	perDay := map[string]*paymentsv1.PixDay{}
	for _, p := range s.GetPixPerDay() {
		perDay[p.GetDay()] = p
	}
	keys, labels := calendar(start, days)
	groups := make([]svgchart.Group, len(keys))
	for i, k := range keys {
		p := perDay[k]
		groups[i] = svgchart.Group{Label: labels[i], Values: []int64{p.GetPaid(), p.GetExpired()}}
	}
	d.PixChart = svgchart.Stacked(svgchart.Options{Title: "Pix pagos e expirados por dia"},
		[]svgchart.Series{{Name: "Pagos", Color: colorPaid}, {Name: "Expirados", Color: colorExpired}}, groups)
}
