package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/protocol/bcp"
)

// The whole story in a real browser: a merchant signs in to the admin and
// creates a product (price typed in R$), a shipping rate and a discount
// code; an agent buys with them over MCP; the buyer opens continue_url,
// sees the Pix and clicks "Simular pagamento"; the merchant refunds part
// of the order from its page; another merchant cannot reach any of it by
// URL. The admin and the payment form work without JavaScript, so the
// browser fills forms and clicks their buttons.
func TestBrowserMerchantAgentBuyer(t *testing.T) {
	const hostA, hostB = "loja-a.localhost", "loja-b.localhost"
	chromiumPath(t) // before any setup: a missing browser fails (or skips) at once
	s := newShopper(t, 0, hostA, hostB)
	c := newChrome(t, s.r)

	// 1. The merchant signs in (the admin sends it to the sign-in page first).
	adm := c.tab(true)
	if st := adm.open(hostA, "/admin/produtos"); st != 200 || !strings.HasPrefix(adm.location(), adm.url(hostA, "/admin/entrar?next=")) {
		t.Fatalf("signed-out admin: %d at %s", st, adm.location())
	}
	adm.fill(`input[name=email]`, "dona@loja-a.com.br")
	adm.fill(`input[name=password]`, invite(t, s.r, s.merchant[hostA].tenantID.String(), "dona@loja-a.com.br"))
	adm.screenshot("admin-entrar")
	if st := adm.submit(`form[action="/admin/entrar"] button[type=submit]`); st != 200 || adm.location() != adm.url(hostA, "/admin/produtos") {
		t.Fatalf("sign-in: %d at %s", st, adm.location())
	}
	if h := adm.text("h1"); h != "Produtos" {
		t.Fatalf("after sign-in the page says %q", h)
	}

	// 2. A product, the price typed as a merchant would.
	adm.open(hostA, "/admin/produtos/novo")
	adm.fields("title", "Garrafa Térmica", "v0_sku", "GAR-500", "v0_title", "Garrafa inox 500 ml", "v0_price", "R$ 89,90", "v0_stock", "5")
	adm.screenshot("produto-novo")
	if st := adm.submit(`form[action="/admin/produtos/novo"] button[type=submit]`); st != 200 || !strings.HasSuffix(adm.location(), "?ok=criado") {
		t.Fatalf("create product: %d at %s", st, adm.location())
	}
	productID := strings.TrimSuffix(strings.TrimPrefix(adm.location(), adm.url(hostA, "/admin/produtos/")), "?ok=criado")
	variantID := adm.value(`input[name=v0_id]`)
	if n := adm.text(".notice"); n != "Produto criado." || adm.value(`input[name=v0_price]`) != "89,90" || variantID == "" {
		t.Fatalf("created product page: notice %q, price %q, variant %q", n, adm.value(`input[name=v0_price]`), variantID)
	}
	adm.screenshot("produto-criado")

	// 3. A shipping rate.
	adm.open(hostA, "/admin/frete/nova")
	adm.fields("title", "Expressa Loja A", "carrier", "Loggi", "price", "19,90", "min_days", "1", "max_days", "2")
	if st := adm.submit(`form[action="/admin/frete/nova"] button[type=submit]`); st != 200 || adm.location() != adm.url(hostA, "/admin/frete?ok=salvo") {
		t.Fatalf("create rate: %d at %s", st, adm.location())
	}
	if body := adm.text("body"); !strings.Contains(body, "Expressa Loja A") || !strings.Contains(body, "R$ 19,90") {
		t.Fatalf("shipping page lacks the new rate:\n%s", body)
	}
	adm.screenshot("frete")

	// 4. A discount code: R$ 15,00 off.
	adm.open(hostA, "/admin/descontos/novo")
	adm.fill(`input[name=code]`, "GARRAFA15")
	adm.fill(`input[name=title]`, "R$ 15 na garrafa")
	adm.step("choose a fixed discount", chromedp.SetValue(chromedp.CSS(`select[name=kind]`), "fixed"))
	adm.fill(`input[name=value]`, "15,00")
	if st := adm.submit(`form[action="/admin/descontos/novo"] button[type=submit]`); st != 200 || adm.location() != adm.url(hostA, "/admin/descontos?ok=salvo") {
		t.Fatalf("create discount: %d at %s", st, adm.location())
	}
	if body := adm.text("body"); !strings.Contains(body, "GARRAFA15") {
		t.Fatalf("discounts page lacks the new code:\n%s", body)
	}
	adm.screenshot("descontos")

	// 5. An agent buys two bottles with the new rate and code, over MCP,
	// reaching the store at the port the browser uses too (so the URLs it
	// gets back, continue_url and the Pix QR, carry that port).
	ag := &agent{t: t, s: portAgent(t, s, hostA, c.port), profile: s.profile, v: s.v}
	address := map[string]any{"street_address": "Rua Augusta, 500", "address_locality": "São Paulo", "address_region": "SP", "postal_code": "01305-000", "address_country": "BR"}
	_, ck := ag.call("create_checkout", map[string]any{"checkout": map[string]any{
		"line_items":  []any{map[string]any{"item": map[string]any{"id": variantID}, "quantity": 2}},
		"buyer":       map[string]any{"email": "bia@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{address}}}},
	}})
	if len(ck.LineItems) != 1 || ck.LineItems[0].Item.Price != 8990 || ck.LineItems[0].Item.Title != "Garrafa inox 500 ml" {
		t.Fatalf("line items %+v", ck.LineItems)
	}
	mth := ck.Fulfillment.Methods[0]
	express := ""
	for _, o := range mth.Groups[0].Options {
		if o.Title == "Expressa Loja A" && len(o.Totals) > 0 && o.Totals[0].Amount == 1990 {
			express = o.ID
		}
	}
	if express == "" {
		t.Fatalf("the admin's rate is not offered: %+v", mth.Groups[0].Options)
	}
	_, ck = ag.call("update_checkout", map[string]any{"id": ck.ID, "checkout": map[string]any{
		"line_items": []any{map[string]any{"id": ck.LineItems[0].ID, "item": map[string]any{"id": variantID}, "quantity": 2}},
		"buyer":      map[string]any{"email": "bia@example.com"},
		"fulfillment": map[string]any{"methods": []any{map[string]any{"id": mth.ID, "type": "shipping", "line_item_ids": []any{ck.LineItems[0].ID},
			"selected_destination_id": *mth.SelectedDestinationID,
			"groups":                  []any{map[string]any{"id": mth.Groups[0].ID, "selected_option_id": express}}}}},
		"discounts": map[string]any{"codes": []any{"garrafa15"}},
	}})
	// 2 × 8990 = 17980 − 1500 + 1990 = 18470.
	if got := totals(ck); ck.Status != bcp.StatusReadyForComplete || got["subtotal"] != 17980 || got["items_discount"] != -1500 || got["fulfillment"] != 1990 || got["total"] != 18470 {
		t.Fatalf("checkout %s totals %v messages %+v", ck.Status, got, ck.Messages)
	}
	args := completeArgs(ck.ID, uuid.NewString(), s.pixInstrument(hostA))
	args["meta"].(map[string]any)["ucp-agent"] = map[string]any{"profile": s.profile}
	_, pending := ag.call("complete_checkout", args)
	pix := pixOf(t, pending)
	if pending.ContinueURL != "http://"+hostA+":"+c.port+"/checkout/"+ck.ID {
		t.Fatalf("continue_url %q", pending.ContinueURL)
	}

	// 6. The buyer opens continue_url: the Pix is there; the sandbox pays it.
	buyer := c.tab(true)
	if st := buyer.navigation("open continue_url", chromedp.Navigate(pending.ContinueURL)); st != 200 {
		t.Fatalf("checkout page: %d", st)
	}
	if code := buyer.value(`#pix-code`); code != pix.Pix.CopiaECola || !strings.HasPrefix(code, "000201") {
		t.Fatalf("copia e cola on the page %q, want %q", code, pix.Pix.CopiaECola)
	}
	if amount := buyer.text(`[data-panel=pix] .amount`); amount != "R$ 184,70" {
		t.Fatalf("amount on the page %q", amount)
	}
	if !eval[bool](buyer, `(() => { const i = document.querySelector('.qr img'); return !!i && i.complete && i.naturalWidth > 0 })()`) {
		buyer.screenshot("pix-sem-qr")
		t.Fatalf("the Pix QR code image did not load (pix %+v): %s", pix.Pix, eval[string](buyer, `(document.querySelector('.qr') || document.body).outerHTML`))
	}
	buyer.screenshot("pix")
	if st := buyer.submit(`form.sandbox button[type=submit]`); st != 200 {
		t.Fatalf("simulate payment: %d", st)
	}
	// The page confirms by itself (live status) or already on reload.
	buyer.step("wait for the paid panel", chromedp.WaitVisible(chromedp.CSS(`[data-panel=paid]`)))
	if h := buyer.text(`[data-panel=paid] h1`); h != "Pagamento confirmado" {
		t.Fatalf("paid panel says %q", h)
	}
	_, done := ag.call("get_checkout", map[string]any{"id": ck.ID})
	if done.Status != bcp.StatusCompleted {
		t.Fatalf("the page shows paid but the checkout is %s", done.Status)
	}
	if done.Order == nil || !strings.HasPrefix(done.Order.ID, "ord_") || totals(done)["total"] != 18470 {
		t.Fatalf("completed checkout %+v totals %v", done.Order, totals(done))
	}
	orderID := done.Order.ID
	buyer.step("wait for the order reference", chromedp.WaitVisible(chromedp.CSS(`[data-order]`)))
	// The buyer reads the order's number, as the merchant's admin shows it.
	if l := buyer.text(`[data-order-label]`); l != "#1001" || done.Order.Label != "#1001" {
		t.Fatalf("paid page names the order %q (label %q)", l, done.Order.Label)
	}
	buyer.screenshot("pago")

	// 7. The merchant finds the order and refunds R$ 25,50 of it.
	adm.open(hostA, "/admin/pedidos")
	if n := adm.text(`tr[data-order="` + orderID + `"] [data-col=pedido]`); n != "#1001" {
		t.Fatalf("orders page names %s %q", orderID, n)
	}
	adm.screenshot("pedidos")
	if st := adm.open(hostA, "/admin/pedidos/"+orderID); st != 200 || !strings.Contains(adm.text("body"), "Garrafa inox 500 ml") {
		t.Fatalf("order page: %d", st)
	}
	adm.fill(`input[name=amount]`, "25,50")
	adm.fill(`input[name=reason]`, "Tampa com defeito")
	if st := adm.submit(`form[action$="/reembolso"] button[type=submit]`); st != 200 || adm.location() != adm.url(hostA, "/admin/pedidos/"+orderID+"?ok=reembolso") {
		t.Fatalf("refund: %d at %s", st, adm.location())
	}
	var order bcp.Order
	eventually(t, 30*time.Second, "refund adjustment completed", func() bool {
		res, err := ag.callErr("get_order", map[string]any{"id": orderID})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		order = bcp.Order{}
		if err := json.Unmarshal(raw, &order); err != nil {
			t.Fatal(err)
		}
		return len(order.Adjustments) == 1 && order.Adjustments[0].Status == bcp.AdjustmentCompleted
	})
	adj := order.Adjustments[0]
	if adj.Type != bcp.AdjustmentRefund || len(adj.Totals) == 0 || totalOf(adj.Totals, "total") != -2550 {
		t.Fatalf("refund adjustment %+v", adj)
	}
	adm.open(hostA, "/admin/pedidos/"+orderID)
	if li := adm.text(`#ajustes .adjustment`); !strings.Contains(li, "Concluído") || !strings.Contains(li, "-R$ 25,50") || !strings.Contains(li, "Tampa com defeito") {
		t.Fatalf("order page adjustment %q", li)
	}
	adm.screenshot("pedido-reembolsado")

	// 8. On a phone the dashboard and the orders page fit the screen (no
	// sideways scroll).
	adm.step("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait))
	for _, p := range [][2]string{{"/admin/", "celular-painel"}, {"/admin/pedidos", "celular-pedidos"}} {
		path, name := p[0], p[1]
		if st := adm.open(hostA, path); st != 200 {
			t.Fatalf("%s on a phone: %d", path, st)
		}
		adm.screenshot(name)
		if w := eval[int](adm, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
			t.Errorf("%s is %d px wider than a 390 px phone", path, w)
		}
	}

	// 9. Another merchant, signed in, reaches none of it by URL.
	other := c.tab(true)
	other.open(hostB, "/admin/entrar")
	other.fill(`input[name=email]`, "dono@loja-b.com.br")
	other.fill(`input[name=password]`, invite(t, s.r, s.merchant[hostB].tenantID.String(), "dono@loja-b.com.br"))
	if st := other.submit(`form[action="/admin/entrar"] button[type=submit]`); st != 200 || !strings.HasPrefix(other.location(), other.url(hostB, "/admin/")) {
		t.Fatalf("merchant B sign-in: %d at %s", st, other.location())
	}
	for _, path := range []string{"/admin/produtos/" + productID, "/admin/pedidos/" + orderID, "/admin/checkouts/" + ck.ID} {
		if st := other.open(hostB, path); st != 404 {
			t.Fatalf("merchant B at %s: %d", path, st)
		}
		if h := other.text("h1"); h != "Não encontrado" {
			t.Fatalf("merchant B at %s sees %q", path, h)
		}
		page := other.html()
		for _, leak := range []string{"Garrafa", "GAR-500", "bia@example.com", "Rua Augusta", productID, variantID, orderID, ck.ID, "89,90", "184,70"} {
			if strings.Contains(page, leak) {
				t.Fatalf("merchant B's 404 at %s shows %q", path, leak)
			}
		}
	}
	other.screenshot("outra-loja-404")
}

func totalOf(ts []bcp.Total, typ string) int64 {
	var n int64
	for _, t := range ts {
		if t.Type == typ {
			n += t.Amount
		}
	}
	return n
}
