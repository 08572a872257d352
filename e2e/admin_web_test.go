package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// browser is a cookie-keeping HTTP client that reaches the platform's
// public listener for any host, like a browser resolving *.localhost.
type browser struct {
	t    *testing.T
	c    *http.Client
	host string
}

func newBrowser(t *testing.T, r *platform.Running, host string) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, r.PublicAddr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &browser{t: t, host: host, c: &http.Client{Jar: jar, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
	header   http.Header
}

func (b *browser) do(method, path string, form url.Values, hdr ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "http://"+b.host+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(raw), header: resp.Header}
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF field in page (%d):\n%s", p.status, p.body)
	}
	return html.UnescapeString(m[1])
}

func (b *browser) cookie(name string) *http.Cookie {
	for _, c := range b.c.Jar.Cookies(&url.URL{Scheme: "http", Host: b.host, Path: "/admin/"}) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (b *browser) signIn(email, password string) page {
	b.t.Helper()
	login := b.do("GET", "/admin/entrar", nil)
	if login.status != 200 {
		b.t.Fatalf("sign-in page: %d", login.status)
	}
	return b.do("POST", "/admin/entrar", url.Values{"_csrf": {csrfOf(b.t, login)}, "email": {email}, "password": {password}, "next": {"/admin/produtos"}})
}

func invite(t *testing.T, r *platform.Running, tenant, email string) string {
	t.Helper()
	resp, err := operatorClient(r).InviteMerchantUser(context.Background(), connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: tenant, Email: email}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Msg.GetInitialPassword()) < 16 {
		t.Fatalf("weak initial password %q", resp.Msg.GetInitialPassword())
	}
	return resp.Msg.GetInitialPassword()
}

