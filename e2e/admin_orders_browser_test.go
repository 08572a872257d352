package e2e

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/saopaulo"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Issue 34, items 3 and 4, in a real browser: the catalog as the merchant
// sees it (stock badges, variant labels on prices, thumbnails), then a Pix
// order and a card order bought by an agent over MCP, and the pages a
// merchant ships from: the orders list with its search and filters, each
// order's page (buyer, contact, address, method and option, payment with
// the Pix end-to-end id or the card's brand and last digits, AP2, the
// order number), the printable packing slip and the CSV export of the
// filtered list, parsed and checked value by value.
func TestBrowserOrdersAMerchantShipsFrom(t *testing.T) {
	const host = "envio.localhost"
	chromiumPath(t)
	s := newShopper(t, 0, host)
	m := s.merchant[host]
	ops := s.r.ClientsWithToken(operatorToken)
	ctx := tenancy.With(context.Background(), m.tenantID)

	// The catalog: an image on the shirt, a cap whose blue variant is
	// nearly gone and whose picture is the variant's.
	cam, err := ops.Catalog.GetProduct(ctx, connect.NewRequest(&catalogv1.GetProductRequest{Id: "prd_cam"}))
	if err != nil {
		t.Fatal(err)
	}
	p := cam.Msg.GetProduct()
	p.ImageUrl = "https://img.loja.example/camiseta.jpg"
	if _, err := ops.Catalog.UpdateProduct(ctx, connect.NewRequest(&catalogv1.UpdateProductRequest{Product: p})); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Catalog.CreateProduct(ctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Id: "prd_bon", Title: "Boné", Active: true, Variants: []*catalogv1.Variant{
			{Id: "var_bon_azul", Sku: "BON-AZ", Title: "Boné azul", Price: 4990, Stock: 3, Active: true, ImageUrl: "https://img.loja.example/bone-azul.jpg"},
			{Id: "var_bon_preto", Sku: "BON-PR", Title: "Boné preto", Price: 5290, Stock: 20, Active: true},
		}}})); err != nil {
		t.Fatal(err)
	}
	// The agent's API key is labelled: the admin names the agent by it.
	if _, err := ops.Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: s.profile, Label: "Assistente de Compras",
	})); err != nil {
		t.Fatal(err)
	}

	c := newChrome(t, s.r)
	adm := c.tab(true)
	adm.open(host, "/admin/entrar")
	adm.fill(`input[name=email]`, "dona@envio.com.br")
	adm.fill(`input[name=password]`, invite(t, s.r, m.tenantID.String(), "dona@envio.com.br"))
	if st := adm.submit(`form[action="/admin/entrar"] button[type=submit]`); st != 200 {
		t.Fatalf("sign-in: %d at %s", st, adm.location())
	}

	// 1. Products: badges by stock, labelled variant prices, thumbnails.
	if st := adm.open(host, "/admin/produtos"); st != 200 {
		t.Fatalf("products: %d", st)
	}
	for id, want := range map[string]string{"prd_cam": "Ativo", "prd_can": "Estoque baixo", "prd_out": "Esgotado", "prd_bon": "Estoque baixo"} {
		if got := adm.text(`tr[data-product="` + id + `"] [data-badge]`); got != want {
			t.Errorf("%s badge %q, want %q", id, got, want)
		}
	}
	for id, want := range map[string]string{"var_bon_azul": "Boné azul R$ 49,90", "var_bon_preto": "Boné preto R$ 52,90", "var_cam": "Camiseta M R$ 59,90"} {
		if got := adm.text(`[data-variant-price="` + id + `"]`); got != want {
			t.Errorf("price of %s %q, want %q", id, got, want)
		}
	}
	if got := adm.text(`[data-variant-stock="var_out"]`); got != "0 esgotado" {
		t.Errorf("sold-out variant stock %q", got)
	}
	thumbs := eval[map[string]string](adm, `Object.fromEntries([...document.querySelectorAll('tr[data-product]')].map(r => [r.dataset.product, (r.querySelector('img[data-thumb]') || {}).src || '']))`)
	for id, want := range map[string]string{"prd_cam": "https://img.loja.example/camiseta.jpg", "prd_bon": "https://img.loja.example/bone-azul.jpg", "prd_can": "", "prd_out": ""} {
		if thumbs[id] != want {
			t.Errorf("thumbnail of %s %q, want %q", id, thumbs[id], want)
		}
	}
	adm.screenshot("produtos")

	// 2. Two orders: Ana pays 2 shirts by Pix, Bruno 1 shirt by card.
	pixCk := s.buyShirts(host, 2, map[string]any{"first_name": "Ana", "last_name": "Souza", "email": "ana.souza@example.com", "phone_number": "+5511987654321"},
		s.pixInstrument(host))
	cardCk := s.buyShirts(host, 1, map[string]any{"first_name": "Bruno", "last_name": "Lima", "email": "bruno@example.com", "phone_number": "+5521912345678"},
		cardInstrument("tok_test_4242"))
	pixID, cardID := pixCk.Order.ID, cardCk.Order.ID
	if pixCk.Order.Label != "#1001" || cardCk.Order.Label != "#1002" {
		t.Fatalf("order labels %q %q", pixCk.Order.Label, cardCk.Order.Label)
	}
	e2eID := s.text(`SELECT e2e_id FROM payments.attempts WHERE tenant_id = $1 AND checkout_id = $2 AND status = 'succeeded'`, m.tenantID, pixCk.ID)
	txid := s.text(`SELECT txid FROM payments.attempts WHERE tenant_id = $1 AND checkout_id = $2 AND status = 'succeeded'`, m.tenantID, pixCk.ID)
	if len(e2eID) != 32 || len(txid) != 32 {
		t.Fatalf("Pix e2e id %q txid %q", e2eID, txid)
	}

	// 3. The list names orders by number, with buyer and payment.
	if st := adm.open(host, "/admin/pedidos"); st != 200 {
		t.Fatalf("orders: %d", st)
	}
	rows := func() []string {
		return eval[[]string](adm, `[...document.querySelectorAll('tr[data-order]')].map(r => r.querySelector('[data-col=pedido]').textContent.trim())`)
	}
	if got := rows(); strings.Join(got, ",") != "#1002,#1001" {
		t.Fatalf("orders listed %v", got)
	}
	for id, want := range map[string][4]string{
		pixID:  {"Ana Souza", "Pix", "Em processamento", "R$ 134,80"},
		cardID: {"Bruno Lima", "Cartão", "Em processamento", "R$ 74,90"},
	} {
		row := `tr[data-order="` + id + `"] `
		if got := adm.text(row + `[data-col=comprador]`); !strings.HasPrefix(got, want[0]) {
			t.Errorf("%s buyer %q", id, got)
		}
		for i, col := range []string{"pagamento", "status", "total"} {
			if got := adm.text(row + `[data-col=` + col + `]`); got != want[i+1] {
				t.Errorf("%s %s %q, want %q", id, col, got, want[i+1])
			}
		}
	}
	adm.screenshot("pedidos")

	// Search by buyer name, then by order number; filters by payment
	// method, status and São Paulo dates.
	adm.fill(`input[name=q]`, "souza")
	if st := adm.submit(`form.order-filters button[type=submit]`); st != 200 || strings.Join(rows(), ",") != "#1001" {
		t.Fatalf("search souza: %d %v at %s", st, rows(), adm.location())
	}
	adm.fill(`input[name=q]`, "1002")
	if st := adm.submit(`form.order-filters button[type=submit]`); st != 200 || strings.Join(rows(), ",") != "#1002" {
		t.Fatalf("search 1002: %d %v", st, rows())
	}
	adm.open(host, "/admin/pedidos")
	adm.step("filter card payments", chromedp.SetValue(chromedp.CSS(`select[name=pagamento]`), "card"))
	if st := adm.submit(`form.order-filters button[type=submit]`); st != 200 || strings.Join(rows(), ",") != "#1002" {
		t.Fatalf("card filter: %d %v", st, rows())
	}
	adm.step("and fulfilled", chromedp.SetValue(chromedp.CSS(`select[name=status]`), "fulfilled"))
	if st := adm.submit(`form.order-filters button[type=submit]`); st != 200 || len(rows()) != 0 || adm.text(".empty") != "Nenhum pedido com esses filtros." {
		t.Fatalf("card+fulfilled filter: %d %v", st, rows())
	}
	today := time.Now().In(saopaulo.Location)
	adm.open(host, "/admin/pedidos?de="+today.Format(time.DateOnly)+"&ate="+today.Format(time.DateOnly))
	if got := rows(); len(got) != 2 {
		t.Fatalf("today's orders %v", got)
	}
	if adm.open(host, "/admin/pedidos?de="+today.AddDate(0, 0, 1).Format(time.DateOnly)); len(rows()) != 0 {
		t.Fatalf("tomorrow's orders %v", rows())
	}
	if st := adm.open(host, "/admin/pedidos?de="+today.Format(time.DateOnly)+"&ate="+today.AddDate(0, 0, -1).Format(time.DateOnly)); st != 422 || adm.text(`[data-field=ate]`) != "A data final vem depois da inicial." {
		t.Fatalf("reversed dates: %d", st)
	}

	// 4. The CSV of the filtered list (Pix only), fetched with the
	// merchant's session and parsed.
	adm.open(host, "/admin/pedidos?pagamento=pix")
	if href := eval[string](adm, `document.querySelector('a[data-link=csv]').getAttribute('href')`); href != "/admin/pedidos.csv?pagamento=pix" {
		t.Fatalf("CSV link %q", href)
	}
	// The admin's CSP allows no fetch from the page, so the CSV is fetched
	// as a download would be: with the browser's own session cookie.
	cctx, cancel := context.WithTimeout(adm.ctx, stepTimeout)
	cookies, err := chromedp.Call(cctx, network.GetCookies, network.GetCookiesParams{URLs: []string{adm.url(host, "/admin/")}})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	hb := newBrowser(t, s.r, host)
	for _, ck := range cookies.Cookies {
		hb.c.Jar.SetCookies(&url.URL{Scheme: "http", Host: host, Path: "/admin/"}, []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: ck.Path}})
	}
	fetchCSV := func(path string) [][]string {
		t.Helper()
		res := hb.do("GET", path, nil)
		if res.status != 200 || res.header.Get("Content-Type") != "text/csv; charset=utf-8" || !strings.HasPrefix(res.header.Get("Content-Disposition"), `attachment; filename="pedidos-`) {
			t.Fatalf("CSV %s: %d %q %q\n%s", path, res.status, res.header.Get("Content-Type"), res.header.Get("Content-Disposition"), res.body)
		}
		recs, err := csv.NewReader(strings.NewReader(res.body)).ReadAll()
		if err != nil {
			t.Fatalf("CSV %s does not parse: %v\n%s", path, err, res.body)
		}
		return recs
	}
	header := []string{"pedido", "id", "data", "status", "comprador", "email", "pagamento", "total", "moeda", "mandato_ap2"}
	pixRecs := fetchCSV("/admin/pedidos.csv?pagamento=pix")
	if len(pixRecs) != 2 || strings.Join(pixRecs[0], ",") != strings.Join(header, ",") {
		t.Fatalf("Pix CSV %q", pixRecs)
	}
	if r := pixRecs[1]; r[0] != "#1001" || r[1] != pixID || !strings.HasPrefix(r[2], today.Format(time.DateOnly)+" ") || r[3] != "Em processamento" ||
		r[4] != "Ana Souza" || r[5] != "ana.souza@example.com" || r[6] != "Pix" || r[7] != "134.80" || r[8] != "BRL" || r[9] != "" {
		t.Fatalf("Pix CSV row %q", r)
	}
	allRecs := fetchCSV("/admin/pedidos.csv")
	if len(allRecs) != 3 || allRecs[1][0] != "#1002" || allRecs[1][6] != "Cartão" || allRecs[1][7] != "74.90" || allRecs[1][4] != "Bruno Lima" || allRecs[2][0] != "#1001" {
		t.Fatalf("CSV of every order %q", allRecs)
	}

	// 5. The Pix order's page.
	if st := adm.open(host, "/admin/pedidos/"+pixID); st != 200 {
		t.Fatalf("Pix order page: %d", st)
	}
	field := func(name string) string { return adm.text(`[data-field=` + name + `]`) }
	for name, want := range map[string]string{
		"label": "#1001", "id": pixID, "agent": "Assistente de Compras",
		"buyer_name": "Ana Souza", "buyer_email": "ana.souza@example.com", "buyer_phone": "+5511987654321",
		"method": "Envio", "option": "PAC · Correios · R$ 15,00\nEntrega em 5 a 9 dias úteis",
		"payment": "Pix", "e2e": e2eID, "txid": txid, "ap2": "Mandato AP2: não",
	} {
		if got := field(name); got != want {
			t.Errorf("Pix order %s %q, want %q", name, got, want)
		}
	}
	if got := eval[string](adm, `document.querySelector('[data-field=address]').innerText`); got != "Rua Augusta, 500, apto 12\nSão Paulo – SP\nCEP 01305-000" {
		t.Errorf("Pix order address %q", got)
	}
	if h := adm.text("h1"); h != "Pedido #1001" {
		t.Errorf("order page heading %q", h)
	}
	if title := eval[string](adm, `document.title`); title != "Pedido #1001 · Admin" {
		t.Errorf("order page title %q", title)
	}
	adm.screenshot("pedido-pix")

	// 6. The card order's page.
	adm.open(host, "/admin/pedidos/"+cardID)
	for name, want := range map[string]string{
		"label": "#1002", "buyer_name": "Bruno Lima", "buyer_email": "bruno@example.com", "buyer_phone": "+5521912345678",
		"method": "Envio", "option": "PAC · Correios · R$ 15,00\nEntrega em 5 a 9 dias úteis",
		"payment": "Cartão Visa final 4242", "card_brand": "Visa", "card_last_digits": "4242", "ap2": "Mandato AP2: não",
	} {
		if got := field(name); got != want {
			t.Errorf("card order %s %q, want %q", name, got, want)
		}
	}
	if n := eval[int](adm, `document.querySelectorAll('[data-field=e2e]').length`); n != 0 {
		t.Errorf("a card order shows a Pix end-to-end id")
	}
	adm.screenshot("pedido-cartao")

	// 7. The packing slip, on screen and as printed.
	adm.open(host, "/admin/pedidos/"+pixID)
	if st := adm.navigation("open the packing slip", chromedp.Click(chromedp.CSS(`a[data-link=separacao]`))); st != 200 || adm.location() != adm.url(host, "/admin/pedidos/"+pixID+"/separacao") {
		t.Fatalf("packing slip: %d at %s", st, adm.location())
	}
	if got := adm.text(`.slip h1`); got != "Pedido #1001" {
		t.Errorf("slip heading %q", got)
	}
	if got := eval[string](adm, `document.querySelector('[data-field=ship_to]').innerText`); got != "Ana Souza\nRua Augusta, 500, apto 12\nSão Paulo – SP\nCEP 01305-000\nTel. +5511987654321" {
		t.Errorf("slip ship-to %q", got)
	}
	if got := adm.text(`.slip [data-field=method]`); got != "Envio · PAC · Correios" {
		t.Errorf("slip method %q", got)
	}
	items := eval[[][]string](adm, `[...document.querySelectorAll('.slip-items tbody tr')].map(r => [r.querySelector('[data-col=qtd]').textContent.trim(), r.querySelector('[data-col=item]').textContent.trim()])`)
	if len(items) != 1 || items[0][0] != "2" || items[0][1] != "Camiseta M" {
		t.Errorf("slip items %q", items)
	}
	if strings.Contains(adm.text(".slip"), "R$") {
		t.Errorf("the slip shows prices: %q", adm.text(".slip"))
	}
	adm.screenshot("separacao")
	pctx, cancel := context.WithTimeout(adm.ctx, stepTimeout)
	if _, err := chromedp.Call(pctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	printed := eval[map[string]string](adm, `({topbar: getComputedStyle(document.querySelector('.topbar')).display,
		back: getComputedStyle(document.querySelector('.no-print')).display, slip: getComputedStyle(document.querySelector('.slip')).display,
		row: getComputedStyle(document.querySelector('.slip-items tbody tr')).display})`)
	if printed["topbar"] != "none" || printed["back"] != "none" || printed["slip"] == "none" || printed["row"] != "table-row" {
		t.Errorf("printed slip styles %v", printed)
	}
	adm.screenshot("separacao-impressa")
	pctx, cancel = context.WithTimeout(adm.ctx, stepTimeout)
	if _, err := chromedp.Call(pctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
	cancel()

	// 8. The dashboard names the agent by its key's label, not its URL.
	adm.open(host, "/admin/")
	if chart := adm.text(`[data-chart=agentes]`); !strings.Contains(chart, "Assistente de Compras") || strings.Contains(chart, "http") {
		t.Errorf("agents chart %q", chart)
	}
}

// buyShirts buys n shirts (var_cam) for buyer with PAC to Rua Augusta and
// pays with instrument (a Pix is paid by the sandbox); it returns the
// completed checkout.
func (s *shopper) buyShirts(host string, n int, buyer map[string]any, instrument map[string]any) *bcp.Checkout {
	s.t.Helper()
	a := s.agents[host]
	address := map[string]any{"street_address": "Rua Augusta, 500", "extended_address": "apto 12", "address_locality": "São Paulo",
		"address_region": "SP", "postal_code": "01305-000", "address_country": "BR"}
	_, c := a.call("create_checkout", map[string]any{"checkout": map[string]any{
		"line_items":  []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": n}},
		"buyer":       buyer,
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{address}}}},
	}})
	mth := c.Fulfillment.Methods[0]
	_, c = a.call("update_checkout", map[string]any{"id": c.ID, "checkout": map[string]any{
		"line_items": []any{map[string]any{"id": c.LineItems[0].ID, "item": map[string]any{"id": "var_cam"}, "quantity": n}},
		"buyer":      buyer,
		"fulfillment": map[string]any{"methods": []any{map[string]any{"id": mth.ID, "type": "shipping", "line_item_ids": []any{c.LineItems[0].ID},
			"selected_destination_id": *mth.SelectedDestinationID,
			"groups":                  []any{map[string]any{"id": mth.Groups[0].ID, "selected_option_id": s.merchant[host].rates["PAC"]}}}}},
	}})
	if c.Status != bcp.StatusReadyForComplete {
		s.t.Fatalf("not ready: %s %+v", c.Status, c.Messages)
	}
	done := s.complete(host, c.ID, uuid.NewString(), instrument)
	if done.Status == bcp.StatusCompleteInProgress {
		s.pay(host, pixOf(s.t, done).Pix.AttemptID)
		done = s.waitStatus(host, c.ID, bcp.StatusCompleted)
	}
	if done.Status != bcp.StatusCompleted || done.Order == nil {
		s.t.Fatalf("purchase: %s %+v", done.Status, done.Messages)
	}
	return done
}

// text runs a query returning one text value, as the database superuser.
func (s *shopper) text(query string, args ...any) string {
	s.t.Helper()
	conn, err := pgx.Connect(context.Background(), s.db.SuperURL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&v); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return v
}
