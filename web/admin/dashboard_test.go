package admin

import (
	"strings"
	"testing"
	"time"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// The figures the dashboard derives: ticket rounded half up, conversion
// in the admin's percent format, days placed on the calendar (São Paulo
// days, gaps kept), the funnel in status-machine order.
func TestDashboardFigures(t *testing.T) {
	start := time.Date(2026, 2, 27, 0, 0, 0, 0, saoPaulo) // crosses the end of February
	var d dashboardData
	d.fillOrders(&ordersv1.GetOrderStatsResponse{Orders: 3, GmvMinor: 1000, PerDay: []*ordersv1.OrderDay{
		{Day: "2026-02-28", Orders: 1, GmvMinor: 400}, {Day: "2026-03-02", Orders: 2, GmvMinor: 600},
	}, ByAgent: []*ordersv1.AgentOrders{{Agent: "", Orders: 1, GmvMinor: 400}, {Agent: "https://agente.example/perfil.json", Orders: 1, GmvMinor: 300},
		{Agent: "https://outro.example/p.json", Orders: 1, GmvMinor: 300}}}, start, 4, agentNamer{"https://agente.example/perfil.json": "Assistente Ana"})
	if d.Ticket != 333 || d.Orders.String() != "3" {
		t.Errorf("ticket %d orders %s", d.Ticket, d.Orders)
	}
	gmv := string(d.GMVChart)
	if !strings.Contains(gmv, "<desc>27/02: R$ 0,00; 28/02: R$ 4,00; 01/03: R$ 0,00; 02/03: R$ 6,00</desc>") || strings.Count(gmv, `<rect class="bar`) != 2 {
		t.Errorf("GMV chart: %s", gmv)
	}
	// Agents are named by their API key's label, else their profile's host.
	if ch := string(d.AgentChart); !strings.Contains(ch, "<title>(agente não identificado): R$ 4,00 · 1 pedido</title>") ||
		!strings.Contains(ch, "<title>Assistente Ana: R$ 3,00 · 1 pedido</title>") || !strings.Contains(ch, "<title>outro.example: R$ 3,00 · 1 pedido</title>") ||
		strings.Contains(ch, "https://") {
		t.Errorf("agent chart: %s", d.AgentChart)
	}

	d.fillCheckouts(&checkoutv1.GetCheckoutStatsResponse{Total: 3, ByStatus: []*checkoutv1.StatusCount{{Status: "completed", Count: 2}, {Status: "canceled", Count: 1}}})
	if d.Conversion != "66,67 %" || d.Checkouts.String() != "3" {
		t.Errorf("conversion %q checkouts %s", d.Conversion, d.Checkouts)
	}
	if !strings.Contains(string(d.FunnelChart), "<desc>Incompleto: 0; Requer comprador: 0; Pronto para concluir: 0; Concluindo: 0; Concluído: 2; Cancelado: 1</desc>") {
		t.Errorf("funnel: %s", d.FunnelChart)
	}

	d.fillPayments(&paymentsv1.GetPaymentStatsResponse{PixPaid: 1234, PixExpired: 1, PixPerDay: []*paymentsv1.PixDay{{Day: "2026-03-01", Paid: 1234, Expired: 1}}}, start, 4)
	if d.PixPaid.String() != "1.234" || !strings.Contains(string(d.PixChart), "01/03: Pagos 1.234, Expirados 1") {
		t.Errorf("pix %s: %s", d.PixPaid, d.PixChart)
	}

	var empty dashboardData
	empty.fillOrders(&ordersv1.GetOrderStatsResponse{}, start, 30, nil)
	empty.fillCheckouts(&checkoutv1.GetCheckoutStatsResponse{})
	empty.fillPayments(&paymentsv1.GetPaymentStatsResponse{}, start, 30)
	if empty.GMVChart != "" || empty.AgentChart != "" || empty.FunnelChart != "" || empty.PixChart != "" || empty.Conversion != "" || empty.Ticket != 0 {
		t.Errorf("empty: %+v", empty)
	}
}