// Sign-in with argon2id passwords and server-side sessions, CSRF on every
// form, lockout with backoff, logout, and no way across tenants.
func TestAdminSignInSessionsAndIsolation(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	alfa := setupMerchant(t, r, "Loja Alfa", "alfa.localhost", 0)
	beta := setupMerchant(t, r, "Loja Beta", "beta.localhost", 0)
	alfaPass := invite(t, r, alfa.tenantID.String(), "Dona@Alfa.com.br")
	betaPass := invite(t, r, beta.tenantID.String(), "dono@beta.com.br")
	if _, err := operatorClient(r).InviteMerchantUser(context.Background(), connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: alfa.tenantID.String(), Email: "dona@alfa.com.br"})); err == nil {
		t.Fatal("same e-mail invited twice")
	}

	b := newBrowser(t, r, "alfa.localhost")
	// Signed out: pages send to the sign-in page, posts are refused.
	if p := b.do("GET", "/admin/pedidos", nil); p.status != 303 || p.location != "/admin/entrar?next=%2Fadmin%2Fpedidos" {
		t.Fatalf("signed-out page: %d %q", p.status, p.location)
	}
	if p := b.do("POST", "/admin/produtos/novo", url.Values{"title": {"x"}}); p.status != 403 {
		t.Fatalf("signed-out post: %d", p.status)
	}
	// The sign-in form itself needs its token.
	if p := b.do("POST", "/admin/entrar", url.Values{"email": {"dona@alfa.com.br"}, "password": {alfaPass}}); p.status != 403 {
		t.Fatalf("sign-in without CSRF token: %d", p.status)
	}
	if p := b.signIn("dona@alfa.com.br", "errada"); p.status != 401 || !strings.Contains(p.body, "E-mail ou senha incorretos.") || !strings.Contains(p.body, `value="dona@alfa.com.br"`) {
		t.Fatalf("wrong password: %d\n%s", p.status, p.body)
	}
	// Another tenant's user does not exist here.
	if p := b.signIn("dono@beta.com.br", betaPass); p.status != 401 {
		t.Fatalf("beta's user signed in at alfa: %d", p.status)
	}
	p := b.signIn("DONA@alfa.com.br", alfaPass)
	if p.status != 303 || p.location != "/admin/produtos" {
		t.Fatalf("sign-in: %d %q\n%s", p.status, p.location, p.body)
	}
	set := p.header.Get("Set-Cookie")
	for _, want := range []string{"bcp_admin=", "Path=/admin", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(set, want) {
			t.Fatalf("session cookie %q lacks %s", set, want)
		}
	}
	sess := b.cookie("bcp_admin")
	if sess == nil {
		t.Fatal("no session cookie")
	}
	s := &shopper{t: t, db: d}
	sum := sha256.Sum256([]byte(sess.Value))
	if n := s.sql(`SELECT count(*) FROM tenants.merchant_sessions WHERE token_hash = $1`, sum[:]); n != 1 {
		t.Fatalf("%d sessions stored under the token's hash", n)
	}
	if n := s.sql(`SELECT count(*) FROM tenants.merchant_sessions WHERE token_hash = $1`, []byte(sess.Value)); n != 0 {
		t.Fatal("session token stored in clear")
	}
	if n := s.sql(`SELECT count(*) FROM tenants.merchant_users WHERE password_hash LIKE '$argon2id$v=19$m=65536,t=3,p=1$%'`); n != 2 {
		t.Fatalf("%d argon2id password hashes, want 2", n)
	}
	list := b.do("GET", "/admin/produtos", nil)
	if list.status != 200 || !strings.Contains(list.body, "Camiseta") || !strings.Contains(list.body, "R$ 59,90") {
		t.Fatalf("products: %d\n%s", list.status, list.body)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Cache-Control"} {
		if list.header.Get(h) == "" {
			t.Errorf("admin page without %s", h)
		}
	}
	token := csrfOf(t, list)
	// CSRF: no token, a wrong token, a cross-site post.
	form := url.Values{"title": {"Boné"}, "variants": {"1"}, "v0_sku": {"BON"}, "v0_title": {"Boné azul"}, "v0_price": {"10"}, "v0_stock": {"1"}}
	if p := b.do("POST", "/admin/produtos/novo", form); p.status != 403 {
		t.Fatalf("post without token: %d", p.status)
	}
	form.Set("_csrf", token+"x")
	if p := b.do("POST", "/admin/produtos/novo", form); p.status != 403 {
		t.Fatalf("post with a wrong token: %d", p.status)
	}
	form.Set("_csrf", token)
	if p := b.do("POST", "/admin/produtos/novo", form, "Sec-Fetch-Site", "cross-site"); p.status != 403 {
		t.Fatalf("cross-site post: %d", p.status)
	}

	// Alfa's session cookie means nothing on beta's host, and beta's admin
	// cannot reach alfa's records by URL.
	stolen := newBrowser(t, r, "beta.localhost")
	stolen.c.Jar.SetCookies(&url.URL{Scheme: "http", Host: "beta.localhost", Path: "/admin/"}, []*http.Cookie{{Name: "bcp_admin", Value: sess.Value, Path: "/admin"}})
	if p := stolen.do("GET", "/admin/produtos", nil); p.status != 303 || !strings.HasPrefix(p.location, "/admin/entrar") {
		t.Fatalf("alfa's session on beta's host: %d %q", p.status, p.location)
	}
	bb := newBrowser(t, r, "beta.localhost")
	if p := bb.signIn("dono@beta.com.br", betaPass); p.status != 303 {
		t.Fatalf("beta sign-in: %d", p.status)
	}
	created := b.do("POST", "/admin/produtos/novo", form)
	if created.status != 303 {
		t.Fatalf("create at alfa: %d\n%s", created.status, created.body)
	}
	alfaProduct := strings.TrimSuffix(created.location, "?ok=criado")
	if p := bb.do("GET", alfaProduct, nil); p.status != 404 {
		t.Fatalf("beta reads alfa's product %s: %d", alfaProduct, p.status)
	}
	betaToken := csrfOf(t, bb.do("GET", "/admin/produtos", nil))
	edit := url.Values{"_csrf": {betaToken}, "title": {"Roubado"}, "variants": {"1"}, "v0_sku": {"BON"}, "v0_title": {"x"}, "v0_price": {"1"}}
	if p := bb.do("POST", alfaProduct, edit); p.status != 404 {
		t.Fatalf("beta edits alfa's product: %d", p.status)
	}
	if p := bb.do("GET", "/admin/produtos", nil); strings.Contains(p.body, "Boné") {
		t.Fatal("alfa's product listed at beta")
	}
	// Alfa's CSRF token is worthless with beta's session.
	edit.Set("_csrf", token)
	if p := bb.do("POST", "/admin/produtos/novo", edit); p.status != 403 {
		t.Fatalf("alfa's token at beta: %d", p.status)
	}

	// Lockout: the fifth wrong password locks the user; while locked even
	// the right password is refused; other users are unaffected.
	lb := newBrowser(t, r, "beta.localhost")
	for i := 1; i <= 5; i++ {
		p := lb.signIn("dono@beta.com.br", "chute-"+string(rune('0'+i)))
		want := 401
		if i == 5 {
			want = 429
		}
		if p.status != want {
			t.Fatalf("failure %d: %d, want %d", i, p.status, want)
		}
	}
	if p := lb.signIn("dono@beta.com.br", betaPass); p.status != 429 || !strings.Contains(p.body, "bloqueado") {
		t.Fatalf("locked user with the right password: %d", p.status)
	}
	if n := s.sql(`SELECT count(*) FROM tenants.merchant_users WHERE email = 'dono@beta.com.br' AND locked_until > now() + interval '20 seconds'`); n != 1 {
		t.Fatal("user not locked")
	}
	// Existing sessions survive a lockout of new sign-ins; alfa is unaffected.
	if p := bb.do("GET", "/admin/produtos", nil); p.status != 200 {
		t.Fatalf("beta's existing session: %d", p.status)
	}
	s.exec(`UPDATE tenants.merchant_users SET locked_until = now() - interval '1 second' WHERE email = 'dono@beta.com.br'`)
	// After the lock, one more failure locks again, for longer (backoff).
	lb.signIn("dono@beta.com.br", "chute-6")
	if n := s.sql(`SELECT count(*) FROM tenants.merchant_users WHERE email = 'dono@beta.com.br' AND locked_until > now() + interval '50 seconds'`); n != 1 {
		t.Fatal("the sixth failure did not double the lock")
	}

	// Logout ends the session server-side: the old cookie is dead.
	if p := b.do("POST", "/admin/sair", url.Values{"_csrf": {token}}); p.status != 303 || p.location != "/admin/entrar" {
		t.Fatalf("logout: %d %q", p.status, p.location)
	}
	replay := newBrowser(t, r, "alfa.localhost")
	replay.c.Jar.SetCookies(&url.URL{Scheme: "http", Host: "alfa.localhost", Path: "/admin/"}, []*http.Cookie{{Name: "bcp_admin", Value: sess.Value, Path: "/admin"}})
	if p := replay.do("GET", "/admin/produtos", nil); p.status != 303 {
		t.Fatalf("session after logout: %d", p.status)
	}
	if n := s.sql(`SELECT count(*) FROM tenants.merchant_sessions WHERE token_hash = $1`, sum[:]); n != 0 {
		t.Fatal("session row kept after logout")
	}
}

