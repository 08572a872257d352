package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

var chartSection = regexp.MustCompile(`(?s)<section class="card chart-card" data-chart="([a-z]+)">(.*?)</section>`)

// charts splits the dashboard into its four chart sections by name.
func charts(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range chartSection.FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[2]
	}
	if len(out) != 4 {
		t.Fatalf("dashboard has %d chart sections, want 4:\n%s", len(out), body)
	}
	return out
}

var barTitle = regexp.MustCompile(`<rect class="bar[^"]*"[^>]*><title>([^<]*)</title>`)

func barTitles(section string) []string {
	var out []string
	for _, m := range barTitle.FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

func kpi(t *testing.T, body, name string) string {
	t.Helper()
	m := regexp.MustCompile(`data-kpi="` + name + `">([^<]*)<`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s figure in the dashboard", name)
	}
	return m[1]
}

// The dashboard from real purchases: two Pix orders, one expired Pix, an
// incomplete and a canceled checkout; a fresh merchant sees the empty
// states and nothing of the first.
func TestAdminDashboard(t *testing.T) {
	const host, fresh = "painel.localhost", "vazia.localhost"
	s := newShopper(t, 0, host, fresh)
	sp, _ := time.LoadLocation("America/Sao_Paulo")
	dayBefore := time.Now().In(sp).Format("02/01")

	// Two Pix purchases of 2 × 59,90 + 15,00 (PAC) = R$ 134,80.
	for range 2 {
		c := s.ready(host)
		d := pixOf(t, s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host)))
		s.pay(host, d.Pix.AttemptID)
		s.waitStatus(host, c.ID, bcp.StatusCompleted)
	}
	// A Pix that expires: the checkout goes back to ready_for_complete.
	c := s.ready(host)
	d := pixOf(t, s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host)))
	// Expired a second ago: the resolve sweep (every second here) expires it.
	s.exec(`UPDATE payments.attempts SET expires_at = now() - interval '1 second', resolve_after = now() - interval '1 second' WHERE id = $1`, d.Pix.AttemptID)
	s.waitStatus(host, c.ID, bcp.StatusReadyForComplete)
	// One left incomplete, one canceled.
	a := s.agents[host]
	if _, inc := a.call("create_checkout", map[string]any{"checkout": map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_can"}, "quantity": 1}}}}); inc.Status != bcp.StatusIncomplete {
		t.Fatalf("status %s, want incomplete", inc.Status)
	}
	cc := s.ready(host)
	if _, x := a.call("cancel_checkout", map[string]any{"id": cc.ID, "meta": map[string]any{"ucp-agent": map[string]any{"profile": a.profile}, "idempotency-key": uuid.NewString()}}); x.Status != bcp.StatusCanceled {
		t.Fatalf("cancel: %s", x.Status)
	}

	b := newBrowser(t, s.r, host)
	if p := b.signIn("dona@painel.com.br", invite(t, s.r, s.merchant[host].tenantID.String(), "dona@painel.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	p := b.do("GET", "/admin/", nil)
	if p.status != 200 || !strings.Contains(p.body, `<a href="/admin/" aria-current="page">Painel</a>`) {
		t.Fatalf("dashboard: %d\n%s", p.status, p.body)
	}
	// The CSP allows no inline style and no script: the charts need neither.
	if csp := p.header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'; style-src 'self';") ||
		strings.Contains(p.body, " style=") || strings.Contains(p.body, "<script") || strings.Contains(p.body, "<style") {
		t.Fatalf("CSP %q or inline style/script in the page", csp)
	}
	for name, want := range map[string]string{"gmv": "R$ 269,60", "pedidos": "2", "ticket": "R$ 134,80", "checkouts": "5", "conversao": "40 %",
		"pix-pagos": "2", "pix-expirados": "1", "pix-pendentes": "0"} {
		if got := kpi(t, p.body, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	ch := charts(t, p.body)
	today := time.Now().In(sp).Format("02/01")
	sameDay := today == dayBefore
	// GMV: 30 days on the axis (every third labelled), one bar today.
	if n := strings.Count(ch["gmv"], `class="x-label"`); n != 10 {
		t.Errorf("GMV chart: %d day labels, want 10", n)
	}
	if got := barTitles(ch["gmv"]); sameDay && (len(got) != 1 || got[0] != today+": R$ 269,60") {
		t.Errorf("GMV bars = %q", got)
	}
	if !strings.Contains(ch["gmv"], `role="img" aria-label="Vendas (GMV) por dia"`) || !strings.Contains(ch["gmv"], "<title>Vendas (GMV) por dia</title>") {
		t.Errorf("GMV chart not labelled: %s", ch["gmv"])
	}
	// Funnel: six stages, four of them with checkouts.
	if got := barTitles(ch["funil"]); strings.Join(got, "|") != "Incompleto: 1|Pronto para concluir: 1|Concluído: 2|Cancelado: 1" {
		t.Errorf("funnel bars = %q", got)
	}
	if n := strings.Count(ch["funil"], `class="row-label"`); n != 6 {
		t.Errorf("funnel: %d rows, want 6", n)
	}
	// By agent: the one agent, with both orders, named by the label of
	// its API key ("e2e", see agentSession), not by its profile URL.
	if got := barTitles(ch["agentes"]); len(got) != 1 || got[0] != "e2e: R$ 269,60 · 2 pedidos" {
		t.Errorf("agent bars = %q", got)
	}
	// Pix: paid and expired stacked on today.
	if got := barTitles(ch["pix"]); sameDay && strings.Join(got, "|") != today+" — Pagos: 2|"+today+" — Expirados: 1" {
		t.Errorf("Pix bars = %q", got)
	}
	// Seven days: the same figures, seven day slots (all labelled).
	if p7 := b.do("GET", "/admin/?dias=7", nil); kpi(t, p7.body, "gmv") != "R$ 269,60" || strings.Count(charts(t, p7.body)["gmv"], `class="x-label"`) != 7 ||
		!strings.Contains(p7.body, `<a href="/admin/?dias=7" aria-current="true">7 dias</a>`) {
		t.Errorf("7 days: %s", p7.body)
	}
	// Anything but 7, 30 or 90 is the default 30 days.
	if px := b.do("GET", "/admin/?dias=365", nil); px.status != 200 || !strings.Contains(px.body, `<a href="/admin/?dias=30" aria-current="true">30 dias</a>`) {
		t.Errorf("?dias=365: %d", px.status)
	}

	// A fresh merchant: zeros and the empty states, nothing of the first.
	bf := newBrowser(t, s.r, fresh)
	if p := bf.signIn("dono@vazia.com.br", invite(t, s.r, s.merchant[fresh].tenantID.String(), "dono@vazia.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	e := bf.do("GET", "/admin/", nil)
	if e.status != 200 {
		t.Fatalf("fresh dashboard: %d", e.status)
	}
	for name, want := range map[string]string{"gmv": "R$ 0,00", "pedidos": "0", "ticket": "—", "checkouts": "0", "conversao": "—", "pix-pagos": "0", "pix-expirados": "0"} {
		if got := kpi(t, e.body, name); got != want {
			t.Errorf("fresh %s = %q, want %q", name, got, want)
		}
	}
	ech := charts(t, e.body)
	for name, msg := range map[string]string{
		"gmv": "Nenhuma venda nos últimos 30 dias.", "funil": "Nenhum checkout nos últimos 30 dias.",
		"agentes": "Nenhum pedido de agente nos últimos 30 dias.", "pix": "Nenhum Pix pago ou expirado nos últimos 30 dias.",
	} {
		if !strings.Contains(ech[name], `<p class="empty">`+msg+`</p>`) || strings.Contains(ech[name], "<svg") {
			t.Errorf("fresh %s chart: %s", name, ech[name])
		}
	}
	if strings.Contains(e.body, "269,60") || strings.Contains(e.body, s.profile) {
		t.Error("the fresh merchant's dashboard shows the other merchant's figures")
	}
}

// Money the platform returned by itself is shown to the merchant: a Pix
// paid with another amount is refunded automatically and listed on the
// dashboard with its payment; a merchant with none sees that there is none.
func TestAdminShowsAutomaticRefunds(t *testing.T) {
	const host, other = "devolve.localhost", "tranquila.localhost"
	s := newShopper(t, 0, host, other)
	c := s.ready(host)
	d := pixOf(t, s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host)))
	ctx := tenancy.With(context.Background(), s.merchant[host].tenantID)
	if _, err := s.r.ClientsWithToken(operatorToken).Payments.SimulatePixPayment(ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: d.Pix.AttemptID, Amount: 100})); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the wrong amount is refunded", func() bool {
		return s.sql(`SELECT count(*) FROM payments.refunds WHERE attempt_id = $1 AND kind = 'automatic' AND status = 'succeeded'`, d.Pix.AttemptID) == 1
	})
	b := newBrowser(t, s.r, host)
	if p := b.signIn("dona@devolve.com.br", invite(t, s.r, s.merchant[host].tenantID.String(), "dona@devolve.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	p := b.do("GET", "/admin/", nil)
	if p.status != 200 || strings.Count(p.body, "<tr data-alert>") != 1 || !strings.Contains(p.body, "<td>Pix com valor diferente</td>") ||
		!strings.Contains(p.body, "R$ 1,00") || !strings.Contains(p.body, "<code>"+d.Pix.AttemptID+"</code>") {
		t.Fatalf("dashboard alerts: %d\n%s", p.status, p.body)
	}
	bo := newBrowser(t, s.r, other)
	if p := bo.signIn("dono@tranquila.com.br", invite(t, s.r, s.merchant[other].tenantID.String(), "dono@tranquila.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	if p := bo.do("GET", "/admin/", nil); strings.Contains(p.body, "<tr data-alert>") || !strings.Contains(p.body, "Nenhuma devolução automática") {
		t.Fatalf("the other merchant's dashboard: %s", p.body)
	}
}
