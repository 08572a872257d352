package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/edge"
)

// upload posts a multipart form with one file field "file".
func (b *browser) upload(path string, fields url.Values, filename string, content []byte) page {
	b.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			_ = w.WriteField(k, v)
		}
	}
	if filename != "" {
		fw, _ := w.CreateFormFile("file", filename)
		_, _ = fw.Write(content)
	}
	_ = w.Close()
	req, err := http.NewRequest("POST", "http://"+b.host+path, &body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(raw), header: resp.Header}
}

// profileOf reads the merchant's discovery profile as agents see it.
func profileOf(t *testing.T, b *browser) edge.Profile {
	t.Helper()
	p := b.do("GET", "/.well-known/bcp", nil)
	var prof edge.Profile
	if p.status != 200 || json.Unmarshal([]byte(p.body), &prof) != nil {
		t.Fatalf("profile: %d %s", p.status, p.body)
	}
	return prof
}

func profileKids(t *testing.T, b *browser) []string {
	var kids []string
	for _, k := range profileOf(t, b).SigningKeys {
		var j struct {
			Kid string `json:"kid"`
		}
		_ = json.Unmarshal(k, &j)
		kids = append(kids, j.Kid)
	}
	return kids
}

func profileHandler(t *testing.T, b *browser, name, id string) *edge.PaymentHandlerItem {
	for _, h := range profileOf(t, b).UCP.PaymentHandlers[name] {
		if h.ID == id {
			return &h
		}
	}
	return nil
}

