package admin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"html"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/web/admin"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// These tests run the payment handler pages against the real tenants and
// payments services (and the platform's PSP simulator) on PostgreSQL,
// with the admin mounted behind a fixed Host → tenant lookup as the edge
// does. The outside world (a PSP that refuses our client certificate,
// Stripe refusing a key) is played by httptest servers speaking TLS and
// Stripe's error format.

const (
	operatorToken = "test-operator-token"
	internalToken = "test-internal-token"
)

// brt is São Paulo time (no daylight saving since 2019), as the admin
// shows dates.
var brt = time.FixedZone("BRT", -3*3600)

// logBuffer collects every log line of the platform and the admin.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type adminEnv struct {
	r      *platform.Running
	tenant uuid.UUID
	logs   *logBuffer
	// bodies are every page served, to check no secret is ever in one.
	mu     sync.Mutex
	bodies []string
}

// startAdmin runs tenants, payments and the PSP simulator, onboards a
// merchant with a sandbox Pix handler "pix", and serves the admin for it.
// payments overrides the admin's payments client (nil: the platform's).
func startAdmin(t *testing.T) (*adminEnv, *httptest.Server) {
	t.Helper()
	d := testdb.New(t)
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := platform.Start(context.Background(), platform.Config{
		Services: []string{platform.Tenants, platform.Payments, platform.PSPSim}, DatabaseURL: d.AppURL, InternalAddr: "127.0.0.1:0",
		InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: []byte("0123456789abcdef0123456789abcdef"), Logger: log,
	})
	if err != nil {
		t.Fatalf("start platform: %v", err)
	}
	t.Cleanup(r.Stop)
	ops := r.ClientsWithToken(operatorToken)
	tr, err := ops.Tenants.CreateTenant(context.Background(), connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja Alfa", Domains: []string{"alfa.localhost"}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		t.Fatal(err)
	}
	e := &adminEnv{r: r, tenant: uuid.MustParse(tr.Msg.GetTenant().GetId()), logs: logs}
	if _, err := ops.Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: e.tenant.String(),
		Handler: &tenantsv1.PaymentHandler{Id: "pix", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}})); err != nil {
		t.Fatal(err)
	}
	return e, e.serve(t, r.Clients.Payments)
}

// serve mounts an admin whose payments client is payments.
func (e *adminEnv) serve(t *testing.T, payments paymentsv1connect.PaymentsServiceClient) *httptest.Server {
	t.Helper()
	a := admin.New(admin.Options{Tenants: e.r.Clients.Tenants, Payments: payments, PublicScheme: "https",
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	mux := http.NewServeMux()
	for pattern, h := range a.Routes() {
		mux.Handle(pattern, h)
	}
	// Over TLS, as merchants reach it: the origin "Testar conexão" gives
	// the PSP for the webhook is https.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(tenancy.With(r.Context(), e.tenant)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

type page struct {
	status   int
	location string
	body     string
}

type browser struct {
	t    *testing.T
	e    *adminEnv
	base string
	c    *http.Client
	csrf string
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// signIn invites an admin user and signs in as it.
func (e *adminEnv) signIn(t *testing.T, srv *httptest.Server) *browser {
	t.Helper()
	inv, err := e.r.ClientsWithToken(operatorToken).Tenants.InviteMerchantUser(context.Background(),
		connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: e.tenant.String(), Email: "dona-" + uuid.NewString()[:8] + "@alfa.com.br"}))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, e: e, base: srv.URL, c: &http.Client{Jar: jar, Transport: srv.Client().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	login := b.do("GET", "/admin/entrar", nil)
	if p := b.do("POST", "/admin/entrar", url.Values{"_csrf": {b.csrfOf(login)}, "email": {inv.Msg.GetUser().GetEmail()}, "password": {inv.Msg.GetInitialPassword()}}); p.status != 303 {
		t.Fatalf("sign-in: %d\n%s", p.status, p.body)
	}
	b.csrf = b.csrfOf(b.do("GET", "/admin/pagamentos", nil))
	return b
}

func (b *browser) csrfOf(p page) string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("no CSRF field in page (%d):\n%s", p.status, p.body)
	}
	return html.UnescapeString(m[1])
}

func (b *browser) send(req *http.Request) page {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	b.e.mu.Lock()
	b.e.bodies = append(b.e.bodies, string(raw))
	b.e.mu.Unlock()
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(raw)}
}