var fieldError = func(field string) *regexp.Regexp {
	return regexp.MustCompile(`<span class="field-error" data-field="` + regexp.QuoteMeta(field) + `">([^<]+)</span>`)
}

// Catalog forms (errors next to the field, input kept, R$ to centavos),
// then a real Pix order: list, detail, a refund and a fulfillment event
// from the order page, and the checkouts pages.
func TestAdminCatalogOrdersAndCheckouts(t *testing.T) {
	s := newShopper(t, 0, "alfa.localhost")
	m := s.merchant["alfa.localhost"]
	pass := invite(t, s.r, m.tenantID.String(), "dona@alfa.com.br")
	b := newBrowser(t, s.r, "alfa.localhost")
	if p := b.signIn("dona@alfa.com.br", pass); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	token := csrfOf(t, b.do("GET", "/admin/produtos/novo", nil))
	ctx := tenancy.With(context.Background(), m.tenantID)
	ops := s.r.ClientsWithToken(operatorToken)

	// A negative price: the error sits next to the price, everything typed stays.
	form := url.Values{"_csrf": {token}, "title": {"Boné <Aba Reta>"}, "description": {"Algodão"}, "active": {"on"}, "variants": {"2"},
		"v0_sku": {"BON-1"}, "v0_title": {"Boné azul"}, "v0_price": {"-5,00"}, "v0_stock": {"7"}, "v0_active": {"on"}}
	p := b.do("POST", "/admin/produtos/novo", form)
	if p.status != 422 {
		t.Fatalf("negative price: %d", p.status)
	}
	if m := fieldError("v0_price").FindStringSubmatch(p.body); m == nil || m[1] != "O preço não pode ser negativo." {
		t.Fatalf("no price error next to the field:\n%s", p.body)
	}
	for _, kept := range []string{`value="Boné &lt;Aba Reta&gt;"`, `value="BON-1"`, `value="Boné azul"`, `value="-5,00"`, `value="7"`, `>Algodão</textarea>`} {
		if !strings.Contains(p.body, kept) {
			t.Errorf("input lost: %s", kept)
		}
	}
	// Three decimals and a SKU already in the catalog.
	form.Set("v0_price", "12,345")
	if p := b.do("POST", "/admin/produtos/novo", form); fieldError("v0_price").FindString(p.body) == "" || !strings.Contains(p.body, "duas casas decimais") {
		t.Fatalf("three decimals accepted: %d", p.status)
	}
	form.Set("v0_price", "1.234,56")
	form.Set("v0_sku", "CAM")
	p = b.do("POST", "/admin/produtos/novo", form)
	if m := fieldError("v0_sku").FindStringSubmatch(p.body); p.status != 422 || m == nil || !strings.HasPrefix(m[1], "Este SKU já existe no catálogo (Camiseta)") {
		t.Fatalf("duplicate SKU: %d\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, `value="1.234,56"`) {
		t.Fatal("price lost after a duplicate SKU")
	}
	form.Set("v0_sku", "BON-1")
	p = b.do("POST", "/admin/produtos/novo", form)
	if p.status != 303 || !strings.HasPrefix(p.location, "/admin/produtos/prod_") {
		t.Fatalf("create: %d %q\n%s", p.status, p.location, p.body)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(p.location, "/admin/produtos/"), "?ok=criado")
	got, err := ops.Catalog.GetProduct(ctx, connect.NewRequest(&catalogv1.GetProductRequest{Id: id}))
	if err != nil {
		t.Fatal(err)
	}
	v := got.Msg.GetProduct().GetVariants()
	if len(v) != 1 || v[0].GetPrice() != 123456 || v[0].GetStock() != 7 || v[0].GetCurrency() != "BRL" || got.Msg.GetProduct().GetTitle() != "Boné <Aba Reta>" {
		t.Fatalf("stored product: %+v", got.Msg.GetProduct())
	}
	// Edit: the price typed as "99,9" is 9990 centavos; a variant is added.
	editPage := b.do("GET", "/admin/produtos/"+id, nil)
	if !strings.Contains(editPage.body, `value="1234,56"`) {
		t.Fatalf("edit form price:\n%s", editPage.body)
	}
	edit := url.Values{"_csrf": {token}, "title": {"Boné"}, "active": {"on"}, "variants": {"2"},
		"v0_keep": {"1"}, "v0_id": {v[0].GetId()}, "v0_sku": {"BON-1"}, "v0_title": {"Boné azul"}, "v0_price": {"99,9"}, "v0_stock": {"3"}, "v0_active": {"on"},
		"v1_sku": {"BON-2"}, "v1_title": {"Boné verde"}, "v1_price": {"R$ 0,99"}, "v1_stock": {"1"}, "v1_active": {"on"}}
	if p := b.do("POST", "/admin/produtos/"+id, edit); p.status != 303 {
		t.Fatalf("edit: %d\n%s", p.status, p.body)
	}
	got, _ = ops.Catalog.GetProduct(ctx, connect.NewRequest(&catalogv1.GetProductRequest{Id: id}))
	prices := map[string]int64{}
	for _, v := range got.Msg.GetProduct().GetVariants() {
		prices[v.GetSku()] = v.GetPrice()
	}
	if prices["BON-1"] != 9990 || prices["BON-2"] != 99 {
		t.Fatalf("edited prices %v", prices)
	}
	if p := b.do("GET", "/admin/produtos?q=bon-2", nil); !strings.Contains(p.body, "Boné") || strings.Contains(p.body, "Caneca") {
		t.Fatal("search by SKU")
	}

	// A real order: Pix paid through the simulated PSP.
	c := s.ready("alfa.localhost")
	pending := s.complete("alfa.localhost", c.ID, uuid.NewString(), s.pixInstrument("alfa.localhost"))
	s.pay("alfa.localhost", pixOf(t, pending).Pix.AttemptID)
	done := s.waitStatus("alfa.localhost", c.ID, bcp.StatusCompleted)
	orderID := done.Order.ID
	total := totals(done)["total"]

	if p := b.do("GET", "/admin/pedidos", nil); p.status != 200 || !strings.Contains(p.body, orderID) {
		t.Fatalf("orders list: %d", p.status)
	}
	op := b.do("GET", "/admin/pedidos/"+orderID, nil)
	if op.status != 200 || !strings.Contains(op.body, "Camiseta M") {
		t.Fatalf("order page: %d\n%s", op.status, op.body)
	}
	key := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(op.body)[1]
	// A bad amount stays in the field with its error.
	bad := b.do("POST", "/admin/pedidos/"+orderID+"/reembolso", url.Values{"_csrf": {token}, "key": {key}, "amount": {"dez reais"}, "reason": {"avaria"}})
	if bad.status != 422 || fieldError("amount").FindString(bad.body) == "" || !strings.Contains(bad.body, `value="dez reais"`) || !strings.Contains(bad.body, `value="avaria"`) {
		t.Fatalf("bad refund amount: %d\n%s", bad.status, bad.body)
	}
	over := b.do("POST", "/admin/pedidos/"+orderID+"/reembolso", url.Values{"_csrf": {token}, "key": {key}, "amount": {"99999,00"}})
	if over.status != 422 || fieldError("amount").FindString(over.body) == "" {
		t.Fatalf("refund above the total: %d\n%s", over.status, over.body)
	}
	ref := b.do("POST", "/admin/pedidos/"+orderID+"/reembolso", url.Values{"_csrf": {token}, "key": {key}, "amount": {"10,00"}, "reason": {"avaria"}})
	if ref.status != 303 {
		t.Fatalf("refund: %d\n%s", ref.status, ref.body)
	}
	// A double submit of the same form is the same refund.
	b.do("POST", "/admin/pedidos/"+orderID+"/reembolso", url.Values{"_csrf": {token}, "key": {key}, "amount": {"10,00"}, "reason": {"avaria"}})
	var order bcp.Order
	eventually(t, 30*time.Second, "refund adjustment completed", func() bool {
		resp, err := ops.Orders.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: orderID}))
		if err != nil {
			t.Fatal(err)
		}
		order = bcp.Order{}
		_ = json.Unmarshal(resp.Msg.GetOrderJson(), &order)
		return len(order.Adjustments) == 1 && order.Adjustments[0].Status == "completed"
	})
	adj := order.Adjustments[0]
	amount := int64(0)
	for _, t := range adj.Totals {
		if t.Type == "total" {
			amount = t.Amount
		}
	}
	if adj.Type != "refund" || (amount != 1000 && amount != -1000) {
		t.Fatalf("adjustment %+v (order total %d)", adj, total)
	}
	if p := b.do("GET", "/admin/pedidos/"+orderID, nil); !strings.Contains(p.body, "Reembolso") || !strings.Contains(p.body, "R$ 10,00") {
		t.Fatalf("order page without the refund:\n%s", p.body)
	}

	// Fulfillment: a bad tracking URL stays with its error; then shipped.
	ev := url.Values{"_csrf": {token}, "key": {"evt_admin_1"}, "type": {"shipped"}, "carrier": {"Correios"}, "tracking_number": {"BR123"}, "tracking_url": {"javascript:alert(1)"}}
	if p := b.do("POST", "/admin/pedidos/"+orderID+"/fulfillment", ev); p.status != 422 || fieldError("tracking_url").FindString(p.body) == "" || !strings.Contains(p.body, `value="BR123"`) {
		t.Fatalf("bad tracking URL: %d", p.status)
	}
	ev.Set("tracking_url", "https://rastreamento.correios.com.br/BR123")
	if p := b.do("POST", "/admin/pedidos/"+orderID+"/fulfillment", ev); p.status != 303 {
		t.Fatalf("fulfillment event: %d\n%s", p.status, p.body)
	}
	resp, _ := ops.Orders.GetOrder(ctx, connect.NewRequest(&ordersv1.GetOrderRequest{Id: orderID}))
	order = bcp.Order{}
	_ = json.Unmarshal(resp.Msg.GetOrderJson(), &order)
	if len(order.Fulfillment.Events) != 1 || order.Fulfillment.Events[0].Type != "shipped" || order.Fulfillment.Events[0].TrackingNumber != "BR123" || order.LineItems[0].Quantity.Fulfilled != 2 {
		t.Fatalf("fulfillment %+v lines %+v", order.Fulfillment.Events, order.LineItems)
	}

	// Checkouts: by status and the detail.
	if p := b.do("GET", "/admin/checkouts?status=completed", nil); p.status != 200 || !strings.Contains(p.body, c.ID) {
		t.Fatalf("completed checkouts: %d", p.status)
	}
	if p := b.do("GET", "/admin/checkouts?status=canceled", nil); strings.Contains(p.body, c.ID) {
		t.Fatal("completed checkout listed as canceled")
	}
	if p := b.do("GET", "/admin/checkouts/"+c.ID, nil); p.status != 200 || !strings.Contains(p.body, orderID) || !strings.Contains(p.body, "rui@example.com") {
		t.Fatalf("checkout page: %d\n%s", p.status, p.body)
	}
	if p := b.do("GET", "/admin/checkouts/chk_nope", nil); p.status != 404 {
		t.Fatalf("unknown checkout: %d", p.status)
	}
}
