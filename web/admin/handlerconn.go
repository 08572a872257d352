package admin

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/pki"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// A handler's connection: how a Pix handler reaches its PSP's API Pix
// (URLs, OAuth2 client, mTLS certificate, the CAs) and how a card
// handler reaches Stripe (its secret key). The form sends them as
// handlersecrets' JSON; the tenants service validates and seals them and
// keeps only a Summary in clear (connection_json), which is all the
// admin ever shows. Secrets (client_secret, private key, PKCS#12 file and
// password, Stripe key) live in a Secrets value for one request and are
// never put in the form a template renders.

// maxPEMUpload bounds one uploaded certificate, key or CA file: real ones
// are a few kilobytes.
const maxPEMUpload = 64 << 10

// soonDays: a client certificate expiring within this many days is shown
// in red (PSPs take days to issue a new one).
const soonDays = 30

// clock dates the certificate expiry shown (tests fix it).
var clock = time.Now

// readConnection reads the connection section of a submitted form into
// secrets, keeping in f only what may be shown again; sent says whether
// any connection field was filled (none keeps what is stored).
func readConnection(r *http.Request, f *handlerForm) (sec handlersecrets.Secrets, sent bool) {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f.Resend = map[string]bool{}
	if f.Kind == "card" {
		st := &handlersecrets.Stripe{SecretKey: g("stripe_secret_key"), APIURL: g("stripe_api_url")}
		f.StripeAPIURL = st.APIURL
		if st.SecretKey == "" && st.APIURL == "" {
			return sec, false
		}
		f.Resend["stripe_secret_key"] = st.SecretKey != ""
		sec.Stripe = st
		return sec, true
	}
	p := &handlersecrets.PixPSP{BaseURL: g("base_url"), TokenURL: g("token_url"), ClientID: g("client_id"), ClientSecret: g("client_secret")}
	f.BaseURL, f.TokenURL, f.ClientID = p.BaseURL, p.TokenURL, p.ClientID
	cert, certFile := f.pemInput(r, "certificate", "certificate_file", "certificate_pem")
	key, _ := f.pemInput(r, "private_key", "private_key_file", "private_key_pem")
	ca, _ := f.pemInput(r, "ca_pem", "ca_file", "ca_pem")
	hookCA, _ := f.pemInput(r, "webhook_ca_pem", "webhook_ca_file", "webhook_ca_pem")
	password := r.PostFormValue("pkcs12_password")
	sent = p.BaseURL != "" || p.TokenURL != "" || p.ClientID != "" || p.ClientSecret != "" ||
		len(cert) > 0 || len(key) > 0 || len(ca) > 0 || len(hookCA) > 0 || password != ""
	if !sent {
		return sec, false
	}
	f.Resend["client_secret"] = p.ClientSecret != ""
	f.Resend["private_key"] = len(key) > 0
	f.Resend["pkcs12_password"] = password != ""
	switch {
	case certFile && !isPEM(cert):
		// A binary certificate file: a PKCS#12 bundle (.p12/.pfx) with its
		// key, or a lone DER certificate (.cer/.der).
		if c, err := x509.ParseCertificate(cert); err == nil {
			p.CertificatePEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
			break
		}
		p.PKCS12Base64, p.PKCS12Password = base64.StdEncoding.EncodeToString(cert), password
		if len(key) > 0 {
			f.Errors.add("private_key", "O arquivo .p12/.pfx já traz a chave privada: deixe este campo vazio.")
		}
	default:
		p.CertificatePEM = string(cert)
		if password != "" {
			f.Errors.add("pkcs12_password", "A senha é só para um arquivo .p12/.pfx enviado como certificado.")
		}
	}
	p.PrivateKeyPEM, p.CAPEM = string(key), string(ca)
	p.Webhook = handlersecrets.Webhook{Scheme: "mtls", CAPEM: string(hookCA)}
	if c, err := p.Credentials(); err == nil {
		f.certLeaf = c.Leaf
	}
	sec.PSP = p
	return sec, true
}

// pemInput reads one PEM input, sent as a file (fileName) or pasted
// (textName): the bytes, and whether they came in a file. What was pasted
// is shown again only when it holds no private key (a certificate or a
// CA is public); a file cannot be, so the form asks for it again.
func (f *handlerForm) pemInput(r *http.Request, field, fileName, textName string) ([]byte, bool) {
	text := strings.TrimSpace(r.PostFormValue(textName))
	file, problem := readUpload(r, fileName)
	switch {
	case problem != "":
		f.Errors.add(field, problem)
	case len(file) > 0 && text != "":
		f.Errors.add(field, "Envie o arquivo ou cole o conteúdo, não os dois.")
	}
	if len(file) > 0 {
		f.Resend[field] = true
	}
	if text != "" && field != "private_key" && !strings.Contains(text, "PRIVATE KEY") {
		f.setPEM(field, text)
	} else if text != "" {
		f.Resend[field] = true
	}
	if len(file) > 0 {
		return file, true
	}
	return []byte(text), false
}