// The merchant pages of issue 6: signing keys, payment handlers, CSV
// import, pickup points, agent access policy and the store name, on a
// platform with two demo-like merchants. Every success path is checked
// through the APIs (profile, discovery, catalog, pricing, a checkout),
// every error path shows the message next to the field with the input
// kept; staff users are refused the admin-only pages and the other
// merchant's ids are 404.
func TestAdminMerchantPages(t *testing.T) {
	s := newShopper(t, 0, "alfa.localhost", "beta.localhost")
	r, alfa, beta := s.r, s.merchant["alfa.localhost"], s.merchant["beta.localhost"]
	ops := r.ClientsWithToken(operatorToken)
	ctx := tenancy.With(context.Background(), alfa.tenantID)

	b := newBrowser(t, r, "alfa.localhost")
	if p := b.signIn("dona@alfa.com.br", invite(t, r, alfa.tenantID.String(), "dona@alfa.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	staffInv, err := ops.Tenants.InviteMerchantUser(context.Background(), connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: alfa.tenantID.String(), Email: "caixa@alfa.com.br", Role: "staff"}))
	if err != nil {
		t.Fatal(err)
	}
	staff := newBrowser(t, r, "alfa.localhost")
	if p := staff.signIn("caixa@alfa.com.br", staffInv.Msg.GetInitialPassword()); p.status != 303 {
		t.Fatalf("staff sign-in: %d", p.status)
	}
	ob := newBrowser(t, r, "beta.localhost")
	if p := ob.signIn("dono@beta.com.br", invite(t, r, beta.tenantID.String(), "dono@beta.com.br")); p.status != 303 {
		t.Fatalf("beta sign-in: %d", p.status)
	}
	token := csrfOf(t, b.do("GET", "/admin/produtos", nil))
	staffToken := csrfOf(t, staff.do("GET", "/admin/produtos", nil))
	betaToken := csrfOf(t, ob.do("GET", "/admin/produtos", nil))

	// Staff users see neither the pages nor their forms.
	for _, path := range []string{"/admin/chaves", "/admin/pagamentos", "/admin/pagamentos/novo/pix", "/admin/pagamentos/" + alfa.pixHandler} {
		if p := staff.do("GET", path, nil); p.status != 403 {
			t.Errorf("staff GET %s: %d, want 403", path, p.status)
		}
	}
	for _, path := range []string{"/admin/chaves/girar", "/admin/pagamentos/novo/pix", "/admin/pagamentos/remover/" + alfa.pixHandler, "/admin/agentes/politica"} {
		if p := staff.do("POST", path, url.Values{"_csrf": {staffToken}, "delay": {"0"}, "confirm": {"on"}, "policy": {"api_key"}}); p.status != 403 {
			t.Errorf("staff POST %s: %d, want 403", path, p.status)
		}
	}
	if p := staff.do("GET", "/admin/produtos", nil); strings.Contains(p.body, `href="/admin/chaves"`) || !strings.Contains(b.do("GET", "/admin/produtos", nil).body, `href="/admin/chaves"`) {
		t.Error("the Chaves nav entry must show for admins only")
	}

	t.Run("signing keys", func(t *testing.T) {
		list := func() []*tenantsv1.SigningKey {
			resp, err := ops.Tenants.ListSigningKeys(context.Background(), connect.NewRequest(&tenantsv1.ListSigningKeysRequest{Tenant: alfa.tenantID.String()}))
			if err != nil {
				t.Fatal(err)
			}
			return resp.Msg.GetKeys()
		}
		first := list()[0]
		p := b.do("GET", "/admin/chaves", nil)
		// The kid is the RFC 7638 thumbprint, so both columns show it.
		row := regexp.MustCompile(`<tr data-kid="` + regexp.QuoteMeta(first.GetKid()) + `">[\s\S]*?data-status="current"[\s\S]*?<code class="thumb">` + regexp.QuoteMeta(first.GetKid()) + `</code>`)
		if p.status != 200 || !row.MatchString(p.body) || !strings.Contains(p.body, "ES256") {
			t.Fatalf("keys page: %d\n%s", p.status, p.body)
		}
		if p := b.do("POST", "/admin/chaves/girar", url.Values{"_csrf": {token}, "delay": {"amanhã"}}); p.status != 422 || fieldError("delay").FindString(p.body) == "" {
			t.Fatalf("bad delay: %d", p.status)
		}
		if p := b.do("POST", "/admin/chaves/girar", url.Values{"_csrf": {token}, "delay": {"0"}}); p.status != 303 || p.location != "/admin/chaves?ok=girada" {
			t.Fatalf("rotate: %d %q", p.status, p.location)
		}
		keys := list()
		if len(keys) != 2 || keys[1].GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_CURRENT || keys[0].GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRING {
			t.Fatalf("after rotation: %v", keys)
		}
		newKid := keys[1].GetKid()
		eventually(t, 5*time.Second, "rotated key in /.well-known/bcp", func() bool {
			kids := profileKids(t, b)
			return slices.Contains(kids, newKid) && slices.Contains(kids, first.GetKid())
		})
		// Another merchant cannot reach alfa's key, not even its page.
		if p := ob.do("GET", "/admin/chaves/"+first.GetKid()+"/revogar", nil); p.status != 404 {
			t.Fatalf("beta's confirmation page for alfa's key: %d", p.status)
		}
		if p := ob.do("POST", "/admin/chaves/"+first.GetKid()+"/revogar", url.Values{"_csrf": {betaToken}, "confirm": {"on"}}); p.status != 404 {
			t.Fatalf("beta revokes alfa's key: %d", p.status)
		}
		// Revoking the retired key needs the confirmation box.
		if p := b.do("GET", "/admin/chaves/"+first.GetKid()+"/revogar", nil); p.status != 200 || !strings.Contains(p.body, first.GetKid()) {
			t.Fatalf("confirmation page: %d", p.status)
		}
		if p := b.do("POST", "/admin/chaves/"+first.GetKid()+"/revogar", url.Values{"_csrf": {token}}); p.status != 422 || fieldError("confirm").FindString(p.body) == "" {
			t.Fatalf("revoke without confirmation: %d", p.status)
		}
		if list()[0].GetRevokeTime() != nil {
			t.Fatal("revoked without confirmation")
		}
		if p := b.do("POST", "/admin/chaves/"+first.GetKid()+"/revogar", url.Values{"_csrf": {token}, "confirm": {"on"}}); p.status != 303 {
			t.Fatalf("revoke: %d", p.status)
		}
		if st := list()[0].GetStatus(); st != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_REVOKED {
			t.Fatalf("old key status %v", st)
		}
		eventually(t, 5*time.Second, "revoked key gone from /.well-known/bcp", func() bool {
			kids := profileKids(t, b)
			return !slices.Contains(kids, first.GetKid()) && slices.Contains(kids, newKid)
		})
		// The only key left that can sign is not revoked from the admin.
		p = b.do("POST", "/admin/chaves/"+newKid+"/revogar", url.Values{"_csrf": {token}, "confirm": {"on"}})
		if p.status != 409 || !strings.Contains(p.body, "única chave") || list()[1].GetRevokeTime() != nil {
			t.Fatalf("revoking the last key: %d", p.status)
		}
	})

	t.Run("payment handlers", func(t *testing.T) {
		p := b.do("GET", "/admin/pagamentos", nil)
		if p.status != 200 || !strings.Contains(p.body, `data-handler="`+alfa.pixHandler+`"`) || !strings.Contains(p.body, `data-handler="card"`) || !strings.Contains(p.body, "Bandeiras: visa, mastercard") {
			t.Fatalf("handlers page: %d\n%s", p.status, p.body)
		}
		// A production Pix handler: a CPF with wrong check digits and no
		// PSP connection are refused next to their fields.
		pix := url.Values{"_csrf": {token}, "id": {"pix_prod"}, "environment": {"production"}, "key_type": {"cpf"}, "pix_key": {"123.456.789-00"},
			"merchant_name": {"Loja Alfa"}, "merchant_city": {"Florianópolis"}, "expiration_minutes": {"45"}}
		p = b.do("POST", "/admin/pagamentos/novo/pix", pix)
		if e := fieldError("pix_key").FindStringSubmatch(p.body); p.status != 422 || e == nil || !strings.HasPrefix(e[1], "CPF inválido") {
			t.Fatalf("bad CPF: %d\n%s", p.status, p.body)
		}
		if fieldError("base_url").FindString(p.body) == "" || !strings.Contains(p.body, `value="123.456.789-00"`) || !strings.Contains(p.body, `value="Florianópolis"`) || !strings.Contains(p.body, `value="45"`) {
			t.Fatal("missing connection error or input lost")
		}
		pix.Set("key_type", "email")
		pix.Set("pix_key", "529.982.247-25")
		if p := b.do("POST", "/admin/pagamentos/novo/pix", pix); fieldError("pix_key").FindString(p.body) == "" {
			t.Fatalf("a CPF accepted as an e-mail key: %d", p.status)
		}
		pix.Set("key_type", "cpf")
		pix.Set("id", alfa.pixHandler)
		if p := b.do("POST", "/admin/pagamentos/novo/pix", pix); fieldError("id").FindString(p.body) == "" {
			t.Fatalf("duplicate handler id: %d", p.status)
		}
		// The PSP connection, pasted (web/admin's tests cover uploads).
		pspCA, err := pki.NewCA("PSP CA", 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pspCA.IssueClient("loja-alfa", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pix.Set("id", "pix_prod")
		pix.Set("base_url", "https://psp.example/api/v2")
		pix.Set("token_url", "https://psp.example/oauth/token")
		pix.Set("client_id", "cliente-123")
		pix.Set("client_secret", "s3cr3t-do-psp")
		pix.Set("certificate_pem", string(cert.CertPEM))
		pix.Set("private_key_pem", string(cert.KeyPEM))
		pix.Set("webhook_ca_pem", string(pspCA.CertPEM))
		if p := b.do("POST", "/admin/pagamentos/novo/pix", pix); p.status != 303 {
			t.Fatalf("Pix handler: %d\n%s", p.status, p.body)
		}
		eventually(t, 5*time.Second, "new Pix handler in /.well-known/bcp", func() bool {
			return profileHandler(t, b, "br.dev.bcp.pix", "pix_prod") != nil
		})
		var cfg map[string]any
		_ = json.Unmarshal(profileHandler(t, b, "br.dev.bcp.pix", "pix_prod").Config, &cfg)
		if cfg["pix_key"] != "52998224725" || cfg["merchant_city"] != "Florianópolis" || cfg["expiration_seconds"] != float64(2700) || len(cfg) != 4 {
			t.Fatalf("advertised config %v", cfg)
		}
		d, err := ops.Tenants.GetDiscovery(context.Background(), connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: alfa.tenantID.String()}))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range d.Msg.GetPaymentHandlers() {
			if h.GetId() == "pix_prod" && (!h.GetHasSecrets() || h.GetEnvironment() != "production" || strings.Contains(h.GetConfigJson(), "s3cr3t")) {
				t.Fatalf("stored handler %v", h)
			}
		}
		// Secrets are write-only: "configurado" and a summary, never the
		// secret or the key.
		edit := b.do("GET", "/admin/pagamentos/pix_prod", nil)
		keyLines := strings.Split(strings.TrimSpace(string(cert.KeyPEM)), "\n")
		if edit.status != 200 || strings.Contains(edit.body, "s3cr3t-do-psp") || strings.Contains(edit.body, keyLines[1]) || !strings.Contains(edit.body, `data-conn="client_id">cliente-123<`) ||
			!strings.Contains(edit.body, `data-conn="cert_subject">CN=loja-alfa<`) || !strings.Contains(edit.body, `id="secrets-status">configurado<`) || !strings.Contains(edit.body, `value="52998224725"`) {
			t.Fatalf("edit page: %d\n%s", edit.status, edit.body)
		}
		// Editing keeps the stored connection when its fields stay empty; a
		// phone key typed with punctuation is stored in E.164.
		p = b.do("POST", "/admin/pagamentos/pix_prod", url.Values{"_csrf": {token}, "environment": {"production"}, "key_type": {"phone"}, "pix_key": {"(48) 99123-4567"}})
		if p.status != 303 {
			t.Fatalf("edit Pix: %d\n%s", p.status, p.body)
		}
		eventually(t, 5*time.Second, "edited Pix key in /.well-known/bcp", func() bool {
			h := profileHandler(t, b, "br.dev.bcp.pix", "pix_prod")
			return h != nil && strings.Contains(string(h.Config), `"pix_key":"+5548991234567"`) && !strings.Contains(string(h.Config), "merchant_city")
		})
		if p := b.do("GET", "/admin/pagamentos/pix_prod", nil); !strings.Contains(p.body, `id="secrets-status">configurado<`) {
			t.Fatal("credentials lost by an edit without them")
		}
		// A delegated card handler: bad name and no brand, then good.
		card := url.Values{"_csrf": {token}, "id": {"cartao_x"}, "environment": {"sandbox"}, "name": {"Cartão X"}, "credential_type": {"token"}}
		p = b.do("POST", "/admin/pagamentos/novo/cartao", card)
		if p.status != 422 || fieldError("name").FindString(p.body) == "" || fieldError("brand").FindString(p.body) == "" || !strings.Contains(p.body, `value="Cartão X"`) {
			t.Fatalf("bad card handler: %d\n%s", p.status, p.body)
		}
		card.Set("name", "com.example.vendor.delegate_payment")
		card["brand"] = []string{"visa", "elo"}
		if p := b.do("POST", "/admin/pagamentos/novo/cartao", card); p.status != 303 {
			t.Fatalf("card handler: %d\n%s", p.status, p.body)
		}
		eventually(t, 5*time.Second, "card handler in /.well-known/bcp", func() bool {
			h := profileHandler(t, b, "com.example.vendor.delegate_payment", "cartao_x")
			return h != nil && string(h.AvailableInstruments) == `[{"type":"card","constraints":{"brands":["visa","elo"]}}]` && string(h.Config) == `{"accepted_credential_types":["token"]}`
		})
		// A handler of another kind, set by the operator, is listed but
		// not editable from the admin.
		if _, err := ops.Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: "alfa.localhost",
			Handler: &tenantsv1.PaymentHandler{Id: "carteira", Name: "com.example.wallet", AvailableInstrumentsJson: `[{"type":"wallet"}]`, ConfigJson: `{"merchant":"alfa"}`}})); err != nil {
			t.Fatal(err)
		}
		if p := b.do("GET", "/admin/pagamentos", nil); !regexp.MustCompile(`data-handler="carteira"[\s\S]*?Outro \(configurado pelo operador\)`).MatchString(p.body) {
			t.Fatalf("other handler not listed as such:\n%s", p.body)
		}
		if p := b.do("POST", "/admin/pagamentos/carteira", url.Values{"_csrf": {token}, "environment": {"sandbox"}, "name": {"com.example.vendor.delegate_payment"}, "brand": {"visa"}, "credential_type": {"token"}}); p.status != 409 {
			t.Fatalf("edit of an operator-configured handler: %d", p.status)
		}
		eventually(t, 5*time.Second, "operator handler in /.well-known/bcp, untouched", func() bool {
			h := profileHandler(t, b, "com.example.wallet", "carteira")
			return h != nil && string(h.AvailableInstruments) == `[{"type":"wallet"}]` && string(h.Config) == `{"merchant":"alfa"}`
		})
		// Another merchant's handler id is not found; removal needs the box.
		if p := ob.do("GET", "/admin/pagamentos/"+alfa.pixHandler, nil); p.status != 404 {
			t.Fatalf("beta reads alfa's handler: %d", p.status)
		}
		if p := ob.do("POST", "/admin/pagamentos/remover/"+alfa.pixHandler, url.Values{"_csrf": {betaToken}, "confirm": {"on"}}); p.status != 404 {
			t.Fatalf("beta removes alfa's handler: %d", p.status)
		}
		if p := b.do("POST", "/admin/pagamentos/remover/cartao_x", url.Values{"_csrf": {token}}); p.status != 422 || fieldError("confirm").FindString(p.body) == "" {
			t.Fatalf("remove without confirmation: %d", p.status)
		}
		if p := b.do("POST", "/admin/pagamentos/remover/cartao_x", url.Values{"_csrf": {token}, "confirm": {"on"}}); p.status != 303 {
			t.Fatalf("remove: %d", p.status)
		}
		eventually(t, 5*time.Second, "removed handler gone from /.well-known/bcp", func() bool {
			return profileHandler(t, b, "com.example.vendor.delegate_payment", "cartao_x") == nil && profileHandler(t, b, "com.example.vendor.delegate_payment", "card") != nil
		})
	})

	t.Run("catalog CSV import", func(t *testing.T) {
		count := func() (n int, skus []string) {
			resp, err := ops.Catalog.ListProducts(ctx, connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 100}))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range resp.Msg.GetProducts() {
				for _, v := range p.GetVariants() {
					skus = append(skus, v.GetSku())
				}
			}
			return len(resp.Msg.GetProducts()), skus
		}
		before, _ := count()
		p := b.do("GET", "/admin/produtos/importar", nil)
		if p.status != 200 || !strings.Contains(p.body, `href="/admin/produtos/importar/exemplo.csv"`) || !strings.Contains(p.body, "<code>variant_title</code>") {
			t.Fatalf("import page: %d\n%s", p.status, p.body)
		}
		sample := b.do("GET", "/admin/produtos/importar/exemplo.csv", nil)
		if sample.status != 200 || !strings.HasPrefix(sample.header.Get("Content-Type"), "text/csv") || !strings.HasPrefix(sample.body, "product_id,product_title,") {
			t.Fatalf("sample: %d %q", sample.status, sample.body)
		}
		// Every problem listed by line and column; nothing applied.
		bad := "product_id;product_title;description;image_url;sku;variant_title;price;stock;active\n" +
			"prd_meia;Meia;;;MEIA-P;Meia P;59.90;3;sim\n" +
			"prd_meia;;;;MEIA-M;Meia M;-5,00;x;talvez\n" +
			"prd_luva;Luva;;;CAM;Luva;10,00;1;sim\n" +
			"prd_gorro;Gorro;;;GOR;Gorro;12,00;1;sim\n"
		p = b.upload("/admin/produtos/importar", url.Values{"_csrf": {token}}, "ruim.csv", []byte(bad))
		rows := regexp.MustCompile(`<tr class="import-error"><td data-label="Linha" class="num">(\d+|—)</td><td data-label="Coluna">(?:<code>)?([a-z_—]+)(?:</code>)?</td><td data-label="Problema">([^<]+)</td></tr>`).FindAllStringSubmatch(p.body, -1)
		var got []string
		for _, m := range rows {
			got = append(got, m[1]+" "+m[2]+": "+html.UnescapeString(m[3]))
		}
		want := []string{
			`2 price: "59.90" é ambíguo: escreva reais com vírgula (59,90) ou centavos inteiros (5990).`,
			"3 price: O preço não pode ser negativo.",
			`3 stock: "x" não é um número inteiro.`,
			`3 active: "talvez": use sim ou não.`,
			"4 sku: Este SKU já pertence a outro produto do catálogo.",
		}
		if p.status != 422 || strings.Join(got, "\n") != strings.Join(want, "\n") || !strings.Contains(p.body, "Nada foi importado: ruim.csv") {
			t.Fatalf("import errors: %d\n%s\nwant:\n%s\n%s", p.status, strings.Join(got, "\n"), strings.Join(want, "\n"), p.body)
		}
		if after, skus := count(); after != before || slices.Contains(skus, "GOR") {
			t.Fatalf("a failed import changed the catalog: %d → %d products", before, after)
		}
		// The sample imports: 2 products, 3 variants, prices in centavos.
		p = b.upload("/admin/produtos/importar", url.Values{"_csrf": {token}}, "produtos.csv", []byte(sample.body))
		if p.status != 200 || !strings.Contains(p.body, `<strong data-count="created">2</strong>`) || !strings.Contains(p.body, `<strong data-count="updated">0</strong>`) {
			t.Fatalf("import: %d\n%s", p.status, p.body)
		}
		bone, err := ops.Catalog.GetProduct(ctx, connect.NewRequest(&catalogv1.GetProductRequest{Id: "prd_bone"}))
		if err != nil || len(bone.Msg.GetProduct().GetVariants()) != 2 || bone.Msg.GetProduct().GetVariants()[0].GetPrice() != 4990 || bone.Msg.GetProduct().GetVariants()[1].GetStock() != 5 {
			t.Fatalf("imported product %v %v", bone, err)
		}
		if after, skus := count(); after != before+2 || !slices.Contains(skus, "CAN-500") {
			t.Fatalf("after import: %d products (before %d), skus %v", after, before, skus)
		}
		if p := b.do("GET", "/admin/produtos?q=CAN-500", nil); !strings.Contains(p.body, "Caneca 500 ml") || !strings.Contains(p.body, "R$ 39,90") {
			t.Fatal("imported product not listed")
		}
		// Twice changes nothing; staff may import too; the token is required.
		if p := staff.upload("/admin/produtos/importar", url.Values{"_csrf": {staffToken}}, "produtos.csv", []byte(sample.body)); !strings.Contains(p.body, `<strong data-count="unchanged">2</strong>`) {
			t.Fatalf("second import: %d\n%s", p.status, p.body)
		}
		if p := b.upload("/admin/produtos/importar", url.Values{"_csrf": {"x"}}, "produtos.csv", []byte(sample.body)); p.status != 403 {
			t.Fatalf("import without the token: %d", p.status)
		}
		if p := b.upload("/admin/produtos/importar", url.Values{"_csrf": {token}}, "", nil); p.status != 422 || fieldError("file").FindString(p.body) == "" {
			t.Fatalf("no file: %d", p.status)
		}
		big := bytes.Repeat([]byte("x"), 3<<20)
		if p := b.upload("/admin/produtos/importar", url.Values{"_csrf": {token}}, "grande.csv", big); p.status != 413 || fieldError("file").FindString(p.body) == "" {
			t.Fatalf("3 MB file: %d", p.status)
		}
		// Beta's catalog is untouched.
		if p := ob.do("GET", "/admin/produtos/prd_bone", nil); p.status != 404 {
			t.Fatalf("alfa's imported product at beta: %d", p.status)
		}
	})

	t.Run("pickup points", func(t *testing.T) {
		if p := b.do("GET", "/admin/frete/retirada/nova", nil); p.status != 200 {
			t.Fatalf("new pickup page: %d", p.status)
		}
		form := url.Values{"_csrf": {token}, "name": {"Loja Centro"}, "street_address": {"Rua Direita, 10"}, "address_locality": {"São Paulo"},
			"address_region": {"XX"}, "postal_code": {"0100-200"}, "hours": {"Seg. a sex., 9h às 18h"}, "active": {"on"}}
		p := b.do("POST", "/admin/frete/retirada/nova", form)
		if e := fieldError("postal_code").FindStringSubmatch(p.body); p.status != 422 || e == nil || !strings.HasPrefix(e[1], "CEP inválido") || fieldError("address_region").FindString(p.body) == "" {
			t.Fatalf("bad CEP/UF: %d\n%s", p.status, p.body)
		}
		if !strings.Contains(p.body, `value="0100-200"`) || !strings.Contains(p.body, `value="Seg. a sex., 9h às 18h"`) || !strings.Contains(p.body, `value="Rua Direita, 10"`) {
			t.Fatal("pickup input lost")
		}
		form.Set("address_region", "sp")
		form.Set("postal_code", "01002000")
		if p := b.do("POST", "/admin/frete/retirada/nova", form); p.status != 303 {
			t.Fatalf("pickup: %d\n%s", p.status, p.body)
		}
		locs, err := ops.Pricing.ListPickupLocations(ctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
		if err != nil || len(locs.Msg.GetLocations()) != 1 {
			t.Fatalf("locations %v %v", locs, err)
		}
		loc := locs.Msg.GetLocations()[0]
		if loc.GetPostalCode() != "01002000" || loc.GetAddressRegion() != "SP" || loc.GetPrice() != 0 || loc.GetDescription() != "Seg. a sex., 9h às 18h" || !loc.GetActive() {
			t.Fatalf("stored location %v", loc)
		}
		if p := b.do("GET", "/admin/frete", nil); !strings.Contains(p.body, `href="/admin/frete/retirada/`+loc.GetId()+`"`) || !strings.Contains(p.body, "CEP 01002-000") {
			t.Fatal("pickup point not listed on the shipping page")
		}
		// It is a fulfillment option in an agent's checkout.
		_, c := s.agents["alfa.localhost"].call("create_checkout", map[string]any{"checkout": map[string]any{
			"line_items":  []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
			"fulfillment": map[string]any{"methods": []any{map[string]any{"type": "pickup"}}},
		}})
		m := c.Fulfillment.Methods[0]
		if len(m.Destinations) != 1 || m.Destinations[0].ID != loc.GetId() || m.Destinations[0].Name != "Loja Centro" || m.Destinations[0].Address.PostalCode != "01002-000" ||
			len(m.Groups) != 1 || len(m.Groups[0].Options) != 1 || m.Groups[0].Options[0].Description != "Seg. a sex., 9h às 18h" {
			t.Fatalf("pickup method %+v", m)
		}
		// Edit (a fee), another merchant's id, delete with confirmation.
		form.Set("price", "5,00")
		if p := b.do("POST", "/admin/frete/retirada/"+loc.GetId(), form); p.status != 303 {
			t.Fatalf("edit pickup: %d", p.status)
		}
		locs, _ = ops.Pricing.ListPickupLocations(ctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
		if locs.Msg.GetLocations()[0].GetPrice() != 500 {
			t.Fatalf("fee %d, want 500", locs.Msg.GetLocations()[0].GetPrice())
		}
		if p := ob.do("GET", "/admin/frete/retirada/"+loc.GetId(), nil); p.status != 404 {
			t.Fatalf("beta reads alfa's pickup point: %d", p.status)
		}
		if p := ob.do("POST", "/admin/frete/retirada/"+loc.GetId()+"/excluir", url.Values{"_csrf": {betaToken}, "confirm": {"on"}}); p.status != 404 {
			t.Fatalf("beta deletes alfa's pickup point: %d", p.status)
		}
		if p := b.do("POST", "/admin/frete/retirada/"+loc.GetId()+"/excluir", url.Values{"_csrf": {token}}); p.status != 422 || fieldError("confirm").FindString(p.body) == "" {
			t.Fatalf("delete without confirmation: %d", p.status)
		}
		if p := b.do("POST", "/admin/frete/retirada/"+loc.GetId()+"/excluir", url.Values{"_csrf": {token}, "confirm": {"on"}}); p.status != 303 {
			t.Fatalf("delete: %d", p.status)
		}
		if locs, _ := ops.Pricing.ListPickupLocations(ctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{})); len(locs.Msg.GetLocations()) != 0 {
			t.Fatal("pickup point not deleted")
		}
	})

	t.Run("store name", func(t *testing.T) {
		st := b.do("GET", "/admin/configuracoes", nil)
		if st.status != 200 || !strings.Contains(st.body, `name="name" value="Loja alfa.localhost"`) {
			t.Fatalf("settings page: %d\n%s", st.status, st.body)
		}
		set := url.Values{"_csrf": {token}, "name": {"  "}, "link_privacy_policy": {"https://alfa.localhost/privacidade"}, "consent_marketing": {"on"}, "ttl_hours": {"6"}}
		if p := b.do("POST", "/admin/configuracoes", set); p.status != 422 || fieldError("name").FindString(p.body) == "" {
			t.Fatalf("empty name: %d", p.status)
		}
		set.Set("name", "Alfa Modas")
		if p := b.do("POST", "/admin/configuracoes", set); p.status != 303 {
			t.Fatalf("rename: %d\n%s", p.status, p.body)
		}
		d, err := ops.Tenants.GetTenant(context.Background(), connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: "alfa.localhost"}))
		if err != nil || d.Msg.GetTenant().GetName() != "Alfa Modas" || d.Msg.GetTenant().GetSlug() == "" {
			t.Fatalf("tenant after rename %v %v", d, err)
		}
		if p := staff.do("POST", "/admin/configuracoes", url.Values{"_csrf": {staffToken}, "name": {"Da Equipe"}, "ttl_hours": {"6"}}); p.status != 403 {
			t.Fatalf("staff renames the store: %d", p.status)
		}
	})

	// Last: it changes how agents authenticate.
	t.Run("agent auth policy", func(t *testing.T) {
		p := b.do("GET", "/admin/agentes", nil)
		if p.status != 200 || !strings.Contains(p.body, `name="policy" value="either" checked`) {
			t.Fatalf("agents page: %d\n%s", p.status, p.body)
		}
		if p := staff.do("GET", "/admin/agentes", nil); !strings.Contains(p.body, `data-policy="either"`) || strings.Contains(p.body, `action="/admin/agentes/politica"`) {
			t.Fatal("staff sees the policy form, or not the policy")
		}
		if p := b.do("POST", "/admin/agentes/politica", url.Values{"_csrf": {token}, "policy": {""}}); p.status != 422 || fieldError("policy").FindString(p.body) == "" {
			t.Fatalf("bad policy: %d", p.status)
		}
		// Requiring a nonce requires created too (replay-proof signatures).
		if p := b.do("POST", "/admin/agentes/politica", url.Values{"_csrf": {token}, "policy": {"signature"}, "sign_all": {"on"}, "require_nonce": {"on"}}); p.status != 303 {
			t.Fatalf("policy: %d", p.status)
		}
		g, err := ops.Tenants.GetAgentAuthPolicy(context.Background(), connect.NewRequest(&tenantsv1.GetAgentAuthPolicyRequest{TenantId: alfa.tenantID.String()}))
		if err != nil || g.Msg.GetPolicy() != tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE || !g.Msg.GetSignAllResponses() ||
			!g.Msg.GetRequireSignatureCreated() || !g.Msg.GetRequireSignatureNonce() {
			t.Fatalf("stored policy %v %v", g, err)
		}
		if g, _ := ops.Tenants.GetAgentAuthPolicy(context.Background(), connect.NewRequest(&tenantsv1.GetAgentAuthPolicyRequest{TenantId: beta.tenantID.String()})); g.Msg.GetPolicy() != tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_EITHER {
			t.Fatal("beta's policy changed")
		}
		if p := b.do("GET", "/admin/agentes", nil); !strings.Contains(p.body, `name="policy" value="signature" checked`) || !strings.Contains(p.body, `name="sign_all" checked`) ||
			!strings.Contains(p.body, `name="require_created" checked`) || !strings.Contains(p.body, `name="require_nonce" checked`) {
			t.Fatal("agents page does not show the stored policy")
		}
		// An agent with only an API key is now refused.
		eventually(t, 5*time.Second, "API-key-only agent refused", func() bool {
			_, err := s.agents["alfa.localhost"].s.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_checkout", Arguments: map[string]any{"id": "chk_x"}})
			return err != nil
		})
	})
}

