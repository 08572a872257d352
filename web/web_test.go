package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/web/internal/pagesec"
	"github.com/bcpdev/bcp/web/internal/webtest"
)

func TestParsePixAmount(t *testing.T) {
	for in, want := range map[string]int64{"123.45": 12345, "0.01": 1, "1.00": 100, "9999999999999.99": 999999999999999} {
		if got, ok := parsePixAmount(in); !ok || got != want {
			t.Errorf("parsePixAmount(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "1", "1.5", "1,50", "-1.00", "1.001", " 1.00", "1e2.00", "99999999999999.00"} {
		if _, ok := parsePixAmount(bad); ok {
			t.Errorf("parsePixAmount(%q) accepted", bad)
		}
	}
	if _, ok := mulCents(1<<62, 4); ok {
		t.Error("mulCents overflow not detected")
	}
	if got := clock(29*60 + 41); got != "29:41" {
		t.Errorf("clock = %q", got)
	}
	if got := clock(3723); got != "1:02:03" {
		t.Errorf("clock = %q", got)
	}
}

type response = webtest.Response

var (
	do             = webtest.Do
	checkHeaders   = webtest.CheckHeaders
	noInlineScript = webtest.NoInlineScript
)

const (
	fakeHost  = "loja.example"
	otherHost = "outra.example"
	attemptID = "pay_01"
	pixCode   = "00020101021226770014BR.GOV.BCB.PIX2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304EEAB"
)

var (
	fakeNow    = time.Date(2030, 5, 1, 17, 0, 19, 0, time.UTC)
	pixExpires = time.Date(2030, 5, 1, 17, 30, 0, 0, time.UTC) // 29:41 after fakeNow
)

func pixDisplayJSON(t *testing.T, d map[string]any) []byte {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"pix": d})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// pixCheckout is a checkout paying by Pix, in the shape the completion
// flow stores: the instrument's display carries the attempt's Pix data.
func pixCheckout(t *testing.T, id string) *bcp.Checkout {
	t.Helper()
	sel := true
	exp := fakeNow.Add(6 * time.Hour)
	return &bcp.Checkout{
		ID: id, Status: bcp.StatusCompleteInProgress, Currency: "BRL",
		Buyer: &bcp.Buyer{Email: "ana@example.com", FirstName: "Ana"},
		LineItems: []bcp.LineItem{{ID: "li_1", Item: bcp.Item{ID: "var_cam", Title: "Camiseta M", Price: 5990}, Quantity: 2,
			Totals: []bcp.Total{{Type: "subtotal", Amount: 11980}, {Type: "total", Amount: 11980}}}},
		Totals:    []bcp.Total{{Type: "subtotal", Amount: 11980}, {Type: "items_discount", Amount: -1198}, {Type: "fulfillment", Amount: 1500}, {Type: "total", Amount: 12282}},
		Links:     []bcp.Link{{Type: "privacy_policy", URL: "https://loja.example/privacidade"}, {Type: "terms_of_service", URL: "javascript:alert(1)"}},
		Messages:  []bcp.Message{bcp.Info("pix_awaiting_payment", "", "Pague R$ 122,82 via Pix até 14:30.")},
		ExpiresAt: &exp,
		Payment: &bcp.Payment{Instruments: []bcp.PaymentInstrument{{ID: "pi_1", HandlerID: "pix_fake", Type: "pix", Selected: &sel,
			Display: pixDisplayJSON(t, map[string]any{
				"copia_e_cola": pixCode, "qr_svg_url": "https://loja.example/pix/pay_01.svg", "qr_png_url": "https://loja.example/pix/pay_01.png",
				"txid": "9f0c4a7e1b2d4c3e8f9a0b1c2d3e4f5a", "amount": "122.82", "expires_at": pixExpires.Format(time.RFC3339), "attempt_id": attemptID,
			})}}},
		Fulfillment: &bcp.Fulfillment{Methods: []bcp.FulfillmentMethod{{
			ID: "fm_1", Type: "shipping", LineItemIDs: []string{"li_1"}, SelectedDestinationID: ptr("dest_1"),
			Destinations: []bcp.Destination{{ID: "dest_1", PostalAddress: bcp.PostalAddress{StreetAddress: "Avenida Paulista, 1000", AddressLocality: "São Paulo", AddressRegion: "SP", PostalCode: "01310-100", FirstName: "Ana"}}},
			Groups: []bcp.FulfillmentGroup{{ID: "g_1", SelectedOptionID: ptr("rate_pac"), Options: []bcp.FulfillmentOption{
				{ID: "rate_sedex", Title: "SEDEX", Totals: []bcp.Total{{Type: "total", Amount: 3000}}},
				{ID: "rate_pac", Title: "PAC", Carrier: "Correios", Description: "5 a 9 dias úteis", Totals: []bcp.Total{{Type: "total", Amount: 1500}}},
			}}},
		}}},
	}
}

func ptr[T any](v T) *T { return &v }

type fakeEnv struct {
	now    atomic.Int64 // unix seconds, read by the handler's clock
	f      *fakeServices
	w      *Web
	base   string
	id     string
	tenant uuid.UUID
}

func newFakeEnv(t *testing.T, handlerEnv string, mutate func(*Options)) *fakeEnv {
	t.Helper()
	e := &fakeEnv{tenant: uuid.New(), id: ids.New("chk")}
	e.f = &fakeServices{tenant: e.tenant, handlerEnv: handlerEnv, checkouts: map[string]*bcp.Checkout{e.id: pixCheckout(t, e.id)}, attempts: map[string]string{}}
	opts := fakeOptions(t, e.f)
	e.setNow(fakeNow)
	opts.Now = func() time.Time { return time.Unix(e.now.Load(), 0) }
	if mutate != nil {
		mutate(&opts)
	}
	e.w = New(opts)
	e.base = serve(t, e.w, map[string]uuid.UUID{fakeHost: e.tenant, otherHost: uuid.New()}).URL
	return e
}

func (e *fakeEnv) setNow(t time.Time) { e.now.Store(t.Unix()) }

func (e *fakeEnv) set(c *bcp.Checkout) {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	e.f.checkouts[c.ID] = c
}

func (e *fakeEnv) simulated() []string {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	return slices.Clone(e.f.simulated)
}

func TestPixPendingPage(t *testing.T) {
	e := newFakeEnv(t, "sandbox", nil)
	r := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	checkHeaders(t, "pix page", r, true)
	noInlineScript(t, r.Body)
	for _, want := range []string{
		"Loja Fake", "Aguardando pagamento", "Pague com Pix",
		`<p class="amount money">R$ 122,82</p>`,
		// The QR on the merchant's own host is made relative (CSP img-src 'self').
		`<img src="/pix/pay_01.svg"`,
		`readonly spellcheck="false" autocomplete="off">` + pixCode + `</textarea>`,
		`data-copy="pix-code"`, "Copiar código Pix",
		`data-remaining="1781"`, `<strong data-countdown-value>29:41</strong>`,
		`<time datetime="2030-05-01T17:30:00Z">01/05/2030 às 14:30</time>`,
		"Simular pagamento", `name="attempt_id" value="pay_01"`,
		`action="/checkout/` + e.id + `/simulate-payment"`,
		// Order summary and totals in the checkout's order.
		"Camiseta M", "2 × R$ 59,90", "R$ 119,80",
		"Avenida Paulista, 1000", "São Paulo – SP", "CEP 01310-100", "PAC · Correios", "5 a 9 dias úteis",
		`href="https://loja.example/privacidade"`, "Política de privacidade",
		`data-status-url="/checkout/` + e.id + `/status" data-poll`,
		`data-panel="paid" aria-live="polite" hidden`, `data-panel="expired" aria-live="polite" hidden`,
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	order := []string{"<dt>Subtotal</dt><dd class=\"money\">R$ 119,80</dd>", "<dt>Descontos</dt><dd class=\"money\">-R$ 11,98</dd>", "<dt>Frete</dt><dd class=\"money\">R$ 15,00</dd>", "<dt>Total</dt><dd class=\"money\">R$ 122,82</dd>"}
	last := -1
	for _, s := range order {
		i := strings.Index(r.Body, s)
		if i <= last {
			t.Fatalf("totals out of order or missing at %q:\n%s", s, r.Body)
		}
		last = i
	}
	// Not shown: the buyer's e-mail, SEDEX (not selected), the javascript: link.
	for _, bad := range []string{"ana@example.com", "SEDEX", "javascript:", "Termos de uso"} {
		if strings.Contains(r.Body, bad) {
			t.Errorf("page shows %q", bad)
		}
	}
	// The CSRF cookie: random, HttpOnly, SameSite=Strict, Secure by default.
	var csrf *http.Cookie
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == csrfCookie {
			csrf = c
		}
	}
	if csrf == nil || !csrf.HttpOnly || !csrf.Secure || csrf.SameSite != http.SameSiteStrictMode || !pagesec.ValidNonce(csrf.Value) {
		t.Fatalf("csrf cookie = %+v", csrf)
	}
	if !strings.Contains(r.Body, `name="csrf_token" value="`+e.w.csrfMAC(e.tenant, e.id, csrf.Value)+`"`) {
		t.Error("form token is not bound to the cookie and checkout")
	}

	// The assets the page names are served with long cache headers.
	for _, ref := range regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`).FindAllStringSubmatch(r.Body, -1) {
		a := do(t, e.base, "GET", fakeHost, ref[1], nil, nil)
		if a.Status != http.StatusOK || a.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || !regexp.MustCompile(`^/static/app\.[0-9a-f]{10}\.(css|js)$`).MatchString(ref[1]) {
			t.Errorf("asset %s: %d %q", ref[1], a.Status, a.Header.Get("Cache-Control"))
		}
		checkHeaders(t, "asset", a, false)
		if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/css") && !strings.HasPrefix(ct, "text/javascript") {
			t.Errorf("asset %s content type %q", ref[1], ct)
		}
	}
	if a := do(t, e.base, "GET", fakeHost, "/static/app.css", nil, nil); a.Status != http.StatusNotFound {
		t.Errorf("unversioned asset name: %d", a.Status)
	}

	// Status: what the page shows, never buyer data.
	s := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id+"/status", nil, nil)
	checkHeaders(t, "status", s, true)
	if s.Status != http.StatusOK || s.Body != `{"status":"complete_in_progress","state":"pix_pending","expires_at":"2030-05-01T17:30:00Z"}`+"\n" {
		t.Fatalf("status = %d %s", s.Status, s.Body)
	}
}

func TestPixPageWithoutSandboxOrSafeQR(t *testing.T) {
	e := newFakeEnv(t, "production", nil)
	c := pixCheckout(t, e.id)
	c.Payment.Instruments[0].Display = pixDisplayJSON(t, map[string]any{
		"copia_e_cola": pixCode, "qr_svg_url": "https://cdn.elsewhere.example/qr.svg", "qr_png_url": "javascript:alert(1)",
		"amount": "122.82", "expires_at": pixExpires.Format(time.RFC3339), "attempt_id": attemptID,
	})
	e.set(c)
	r := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	if r.Status != http.StatusOK || !strings.Contains(r.Body, pixCode) {
		t.Fatalf("status %d", r.Status)
	}
	for _, bad := range []string{"Simular pagamento", "csrf_token", "<img", "elsewhere", "javascript:"} {
		if strings.Contains(r.Body, bad) {
			t.Errorf("production page shows %q", bad)
		}
	}
	if r.Header.Get("Set-Cookie") != "" {
		t.Errorf("no form, no cookie: %q", r.Header.Get("Set-Cookie"))
	}
}

func TestPixDisplayFromAttempt(t *testing.T) {
	// The checkout may carry only the attempt id: the page asks payments.
	e := newFakeEnv(t, "sandbox", nil)
	c := pixCheckout(t, e.id)
	c.Payment.Instruments[0].Display = pixDisplayJSON(t, map[string]any{"attempt_id": attemptID})
	e.set(c)
	e.f.mu.Lock()
	e.f.attempts[attemptID] = string(pixDisplayJSON(t, map[string]any{
		"copia_e_cola": pixCode, "qr_png_url": "/pix/pay_01.png", "amount": "122.82", "expires_at": pixExpires.Format(time.RFC3339),
	}))
	e.f.mu.Unlock()
	r := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	for _, want := range []string{pixCode, `<img src="/pix/pay_01.png"`, `name="attempt_id" value="pay_01"`, "29:41"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func csrfCookieFrom(t *testing.T, r response) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == csrfCookie {
			return c
		}
	}
	t.Fatal("no csrf cookie")
	return nil
}

// flipChar changes s at i to another character (a fixed replacement was
// the same character one token in 64, and the test then saw its "wrong"
// token accepted: found by CI).
func flipChar(s string, i int) string {
	c := byte('x')
	if s[i] == c {
		c = 'y'
	}
	return s[:i] + string(c) + s[i+1:]
}

func TestSimulatePayment(t *testing.T) {
	e := newFakeEnv(t, "sandbox", nil)
	page := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	cookie := csrfCookieFrom(t, page)
	token := e.w.csrfMAC(e.tenant, e.id, cookie.Value)
	withCookie := http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}, "Origin": {"http://" + fakeHost}, "Sec-Fetch-Site": {"same-origin"}}
	post := func(host, id string, h http.Header, form url.Values) response {
		return do(t, e.base, "POST", host, "/checkout/"+id+"/simulate-payment", h, form)
	}

	refused := []struct {
		what string
		r    response
	}{
		{"no token", post(fakeHost, e.id, withCookie, url.Values{"attempt_id": {attemptID}})},
		{"no cookie", post(fakeHost, e.id, http.Header{"Sec-Fetch-Site": {"same-origin"}}, url.Values{"csrf_token": {token}, "attempt_id": {attemptID}})},
		{"wrong token", post(fakeHost, e.id, withCookie, url.Values{"csrf_token": {flipChar(token, 10)}, "attempt_id": {attemptID}})},
		{"token of another checkout", post(fakeHost, e.id, withCookie, url.Values{"csrf_token": {e.w.csrfMAC(e.tenant, ids.New("chk"), cookie.Value)}, "attempt_id": {attemptID}})},
		{"cross-site", post(fakeHost, e.id, http.Header{"Cookie": withCookie["Cookie"], "Sec-Fetch-Site": {"cross-site"}}, url.Values{"csrf_token": {token}, "attempt_id": {attemptID}})},
	}
	for _, c := range refused {
		if c.r.Status != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", c.what, c.r.Status)
		}
		checkHeaders(t, c.what, c.r, true)
	}
	if got := e.simulated(); len(got) != 0 {
		t.Fatalf("refused posts reached payments: %v", got)
	}

	// Another merchant's host: the token does not verify there (the tenant
	// is part of it) and nothing is found anyway.
	if r := post(otherHost, e.id, withCookie, url.Values{"csrf_token": {token}, "attempt_id": {attemptID}}); r.Status != http.StatusForbidden {
		t.Errorf("other tenant: %d", r.Status)
	}

	// A stale page (another attempt) goes back without paying.
	r := post(fakeHost, e.id, withCookie, url.Values{"csrf_token": {token}, "attempt_id": {"pay_old"}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/checkout/"+e.id {
		t.Fatalf("stale attempt: %d %q", r.Status, r.Header.Get("Location"))
	}

	r = post(fakeHost, e.id, withCookie, url.Values{"csrf_token": {token}, "attempt_id": {attemptID}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/checkout/"+e.id+"?simulado=1" {
		t.Fatalf("simulate: %d %q %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	if got := e.simulated(); !slices.Equal(got, []string{attemptID}) {
		t.Fatalf("simulated attempts = %v", got)
	}
	back := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id+"?simulado=1", withCookie, nil)
	if !strings.Contains(back.Body, "Pagamento simulado enviado") {
		t.Error("no notice after simulating")
	}
	if back.Header.Get("Set-Cookie") != "" {
		t.Error("an existing nonce cookie must be kept, not replaced")
	}
}

func TestSimulateRefusedInProduction(t *testing.T) {
	for name, env := range map[string]struct {
		handler string
		opts    string
	}{
		"production handler":    {handler: "production"},
		"production deployment": {handler: "sandbox", opts: EnvironmentProduction},
	} {
		t.Run(name, func(t *testing.T) {
			e := newFakeEnv(t, env.handler, func(o *Options) { o.Environment = env.opts })
			page := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
			if strings.Contains(page.Body, "Simular pagamento") {
				t.Fatal("production page offers a simulated payment")
			}
			// A well-formed token (made with the handler's key) is still refused.
			nonce := strings.Repeat("A", 43)
			r := do(t, e.base, "POST", fakeHost, "/checkout/"+e.id+"/simulate-payment",
				http.Header{"Cookie": {csrfCookie + "=" + nonce}, "Sec-Fetch-Site": {"same-origin"}},
				url.Values{"csrf_token": {e.w.csrfMAC(e.tenant, e.id, nonce)}, "attempt_id": {attemptID}})
			if r.Status != http.StatusForbidden {
				t.Fatalf("status %d, want 403", r.Status)
			}
			if got := e.simulated(); len(got) != 0 {
				t.Fatalf("payments called: %v", got)
			}
		})
	}
}

func TestPaidExpiredCanceledEscalation(t *testing.T) {
	e := newFakeEnv(t, "sandbox", nil)

	// Completed: thank-you state with the order.
	c := pixCheckout(t, e.id)
	c.Status = bcp.StatusCompleted
	c.Messages = nil
	c.Order = &bcp.OrderRef{ID: "ord_1", Label: "#1001", PermalinkURL: "https://loja.example/orders/ord_1"}
	e.set(c)
	r := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	for _, want := range []string{"Pagamento confirmado", `<span class="badge badge-ok">Pago</span>`, "<strong data-order-label>#1001</strong>", `href="https://loja.example/orders/ord_1"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("paid page lacks %q", want)
		}
	}
	if strings.Contains(r.Body, "data-poll") || strings.Contains(r.Body, pixCode) || strings.Contains(r.Body, "Simular") {
		t.Error("a paid page must not poll or show the Pix")
	}
	s := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id+"/status", nil, nil)
	if s.Body != `{"status":"completed","state":"paid","order":{"id":"ord_1","label":"#1001","permalink_url":"https://loja.example/orders/ord_1"}}`+"\n" {
		t.Errorf("paid status = %s", s.Body)
	}

	// Back to ready_for_complete after the Pix expired.
	c = pixCheckout(t, e.id)
	c.Status = bcp.StatusReadyForComplete
	c.Messages = []bcp.Message{bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, "", "Pix expirou")}
	e.set(c)
	e.setNow(pixExpires.Add(time.Second))
	r = do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	for _, want := range []string{"<h1>Pix expirado</h1>", "Nada foi cobrado", "gerar um novo Pix"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("expired page lacks %q", want)
		}
	}
	if strings.Contains(r.Body, pixCode) {
		t.Error("an expired Pix code is still shown")
	}
	if s := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id+"/status", nil, nil); !strings.Contains(s.Body, `"state":"pix_expired"`) {
		t.Errorf("expired status = %s", s.Body)
	}
	// Removed before its time: refused, not expired.
	e.setNow(fakeNow)
	if r := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil); !strings.Contains(r.Body, "Pagamento não aprovado") {
		t.Error("payment_failed before expiry must read as refused")
	}

	// As the completion flow reopens a checkout: the instrument is gone,
	// only the message says why.
	for content, want := range map[string]string{
		"O Pix expirou sem pagamento; conclua novamente para gerar outro (com uma nova chave de idempotência).": "pix_expired",
		"O pagamento foi recusado. Tente outro meio de pagamento, com uma nova chave de idempotência.":          "payment_failed",
	} {
		c = pixCheckout(t, e.id)
		c.Status, c.Payment = bcp.StatusReadyForComplete, nil
		c.Messages = []bcp.Message{bcp.Error(bcp.CodePaymentFailed, bcp.SeverityRecoverable, "$.payment.instruments[0]", content)}
		e.set(c)
		s := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id+"/status", nil, nil)
		if !strings.Contains(s.Body, `"state":"`+want+`"`) {
			t.Errorf("%q: status %s, want state %s", content, s.Body, want)
		}
		if r := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil); strings.Contains(r.Body, "idempotência") {
			t.Error("the agent-directed message is shown to the buyer")
		}
	}

	// Canceled by expiry.
	c = pixCheckout(t, e.id)
	c.Status, c.Payment = bcp.StatusCanceled, nil
	c.Messages = []bcp.Message{bcp.Info("expired", "", "Este checkout expirou; inicie um novo.")}
	e.set(c)
	r = do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	if !strings.Contains(r.Body, "Este checkout expirou") || strings.Contains(r.Body, "data-poll") {
		t.Errorf("canceled page: %s", r.Body)
	}

	// requires_escalation: the messages, prominently, with what to do.
	c = pixCheckout(t, e.id)
	c.Status, c.Payment = bcp.StatusRequiresEscalation, nil
	c.ContinueURL = "https://loja.example/checkout/" + e.id
	c.Messages = []bcp.Message{bcp.Error("missing", bcp.SeverityRequiresBuyerInput, "$.buyer.phone_number", "Informe um telefone <celular> para a entrega.")}
	e.set(c)
	r = do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil)
	for _, want := range []string{"Ação necessária", "<strong>Informe um telefone &lt;celular&gt; para a entrega.</strong>", "Informe isso ao seu assistente de compras"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("escalation page lacks %q", want)
		}
	}
	if strings.Contains(r.Body, "Continuar no banco") {
		t.Error("continue_url is this page: no button")
	}
	// 3DS: continue_url is the bank's page, and the page sends the buyer there.
	c.ContinueURL = "https://banco.example/3ds/abc"
	e.set(c)
	if r := do(t, e.base, "GET", fakeHost, "/checkout/"+e.id, nil, nil); !strings.Contains(r.Body, `href="https://banco.example/3ds/abc" rel="noopener">Continuar no banco</a>`) {
		t.Error("no link to the bank's challenge page")
	}
}