// setPEM keeps a pasted public PEM to show again.
func (f *handlerForm) setPEM(field, text string) {
	switch field {
	case "certificate":
		f.CertificatePEM = text
	case "ca_pem":
		f.CAPEM = text
	case "webhook_ca_pem":
		f.WebhookCAPEM = text
	}
}

// readUpload reads an uploaded file of the multipart form (nil when none
// was chosen, or the form was not multipart), or says what is wrong.
func readUpload(r *http.Request, name string) ([]byte, string) {
	file, _, err := r.FormFile(name)
	if errors.Is(err, http.ErrMissingFile) || errors.Is(err, http.ErrNotMultipart) {
		return nil, ""
	}
	if err != nil {
		return nil, "Não foi possível ler o arquivo enviado."
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, maxPEMUpload+1))
	switch {
	case err != nil:
		return nil, "Não foi possível ler o arquivo enviado."
	case len(b) > maxPEMUpload:
		return nil, fmt.Sprintf("Arquivo grande demais: o limite é %d KB.", maxPEMUpload>>10)
	}
	if isPEM(b) {
		b = bytes.TrimSpace(b)
	}
	return b, "" // a binary file (PKCS#12, DER) as is: any byte is data
}

func isPEM(b []byte) bool { return bytes.Contains(b, []byte("-----BEGIN ")) }

// connectionRequired is the error for a production handler with no
// connection stored and none sent.
func (f *handlerForm) connectionRequired() {
	if f.Kind == "card" {
		f.Errors.add("stripe_secret_key", "Produção exige a chave secreta da Stripe.")
		return
	}
	f.Errors.add("base_url", "Produção exige a conexão com o PSP: preencha os campos abaixo.")
}

// secretsField maps the tenants service's field of a secrets violation
// ("secrets_json.psp.private_key_pem") to the form's; "" when the form has
// no such field.
var secretsField = map[string]string{
	"psp.base_url": "base_url", "psp.token_url": "token_url", "psp.client_id": "client_id", "psp.client_secret": "client_secret",
	"psp.certificate_pem": "certificate", "psp.pkcs12_base64": "certificate", "psp.private_key_pem": "private_key",
	"psp.ca_pem": "ca_pem", "psp.webhook.ca_pem": "webhook_ca_pem",
	"stripe.secret_key": "stripe_secret_key", "stripe.api_url": "stripe_api_url",
}

// rejectSecret shows a rule the connection breaks next to its field, in
// words the merchant can act on.
func (f *handlerForm) rejectSecret(field, code, msg string) {
	name := secretsField[field]
	if name == "" {
		f.Error = "Conexão recusada: " + msg
		return
	}
	switch code {
	case "required":
		f.Errors.add(name, "Obrigatório.")
	case "invalid_url":
		f.Errors.add(name, map[string]string{
			"base_url":       "Use o endereço https da API Pix do PSP, com a versão (ex.: https://pix.banco.com.br/api/v2).",
			"token_url":      "Use o endereço https do token OAuth2 do PSP (ex.: https://pix.banco.com.br/oauth/token).",
			"stripe_api_url": "Use um endereço http(s) completo, ou deixe vazio para a API da Stripe.",
		}[name])
	case "invalid_certificate":
		switch {
		case strings.HasSuffix(msg, pki.ErrKeyMismatch.Error()):
			f.Errors.add("private_key", "A chave privada não pertence a este certificado: envie a chave gerada junto com ele.")
		case strings.HasSuffix(msg, pki.ErrNoKey.Error()) && name == "certificate":
			f.Errors.add("certificate", "O arquivo .p12/.pfx não traz a chave privada do certificado.")
		case strings.HasSuffix(msg, pki.ErrNoKey.Error()):
			f.Errors.add("private_key", "Nenhuma chave privada encontrada: envie o arquivo .key (PEM) do certificado.")
		case strings.HasSuffix(msg, pki.ErrNoCertificate.Error()):
			f.Errors.add("certificate", "Nenhum certificado encontrado: envie o certificado de cliente (.pem, .crt) ou um arquivo .p12/.pfx.")
		case strings.HasSuffix(msg, pki.ErrBadPassword.Error()):
			f.Errors.add("pkcs12_password", "Não foi possível abrir o arquivo .p12/.pfx: senha errada ou arquivo danificado.")
		default:
			f.Errors.add(name, "Certificado recusado: "+msg)
		}
	case "certificate_not_valid":
		switch c := f.certLeaf; {
		case c != nil && clock().After(c.NotAfter):
			f.Errors.add(name, "Certificado vencido em "+c.NotAfter.In(saoPaulo).Format("02/01/2006")+": peça um certificado novo ao PSP.")
		case c != nil:
			f.Errors.add(name, "Este certificado só vale a partir de "+c.NotBefore.In(saoPaulo).Format("02/01/2006")+".")
		default:
			f.Errors.add(name, "Certificado fora da validade: "+msg)
		}
	case "invalid_ca":
		if name == "webhook_ca_pem" {
			f.Errors.add(name, "Informe a CA (PEM) que emite os certificados de cliente com que o PSP envia os webhooks.")
		} else {
			f.Errors.add(name, "CA inválida: cole o certificado (PEM) da autoridade que assina o servidor do PSP.")
		}
	case "invalid_stripe_key":
		f.Errors.add(name, "Use uma chave secreta da Stripe (sk_live_…, sk_test_…) ou uma chave restrita (rk_live_…, rk_test_…).")
	default:
		f.Errors.add(name, "Valor recusado: "+msg)
	}
}