// Form validation acceptance (issue 6): bad input is refused next to the
// field and everything typed stays — a negative price and a duplicate SKU
// (product), a malformed CEP range (shipping rate), an expired discount
// window (discount).
func TestAdminFormValidation(t *testing.T) {
	s := newShopper(t, 0, "alfa.localhost")
	b := newBrowser(t, s.r, "alfa.localhost")
	if p := b.signIn("dona@alfa.com.br", invite(t, s.r, s.merchant["alfa.localhost"].tenantID.String(), "dona@alfa.com.br")); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	token := csrfOf(t, b.do("GET", "/admin/produtos", nil))
	yesterday := time.Now().Add(-24 * time.Hour).In(time.FixedZone("BRT", -3*3600)).Format("2006-01-02T15:04")
	product := func(sku, price string) url.Values {
		return url.Values{"_csrf": {token}, "title": {"Boné"}, "active": {"on"}, "variants": {"1"}, "v0_sku": {sku}, "v0_title": {"Boné azul"}, "v0_price": {price}, "v0_stock": {"7"}, "v0_active": {"on"}}
	}
	for _, tc := range []struct {
		name, path string
		form       url.Values
		field      string
		msg        string
		kept       []string
	}{
		{"negative price", "/admin/produtos/novo", product("BON-1", "-5,00"), "v0_price", "O preço não pode ser negativo.", []string{`value="-5,00"`, `value="BON-1"`, `value="Boné azul"`, `value="7"`}},
		{"duplicate SKU", "/admin/produtos/novo", product("CAM", "49,90"), "v0_sku", "Este SKU já existe no catálogo (Camiseta).", []string{`value="CAM"`, `value="49,90"`}},
		{"malformed CEP range", "/admin/frete/nova", url.Values{"_csrf": {token}, "title": {"Motoboy"}, "price": {"12,50"}, "cep_ranges": {"01000-000 a 0599"}, "active": {"on"}},
			"cep_ranges", `Linha 1: faixa de CEP inválida ("01000-000 a 0599"); use 01000-000 a 09999-999.`, []string{">01000-000 a 0599</textarea>", `value="Motoboy"`, `value="12,50"`}},
		{"expired discount window", "/admin/descontos/novo", url.Values{"_csrf": {token}, "code": {"velho"}, "title": {"Velho"}, "kind": {"fixed"}, "value": {"5,00"}, "ends_at": {yesterday}, "active": {"on"}},
			"ends_at", "Esta data já passou: o desconto nasceria expirado.", []string{`value="` + yesterday + `"`, `value="velho"`, `value="5,00"`}},
	} {
		p := b.do("POST", tc.path, tc.form)
		e := fieldError(tc.field).FindStringSubmatch(p.body)
		if p.status != 422 || e == nil || html.UnescapeString(e[1]) != tc.msg {
			t.Errorf("%s: %d, error %q; want 422 and %q next to %s", tc.name, p.status, e, tc.msg, tc.field)
			continue
		}
		for _, k := range tc.kept {
			if !strings.Contains(p.body, k) {
				t.Errorf("%s: typed %s lost", tc.name, k)
			}
		}
	}
	// Nothing was stored.
	ctx := tenancy.With(context.Background(), s.merchant["alfa.localhost"].tenantID)
	ops := s.r.ClientsWithToken(operatorToken)
	if ps, _ := ops.Catalog.ListProducts(ctx, connect.NewRequest(&catalogv1.ListProductsRequest{PageSize: 100})); len(ps.Msg.GetProducts()) != 3 {
		t.Errorf("%d products, want the 3 of the setup", len(ps.Msg.GetProducts()))
	}
	if rs, _ := ops.Pricing.ListShippingRates(ctx, connect.NewRequest(&pricingv1.ListShippingRatesRequest{})); len(rs.Msg.GetRates()) != 2 {
		t.Errorf("%d rates, want 2", len(rs.Msg.GetRates()))
	}
	if ds, _ := ops.Pricing.ListDiscounts(ctx, connect.NewRequest(&pricingv1.ListDiscountsRequest{})); len(ds.Msg.GetDiscounts()) != 1 {
		t.Errorf("%d discounts, want 1", len(ds.Msg.GetDiscounts()))
	}
}