func TestNotFoundAndOrders(t *testing.T) {
	e := newFakeEnv(t, "sandbox", nil)
	for _, c := range []struct{ host, path string }{
		{fakeHost, "/checkout/" + ids.New("chk")},
		{fakeHost, "/checkout/not-an-id"},
		{otherHost, "/checkout/" + e.id},
		{fakeHost, "/orders/" + ids.New("ord")}, // GetOrder unimplemented
	} {
		r := do(t, e.base, "GET", c.host, c.path, nil, nil)
		if r.Status != http.StatusNotFound || !strings.Contains(r.Body, "Página não encontrada") {
			t.Errorf("%s%s: %d", c.host, c.path, r.Status)
		}
		checkHeaders(t, c.path, r, true)
		if strings.Contains(r.Body, "Camiseta") || strings.Contains(r.Body, "Loja Fake") {
			t.Errorf("%s%s leaks the checkout", c.host, c.path)
		}
	}
	s := do(t, e.base, "GET", otherHost, "/checkout/"+e.id+"/status", nil, nil)
	if s.Status != http.StatusNotFound || s.Body != `{"code":"not_found","content":"Not Found"}`+"\n" {
		t.Errorf("other tenant status: %d %s", s.Status, s.Body)
	}

	ord := ids.New("ord")
	e.f.mu.Lock()
	e.f.orders = map[string]string{ord: `{"id":"` + ord + `","label":"#1001","checkout_id":"` + e.id + `","currency":"BRL",
		"line_items":[{"id":"li_1","item":{"id":"var_cam","title":"Camiseta <b>M</b>","price":5990},"quantity":{"total":2,"fulfilled":0}}],
		"totals":[{"type":"subtotal","amount":11980},{"type":"total","amount":11980}],
		"fulfillment":{"expectations":[{"id":"e1","method_type":"shipping","description":"Chega em 5 a 9 dias úteis","destination":{"street_address":"Avenida Paulista, 1000","postal_code":"01310-100"}}],
		"events":[{"id":"ev1","occurred_at":"2030-05-02T12:00:00Z","type":"shipped","tracking_number":"BR123","tracking_url":"https://rastreio.example/BR123","line_items":[]}]}}`}
	e.f.mu.Unlock()
	r := do(t, e.base, "GET", fakeHost, "/orders/"+ord, nil, nil)
	checkHeaders(t, "order", r, true)
	for _, want := range []string{"Pedido #1001", "Camiseta &lt;b&gt;M&lt;/b&gt;", "R$ 119,80", "Chega em 5 a 9 dias úteis", "Enviado", "02/05/2030 às 09:00", `href="https://rastreio.example/BR123"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("order page lacks %q", want)
		}
	}
	if r := do(t, e.base, "GET", otherHost, "/orders/"+ord, nil, nil); r.Status != http.StatusNotFound {
		t.Errorf("order on another tenant: %d", r.Status)
	}
}