// connectionView is what is stored of a handler's connection, as shown.
type connectionView struct {
	Kind                                         string // "pix_psp" | "stripe"
	BaseURL, TokenURL, ClientID                  string
	CertSubject, CertIssuer, CertSHA256, Webhook string
	ExpiryDate, Expiry                           string // "02/03/2027", "vence em 02/03/2027 (em 400 dias)"
	ExpirySoon                                   bool   // expired or within soonDays: red
	KeyHint, APIURL                              string
}

var webhookSchemePT = map[string]string{
	"mtls":        "mTLS (o PSP se identifica com certificado de cliente)",
	"hmac-sha256": "HMAC-SHA256 (cabeçalho assinado com segredo compartilhado)",
}

// connectionOf reads a handler's connection_json (nil: none stored).
func connectionOf(h *tenantsv1.PaymentHandler) *connectionView {
	var s handlersecrets.Summary
	if json.Unmarshal([]byte(h.GetConnectionJson()), &s) != nil || s.Kind == "" {
		return nil
	}
	v := &connectionView{Kind: s.Kind, BaseURL: s.BaseURL, TokenURL: s.TokenURL, ClientID: s.ClientID, CertSubject: s.CertSubject,
		CertIssuer: s.CertIssuer, CertSHA256: s.CertSHA256, KeyHint: s.KeyHint, APIURL: s.APIURL, Webhook: webhookSchemePT[s.WebhookScheme]}
	if v.Webhook == "" {
		v.Webhook = s.WebhookScheme
	}
	if !s.CertExpires.IsZero() {
		v.ExpiryDate, v.Expiry, v.ExpirySoon = expiry(s.CertExpires, clock())
	}
	return v
}

// expiry says when a certificate expires, counted in São Paulo calendar
// days from now.
func expiry(notAfter, now time.Time) (date, text string, soon bool) {
	day := func(t time.Time) time.Time {
		y, m, d := t.In(saoPaulo).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	date = notAfter.In(saoPaulo).Format("02/01/2006")
	n := int(day(notAfter).Sub(day(now)).Hours() / 24)
	days := func(n int) string {
		if n == 1 {
			return "1 dia"
		}
		return fmt.Sprintf("%d dias", n)
	}
	switch {
	case !now.Before(notAfter):
		if n == 0 {
			return date, "venceu hoje (" + date + ")", true
		}
		return date, "venceu em " + date + " (há " + days(-n) + ")", true
	case n == 0:
		return date, "vence hoje (" + date + ")", true
	}
	return date, "vence em " + date + " (em " + days(n) + ")", n <= soonDays
}

// testResult is the outcome of "Testar conexão".
type testResult struct {
	OK                        bool
	Code, Message, WebhookURL string
}

// origin is the merchant origin the request came to: the PSP posts the
// webhook the test registers there.
func (a *Admin) origin(r *http.Request) string {
	scheme := "https"
	if r.TLS == nil && a.opts.PublicScheme == "http" {
		scheme = "http"
	}
	return scheme + "://" + strings.ToLower(r.Host)
}

// testHandler is "Testar conexão": the payments service does what a first
// payment would (a token over mTLS and the webhook's registration, or an
// authenticated read at Stripe) and says what failed; the edit page shows
// the outcome.
func (a *Admin) testHandler(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	h, _, err := a.findHandler(r, r.PathValue("id"))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	f := formFromHandler(h)
	f.CanTest = a.opts.Payments != nil
	if f.Kind == "other" || !f.CanTest {
		f.Error = "Este meio de pagamento não pode ser testado pelo painel."
		a.render(rw, r, http.StatusConflict, "handler", a.newPage(r, "Meio de pagamento", "pagamentos", f))
		return
	}
	resp, err := a.opts.Payments.TestHandler(r.Context(), connect.NewRequest(&paymentsv1.TestHandlerRequest{HandlerId: h.GetId(), BaseUrl: a.origin(r)}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	m := resp.Msg
	f.Test = &testResult{OK: m.GetOk(), Code: m.GetCode(), Message: m.GetMessage(), WebhookURL: m.GetWebhookUrl()}
	level := slog.LevelInfo
	if !m.GetOk() {
		level = slog.LevelWarn
	}
	a.log.Log(r.Context(), level, "admin: payment handler tested", "tenant_id", s.tenant, "by", s.user.GetId(), "handler", h.GetId(), "ok", m.GetOk(), "code", m.GetCode())
	a.render(rw, r, http.StatusOK, "handler", a.newPage(r, "Meio de pagamento", "pagamentos", f))
}