// do sends a GET, or a POST of an urlencoded form.
func (b *browser) do(method, path string, form url.Values) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return b.send(req)
}

type file struct {
	field, name string
	data        []byte
}

// submit posts the handler form as a browser does (multipart), with the
// CSRF token, fields and files.
func (b *browser) submit(path string, fields map[string]string, files ...file) page {
	b.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("_csrf", b.csrf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	for _, f := range files {
		fw, _ := w.CreateFormFile(f.field, f.name)
		_, _ = fw.Write(f.data)
	}
	_ = w.Close()
	req, err := http.NewRequest("POST", b.base+path, &body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	return b.send(req)
}

var (
	fieldErrorRE = regexp.MustCompile(`<span class="field-error" data-field="([^"]+)">([^<]*)</span>`)
	resendRE     = regexp.MustCompile(`data-resend="([^"]+)"`)
	connRE       = regexp.MustCompile(`data-conn="([^"]+)">([^<]*)<`)
	testRE       = regexp.MustCompile(`data-test="([^"]+)">([^<]*)<`)
)

func fieldErrors(body string) map[string]string {
	out := map[string]string{}
	for _, m := range fieldErrorRE.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

func resends(body string) []string {
	var out []string
	for _, m := range resendRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

var textareaRE = regexp.MustCompile(`<textarea name="([^"]+)"[^>]*>([^<]*)</textarea>`)

// textarea is the content of the named textarea, unescaped.
func textarea(body, name string) string {
	for _, m := range textareaRE.FindAllStringSubmatch(body, -1) {
		if m[1] == name {
			return html.UnescapeString(m[2])
		}
	}
	return "(no such textarea)"
}

func matches(re *regexp.Regexp, body string) map[string]string {
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// keyMaterial is the base64 body of a PEM private key: what must never
// be shown or logged.
func keyMaterial(keyPEM []byte) string {
	lines := strings.Split(strings.TrimSpace(string(keyPEM)), "\n")
	return strings.Join(lines[1:len(lines)-1], "")
}

// must is for test set-up that cannot fail unless the machine is broken.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The Pix and Stripe connection forms: uploads and pasted PEM, each
// violation of the tenants service next to its field in Portuguese, the
// stored summary (certificate subject, issuer, expiry in days, red when
// close), secrets never shown again nor logged, and "Testar conexão"
// reporting the PSP's and Stripe's exact failures.
func TestPaymentHandlerConnections(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	defer admin.SetClock(func() time.Time { return now })()
	oldNow := pki.Now
	pki.Now = func() time.Time { return now }
	defer func() { pki.Now = oldNow }()

	pspCA := must(pki.NewCA("PSP Homologacao CA", 5*365*24*time.Hour))
	hookCA := must(pki.NewCA("PSP Webhooks CA", 5*365*24*time.Hour))
	client := must(pspCA.IssueClient("loja-alfa.pix", 400*24*time.Hour))
	other := must(pspCA.IssueClient("outra-loja", 400*24*time.Hour))
	soon := must(pspCA.IssueClient("loja-alfa.p12", 10*24*time.Hour))
	pki.Now = func() time.Time { return now.Add(-400 * 24 * time.Hour) }
	expired := must(pspCA.IssueClient("loja-alfa.velho", 30*24*time.Hour))
	pki.Now = func() time.Time { return now }

	// The PSP: its TLS server only accepts client certificates of another
	// CA, so the token request fails in the handshake.
	strangerCA := must(pki.NewCA("Outra CA", 365*24*time.Hour))
	pspCert := must(pspCA.IssueServer([]string{"127.0.0.1"}, 365*24*time.Hour))
	psp := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the PSP answered a request it should have refused: %s %s", r.Method, r.URL)
	}))
	psp.TLS = &tls.Config{Certificates: []tls.Certificate{pspCert.TLS()}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: strangerCA.Pool()}
	psp.StartTLS()
	defer psp.Close()
	// Stripe refusing the key, as it answers.
	stripe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_teste")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****XYZ9"}}`)
	}))
	defer stripe.Close()

	const clientSecret = "s3cr3t-do-psp-9f8e7d"
	const p12Password = "Senha-Do-P12-4242"
	const wrongP12Password = "Senha-Trocada-0000"
	const stripeKey = "sk_test_51HxQaZ0123456789abcdefXYZ9"
	const badStripeKey = "pk_test_51HxQaZpublicavel0001"
	p12 := must(pki.EncodePKCS12(must(pki.ParseCredentials(soon.CertPEM, soon.KeyPEM)), p12Password))
	secrets := []string{clientSecret, p12Password, wrongP12Password, stripeKey, badStripeKey, base64.StdEncoding.EncodeToString(p12),
		keyMaterial(client.KeyPEM), keyMaterial(other.KeyPEM), keyMaterial(soon.KeyPEM), keyMaterial(expired.KeyPEM)}

	e, srv := startAdmin(t)
	b := e.signIn(t, srv)
	date := func(c *pki.Issued) string { return c.Cert.NotAfter.In(brt).Format("02/01/2006") }
	pixFields := func(id, env string) map[string]string {
		return map[string]string{"id": id, "environment": env, "key_type": "email", "pix_key": "pix@alfa.com.br",
			"base_url": psp.URL + "/api/v2", "token_url": psp.URL + "/oauth/token", "client_id": "loja-alfa-123", "client_secret": clientSecret,
			"ca_pem": string(pspCA.CertPEM), "webhook_ca_pem": string(hookCA.CertPEM)}
	}

	t.Run("the empty Pix form", func(t *testing.T) {
		p := b.do("GET", "/admin/pagamentos/novo/pix", nil)
		for _, want := range []string{`enctype="multipart/form-data"`, `name="base_url"`, `name="token_url"`, `name="client_id"`,
			`<input type="password" name="client_secret" value=""`, `type="file" name="certificate_file"`, `name="certificate_pem"`,
			`type="file" name="private_key_file"`, `name="private_key_pem"`, `<input type="password" name="pkcs12_password" value=""`,
			`name="ca_pem"`, `name="webhook_ca_pem"`, "passam pelo simulador de PSP da plataforma: nenhuma conexão é necessária"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the form lacks %s", want)
			}
		}
		// Production needs a connection.
		f := pixFields("pix_prod", "production")
		for _, k := range []string{"base_url", "token_url", "client_id", "client_secret", "ca_pem", "webhook_ca_pem"} {
			delete(f, k)
		}
		p = b.submit("/admin/pagamentos/novo/pix", f)
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{"base_url": "Produção exige a conexão com o PSP: preencha os campos abaixo."}) {
			t.Fatalf("production without a connection: %d %v", p.status, got)
		}
	})

	t.Run("a key that is not the certificate's", func(t *testing.T) {
		p := b.submit("/admin/pagamentos/novo/pix", pixFields("pix_prod", "production"),
			file{"certificate_file", "cliente.crt", client.CertPEM}, file{"private_key_file", "cliente.key", other.KeyPEM})
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{"private_key": "A chave privada não pertence a este certificado: envie a chave gerada junto com ele."}) {
			t.Fatalf("mismatched key: %d %v\n%s", p.status, got, p.body)
		}
		// What is public is kept; what is secret (or a file) is asked again.
		if got := strings.Join(resends(p.body), ","); got != "client_secret,certificate,private_key" {
			t.Errorf("resend marks %q", got)
		}
		if !strings.Contains(p.body, `name="base_url" value="`+psp.URL+`/api/v2"`) || !strings.Contains(p.body, `name="client_id" value="loja-alfa-123"`) ||
			textarea(p.body, "webhook_ca_pem") != strings.TrimSpace(string(hookCA.CertPEM)) || textarea(p.body, "ca_pem") != strings.TrimSpace(string(pspCA.CertPEM)) {
			t.Error("public fields lost")
		}
		if textarea(p.body, "private_key_pem") != "" || textarea(p.body, "certificate_pem") != "" {
			t.Error("key or certificate textareas filled")
		}
	})

	t.Run("a key pasted in the certificate field is not shown again", func(t *testing.T) {
		f := pixFields("pix_prod", "production")
		f["certificate_pem"] = string(other.KeyPEM)
		p := b.submit("/admin/pagamentos/novo/pix", f, file{"private_key_file", "cliente.key", client.KeyPEM})
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{"certificate": "Nenhum certificado encontrado: envie o certificado de cliente (.pem, .crt) ou um arquivo .p12/.pfx."}) {
			t.Fatalf("key as certificate: %d %v", p.status, got)
		}
		if got := strings.Join(resends(p.body), ","); got != "client_secret,certificate,private_key" {
			t.Errorf("resend marks %q", got)
		}
	})

	t.Run("an expired certificate", func(t *testing.T) {
		p := b.submit("/admin/pagamentos/novo/pix", pixFields("pix_prod", "production"),
			file{"certificate_file", "velho.pem", expired.CertPEM}, file{"private_key_file", "velho.key", expired.KeyPEM})
		want := "Certificado vencido em " + date(expired) + ": peça um certificado novo ao PSP."
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{"certificate": want}) {
			t.Fatalf("expired certificate: %d %v, want %q", p.status, got, want)
		}
	})

	t.Run("a missing webhook CA and a token URL over http", func(t *testing.T) {
		f := pixFields("pix_prod", "production")
		f["webhook_ca_pem"] = ""
		f["token_url"] = "http://psp.example/oauth/token"
		p := b.submit("/admin/pagamentos/novo/pix", f, file{"certificate_file", "cliente.crt", client.CertPEM}, file{"private_key_file", "cliente.key", client.KeyPEM})
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{
			"token_url":      "Use o endereço https do token OAuth2 do PSP (ex.: https://pix.banco.com.br/oauth/token).",
			"webhook_ca_pem": "Informe a CA (PEM) que emite os certificados de cliente com que o PSP envia os webhooks.",
		}) {
			t.Fatalf("webhook CA and token URL: %d %v", p.status, got)
		}
	})

	t.Run("uploaded PEM certificate and key", func(t *testing.T) {
		p := b.submit("/admin/pagamentos/novo/pix", pixFields("pix_prod", "production"),
			file{"certificate_file", "cliente.crt", client.CertPEM}, file{"private_key_file", "cliente.key", client.KeyPEM})
		if p.status != 303 || p.location != "/admin/pagamentos?ok=salvo" {
			t.Fatalf("save: %d %q\n%s", p.status, p.location, p.body)
		}
		p = b.do("GET", "/admin/pagamentos/pix_prod", nil)
		wantConn := map[string]string{"base_url": psp.URL + "/api/v2", "token_url": psp.URL + "/oauth/token", "client_id": "loja-alfa-123",
			"cert_subject": "CN=loja-alfa.pix", "cert_issuer": "CN=PSP Homologacao CA,O=BCP", "cert_expiry": "vence em " + date(client) + " (em 400 dias)",
			"cert_sha256": must(fingerprint(client)), "webhook": "mTLS (o PSP se identifica com certificado de cliente)"}
		if got := matches(connRE, p.body); p.status != 200 || !equalMaps(got, wantConn) {
			t.Fatalf("stored connection: %d %v\nwant %v", p.status, got, wantConn)
		}
		if !strings.Contains(p.body, `<span class="badge badge-ok" data-conn="cert_expiry">`) || !strings.Contains(p.body, `id="secrets-status">configurado<`) {
			t.Error("expiry badge or status")
		}
		// The form itself stays empty: nothing is filled from storage.
		if strings.Contains(p.body, `name="client_id" value="loja-alfa-123"`) || strings.Contains(p.body, `name="base_url" value="http`) {
			t.Error("connection fields filled from storage")
		}
		list := b.do("GET", "/admin/pagamentos", nil)
		row := regexp.MustCompile(`data-handler="pix_prod"[\s\S]*?data-cert-expiry>([^<]*)<`).FindStringSubmatch(list.body)
		if row == nil || row[1] != "vence em "+date(client)+" (em 400 dias)" {
			t.Fatalf("list expiry: %v\n%s", row, list.body)
		}
		if !strings.Contains(e.logs.String(), "admin: payment handler set") || !strings.Contains(e.logs.String(), "handler=pix_prod secrets=true") {
			t.Errorf("log line:\n%s", e.logs.String())
		}
	})

	t.Run("an edit without connection fields keeps the connection", func(t *testing.T) {
		p := b.submit("/admin/pagamentos/pix_prod", map[string]string{"environment": "production", "key_type": "email", "pix_key": "vendas@alfa.com.br"},
			file{"certificate_file", "", nil}, file{"private_key_file", "", nil})
		if p.status != 303 {
			t.Fatalf("edit: %d\n%s", p.status, p.body)
		}
		if got := matches(connRE, b.do("GET", "/admin/pagamentos/pix_prod", nil).body); got["cert_subject"] != "CN=loja-alfa.pix" || got["client_id"] != "loja-alfa-123" {
			t.Fatalf("connection after an edit: %v", got)
		}
	})

	t.Run("PKCS#12 with its password", func(t *testing.T) {
		f := pixFields("pix_p12", "sandbox")
		f["pkcs12_password"] = wrongP12Password
		p := b.submit("/admin/pagamentos/novo/pix", f, file{"certificate_file", "loja.p12", p12})
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{"pkcs12_password": "Não foi possível abrir o arquivo .p12/.pfx: senha errada ou arquivo danificado."}) {
			t.Fatalf("wrong password: %d %v", p.status, got)
		}
		if got := strings.Join(resends(p.body), ","); got != "client_secret,certificate,pkcs12_password" {
			t.Errorf("resend marks %q", got)
		}
		f["pkcs12_password"] = p12Password
		if p := b.submit("/admin/pagamentos/novo/pix", f, file{"certificate_file", "loja.p12", p12}); p.status != 303 {
			t.Fatalf("PKCS#12: %d\n%s", p.status, p.body)
		}
		// Ten days left: red, here and in the list.
		p = b.do("GET", "/admin/pagamentos/pix_p12", nil)
		want := "vence em " + date(soon) + " (em 10 dias)"
		if got := matches(connRE, p.body); got["cert_subject"] != "CN=loja-alfa.p12" || got["cert_expiry"] != want ||
			!strings.Contains(p.body, `<span class="badge badge-danger" data-conn="cert_expiry">`) {
			t.Fatalf("PKCS#12 connection: %v", got)
		}
		list := b.do("GET", "/admin/pagamentos", nil)
		if !regexp.MustCompile(`data-handler="pix_p12"[\s\S]*?<span class="badge badge-danger" data-cert-expiry>` + regexp.QuoteMeta(want) + `<`).MatchString(list.body) {
			t.Fatalf("list: red expiry missing\n%s", list.body)
		}
	})

	card := func(id, env string) map[string]string {
		return map[string]string{"id": id, "environment": env, "name": "com.stripe.delegated_card", "brand": "visa", "credential_type": "token"}
	}
	t.Run("the Stripe key", func(t *testing.T) {
		p := b.do("GET", "/admin/pagamentos/novo/cartao", nil)
		if !strings.Contains(p.body, "Conexão com a Stripe") || !strings.Contains(p.body, `<input type="password" name="stripe_secret_key" value=""`) || !strings.Contains(p.body, `name="stripe_api_url"`) {
			t.Fatalf("card form:\n%s", p.body)
		}
		p = b.submit("/admin/pagamentos/novo/cartao", card("cartao_stripe", "production"))
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{"stripe_secret_key": "Produção exige a chave secreta da Stripe."}) {
			t.Fatalf("production without a key: %d %v", p.status, got)
		}
		f := card("cartao_stripe", "production")
		f["stripe_secret_key"], f["stripe_api_url"] = badStripeKey, stripe.URL
		p = b.submit("/admin/pagamentos/novo/cartao", f)
		if got := fieldErrors(p.body); p.status != 422 || !equalMaps(got, map[string]string{"stripe_secret_key": "Use uma chave secreta da Stripe (sk_live_…, sk_test_…) ou uma chave restrita (rk_live_…, rk_test_…)."}) {
			t.Fatalf("publishable key: %d %v", p.status, got)
		}
		if got := strings.Join(resends(p.body), ","); got != "stripe_secret_key" || !strings.Contains(p.body, `name="stripe_api_url" value="`+stripe.URL+`"`) {
			t.Errorf("resend marks %q, or the API URL lost", got)
		}
		f["stripe_secret_key"] = stripeKey
		if p := b.submit("/admin/pagamentos/novo/cartao", f); p.status != 303 {
			t.Fatalf("Stripe handler: %d\n%s", p.status, p.body)
		}
		if got := matches(connRE, b.do("GET", "/admin/pagamentos/cartao_stripe", nil).body); !equalMaps(got, map[string]string{"key_hint": "sk_test_…XYZ9", "api_url": stripe.URL}) {
			t.Fatalf("Stripe connection: %v", got)
		}
		list := b.do("GET", "/admin/pagamentos", nil)
		if !regexp.MustCompile(`data-handler="cartao_stripe"[\s\S]*?Chave <code>sk_test_…XYZ9</code>`).MatchString(list.body) {
			t.Fatalf("list: key hint missing\n%s", list.body)
		}
	})

	t.Run("Testar conexão", func(t *testing.T) {
		test := func(id string) page {
			t.Helper()
			return b.do("POST", "/admin/pagamentos/testar/"+id, url.Values{"_csrf": {b.csrf}})
		}
		// The PSP refuses the client certificate in the TLS handshake.
		p := test("pix_prod")
		// (The server asks for a certificate of another CA: ours is not
		// sent, and the PSP's TLS stack says a certificate is required.)
		got := matches(testRE, p.body)
		hook := got["webhook_url"]
		delete(got, "webhook_url")
		if p.status != 200 || !strings.Contains(p.body, `role="alert" id="test-result" data-code="tls_client_rejected"`) || !strings.HasPrefix(hook, srv.URL+"/webhooks/pix/whk_") ||
			!equalMaps(got, map[string]string{"message": "o PSP recusou o certificado de cliente (mTLS): certificate required", "code": "tls_client_rejected"}) {
			t.Fatalf("PSP test: %d %v\n%s", p.status, got, p.body)
		}
		if got := matches(connRE, p.body); got["cert_subject"] != "CN=loja-alfa.pix" {
			t.Errorf("the page around the outcome: %v", got)
		}
		// Stripe refuses the key.
		p = test("cartao_stripe")
		if got := matches(testRE, p.body); p.status != 200 || !equalMaps(got, map[string]string{"code": "invalid_key",
			"message": "o processador recusou a chave secreta configurada: stripecard: read balance: Stripe answered HTTP 401 type=invalid_request_error: Invalid API Key provided: [redacted] (request req_teste) [card: the processor refused the merchant's credentials]"}) {
			t.Fatalf("Stripe test: %d %v", p.status, got)
		}
		// The sandbox handler pays through the platform's simulator: the
		// test registers this store's webhook there.
		p = test("pix")
		got = matches(testRE, p.body)
		hook = got["webhook_url"]
		if p.status != 200 || !strings.Contains(p.body, `role="status" id="test-result" data-code="ok"`) || !strings.HasPrefix(hook, srv.URL+"/webhooks/pix/") ||
			!regexp.MustCompile(`^Conexão com o PSP verificada: token OAuth2 obtido com o certificado de cliente, e webhook registrado para a chave [0-9a-f-]{36} em `+regexp.QuoteMeta(hook)+`\.$`).MatchString(got["message"]) {
			t.Fatalf("sandbox test: %d %v\n%s", p.status, got, p.body)
		}
		// Refusals: no token, another store's (unknown) handler.
		if p := b.do("POST", "/admin/pagamentos/testar/pix", url.Values{}); p.status != 403 {
			t.Errorf("without CSRF: %d", p.status)
		}
		if p := test("nao_existe"); p.status != 404 {
			t.Errorf("unknown handler: %d", p.status)
		}
		if !strings.Contains(e.logs.String(), "admin: payment handler tested") || !strings.Contains(e.logs.String(), "handler=pix_prod ok=false code=tls_client_rejected") {
			t.Errorf("test log line missing")
		}
	})

	t.Run("the payments service down is a service error page", func(t *testing.T) {
		dead, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := dead.Addr().String()
		_ = dead.Close()
		srv2 := e.serve(t, paymentsv1connect.NewPaymentsServiceClient(http.DefaultClient, "http://"+addr))
		b2 := e.signIn(t, srv2)
		if p := b2.do("POST", "/admin/pagamentos/testar/pix_prod", url.Values{"_csrf": {b2.csrf}}); p.status != 503 || strings.Contains(p.body, "test-result") {
			t.Fatalf("payments down: %d\n%s", p.status, p.body)
		}
	})

	// Nothing secret was ever on a page or in a log line.
	e.mu.Lock()
	defer e.mu.Unlock()
	logs := e.logs.String()
	for _, s := range secrets {
		for i, body := range e.bodies {
			if strings.Contains(body, s) || strings.Contains(body, html.EscapeString(s)) {
				t.Errorf("page %d shows a secret (%.12s…)", i, s)
			}
		}
		if strings.Contains(logs, s) {
			t.Errorf("the logs hold a secret (%.12s…)", s)
		}
	}
}

func fingerprint(c *pki.Issued) (string, error) {
	creds, err := pki.ParseCredentials(c.CertPEM, c.KeyPEM)
	if err != nil {
		return "", err
	}
	return hexSHA256(creds.Leaf.Raw), nil
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