// The merchant pages in a real browser, at desktop and phone width: each
// renders, a pickup point is created by filling and submitting the form,
// and a bad Pix key comes back next to its field.
func TestBrowserAdminMerchantPages(t *testing.T) {
	const host = "loja-a.localhost"
	chromiumPath(t)
	s := newShopper(t, 0, host)
	c := newChrome(t, s.r)
	adm := c.tab(true)
	adm.open(host, "/admin/entrar")
	adm.fill(`input[name=email]`, "dona@loja-a.com.br")
	adm.fill(`input[name=password]`, invite(t, s.r, s.merchant[host].tenantID.String(), "dona@loja-a.com.br"))
	if st := adm.submit(`form[action="/admin/entrar"] button[type=submit]`); st != 200 {
		t.Fatalf("sign-in: %d", st)
	}
	for _, pg := range []struct{ path, h1, shot string }{
		{"/admin/chaves", "Chaves de assinatura", "chaves"},
		{"/admin/pagamentos", "Pagamentos", "pagamentos"},
		{"/admin/pagamentos/" + s.merchant[host].pixHandler, "Pix · " + s.merchant[host].pixHandler, "pix"},
		{"/admin/pagamentos/card", "Cartão (token delegado) · card", "cartao"},
		{"/admin/produtos/importar", "Importar produtos", "importar"},
		{"/admin/agentes", "Acesso de agentes", "agentes"},
		{"/admin/configuracoes", "Configurações da loja", "loja"},
	} {
		if st := adm.open(host, pg.path); st != 200 || adm.text("h1") != pg.h1 {
			t.Fatalf("%s: %d, h1 %q", pg.path, st, adm.text("h1"))
		}
		adm.screenshot(pg.shot)
	}
	adm.open(host, "/admin/pagamentos/"+s.merchant[host].pixHandler)
	adm.step("choose a CPF key", chromedp.SetValue(chromedp.CSS(`select[name=key_type]`), "cpf"))
	adm.fill(`input[name=pix_key]`, "111.111.111-11")
	if st := adm.submit(`form[action="/admin/pagamentos/` + s.merchant[host].pixHandler + `"] button[type=submit]`); st != 422 ||
		!strings.HasPrefix(adm.text(`[data-field=pix_key]`), "CPF inválido") || adm.value(`input[name=pix_key]`) != "111.111.111-11" {
		t.Fatalf("bad CPF in the browser: %d %q %q", st, adm.text(`[data-field=pix_key]`), adm.value(`input[name=pix_key]`))
	}
	adm.screenshot("pix-erro")
	// "Testar conexão" from the page: the sandbox card handler's account
	// at the PSP simulator takes its key.
	adm.open(host, "/admin/pagamentos/card")
	if st := adm.submit(`form[action="/admin/pagamentos/testar/card"] button[type=submit]`); st != 200 ||
		adm.text(`#test-result[data-code=ok] [data-test=message]`) != "Conexão com o processador de cartões verificada: as credenciais foram aceitas." {
		t.Fatalf("connection test in the browser: %d %q", st, adm.text(`#test-result [data-test=message]`))
	}
	adm.screenshot("cartao-teste")
	adm.open(host, "/admin/frete/retirada/nova")
	adm.fields("name", "Loja Centro", "street_address", "Rua Direita, 10", "address_locality", "São Paulo", "address_region", "SP",
		"postal_code", "01002-000", "hours", "Seg. a sex., 9h às 18h")
	adm.screenshot("retirada-nova")
	if st := adm.submit(`form[action="/admin/frete/retirada/nova"] button[type=submit]`); st != 200 || adm.location() != adm.url(host, "/admin/frete?ok=salvo") ||
		!strings.Contains(adm.text("body"), "Loja Centro") || !strings.Contains(adm.text("body"), "CEP 01002-000") {
		t.Fatalf("pickup point in the browser: %d at %s", st, adm.location())
	}
	adm.screenshot("frete-com-retirada")
	adm.step("phone width", chromedp.EmulateViewport(390, 844))
	for _, pg := range []string{"/admin/chaves", "/admin/pagamentos", "/admin/produtos/importar"} {
		adm.open(host, pg)
		if w := eval[float64](adm, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("%s is %v px wide at phone width", pg, w)
		}
		adm.screenshot("celular" + strings.ReplaceAll(pg, "/", "-"))
	}
}
