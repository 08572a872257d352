package admin

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/handlersecrets"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/brcode"
)

// Payment handlers: the built-in Pix handler and delegated card handlers.
// Their connections (handlerconn.go) are write-only: the tenants service
// seals them and serves only a summary without secrets.

type handlerRow struct {
	ID, Kind, Name, Environment, Summary string
	HasSecrets, Sandbox                  bool
	Conn                                 *connectionView
}

type handlersData struct {
	Handlers []handlerRow
}

// loadHandlers reads the tenant's handlers (without secrets) from the
// discovery data the registry serves.
func (a *Admin) loadHandlers(r *http.Request) ([]*tenantsv1.PaymentHandler, error) {
	resp, err := a.opts.Tenants.GetDiscovery(r.Context(), connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: sessionFrom(r.Context()).tenant.String()}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.GetPaymentHandlers(), nil
}

func (a *Admin) findHandler(r *http.Request, id string) (*tenantsv1.PaymentHandler, []*tenantsv1.PaymentHandler, error) {
	all, err := a.loadHandlers(r)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range all {
		if h.GetId() == id {
			return h, all, nil
		}
	}
	return nil, all, apperr.NotFound("handler_not_found", "no handler %q", id)
}

func isPix(h *tenantsv1.PaymentHandler) bool { return h.GetName() == bcpnames.PixHandler }

// isCard: a handler whose only instruments are cards (delegated tokens).
// Other handlers are listed but only the operator changes them.
func isCard(h *tenantsv1.PaymentHandler) bool {
	var ins []instrumentJSON
	if json.Unmarshal([]byte(h.GetAvailableInstrumentsJson()), &ins) != nil || len(ins) == 0 {
		return false
	}
	return !slices.ContainsFunc(ins, func(in instrumentJSON) bool { return in.Type != "card" })
}

func (a *Admin) paymentHandlers(rw http.ResponseWriter, r *http.Request) {
	all, err := a.loadHandlers(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d := handlersData{}
	for _, h := range all {
		row := handlerRow{ID: h.GetId(), Name: h.GetName(), Environment: envPT[h.GetEnvironment()], HasSecrets: h.GetHasSecrets(),
			Sandbox: h.GetEnvironment() != "production", Conn: connectionOf(h)}
		cfg := map[string]any{}
		_ = json.Unmarshal([]byte(h.GetConfigJson()), &cfg)
		if isPix(h) {
			row.Kind = "Pix"
			if k, _ := cfg["pix_key"].(string); k != "" {
				row.Summary = "Chave " + k
			} else {
				row.Summary = "Chave aleatória do ambiente de testes"
			}
		} else if !isCard(h) {
			row.Kind = "Outro (configurado pelo operador)"
		} else {
			row.Kind = "Cartão (token delegado)"
			var ins []instrumentJSON
			_ = json.Unmarshal([]byte(h.GetAvailableInstrumentsJson()), &ins)
			for _, in := range ins {
				if len(in.Constraints.Brands) > 0 {
					row.Summary = "Bandeiras: " + strings.Join(in.Constraints.Brands, ", ")
				}
			}
		}
		d.Handlers = append(d.Handlers, row)
	}
	a.render(rw, r, http.StatusOK, "handlers", a.newPage(r, "Pagamentos", "pagamentos", d))
}

var envPT = map[string]string{"sandbox": "Testes (sandbox)", "production": "Produção"}

type instrumentJSON struct {
	Type        string `json:"type"`
	Constraints struct {
		Brands []string `json:"brands,omitempty"`
	} `json:"constraints"`
}

// handlerForm is the Pix or card form as typed.
type handlerForm struct {
	New  bool
	Kind string // "pix" | "card"
	ID   string
	// Pix.
	KeyType, PixKey, MerchantName, MerchantCity, ExpirationMinutes string
	// Card.
	Name, Spec, Schema string
	Brands             []string
	CredentialTypes    []string
	// Both.
	Environment string
	// The connection as typed, only what may be shown again: never filled
	// from storage (none sent keeps what is stored). Secrets are not kept
	// here, so no template can render them.
	BaseURL, TokenURL, ClientID, CertificatePEM, CAPEM, WebhookCAPEM string
	StripeAPIURL                                                     string
	// Resend marks the fields that were sent but are not shown again.
	Resend     map[string]bool
	HasSecrets bool
	// Connection is what is stored (connection_json); Test the outcome
	// of "Testar conexão", CanTest whether the button is offered.
	Connection         *connectionView
	Test               *testResult
	CanTest            bool
	Errors             fieldErrors
	Error              string
	certLeaf           *x509.Certificate          // the client certificate sent, for its dates in messages
	config             map[string]json.RawMessage // members the form does not manage, kept
	instruments        string
	position           int32
	version            string
	removeConfirmError string
}

var (
	keyTypes        = []struct{ Value, Label string }{{"cpf", "CPF"}, {"cnpj", "CNPJ"}, {"email", "E-mail"}, {"phone", "Telefone"}, {"evp", "Chave aleatória (EVP)"}}
	cardBrands      = []string{"visa", "mastercard", "elo", "amex", "hipercard"}
	credentialTypes = []string{"token", "delegate_token"}
)

// The template needs the option lists.
func (f handlerForm) KeyTypes() []struct{ Value, Label string } { return keyTypes }
func (f handlerForm) AllBrands() []string                       { return cardBrands }
func (f handlerForm) AllCredentialTypes() []string              { return credentialTypes }
func (f handlerForm) Has(list []string, v string) bool          { return slices.Contains(list, v) }
func (f handlerForm) RemoveError() string                       { return f.removeConfirmError }

func formFromHandler(h *tenantsv1.PaymentHandler) handlerForm {
	f := handlerForm{ID: h.GetId(), Environment: h.GetEnvironment(), HasSecrets: h.GetHasSecrets(), Errors: fieldErrors{}, Connection: connectionOf(h),
		instruments: h.GetAvailableInstrumentsJson(), position: h.GetPosition(), version: h.GetVersion(), Name: h.GetName(), Spec: h.GetSpec(), Schema: h.GetSchema()}
	_ = json.Unmarshal([]byte(h.GetConfigJson()), &f.config)
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(f.config[k], &s)
		return s
	}
	if isPix(h) {
		f.Kind, f.PixKey, f.MerchantName, f.MerchantCity = "pix", str("pix_key"), str("merchant_name"), str("merchant_city")
		if f.PixKey != "" {
			f.KeyType = brcode.ClassifyKey(f.PixKey).String()
		}
		var secs int64
		if json.Unmarshal(f.config["expiration_seconds"], &secs) == nil && secs > 0 {
			f.ExpirationMinutes = strconv.FormatInt(secs/60, 10)
		}
		return f
	}
	if f.Kind = "card"; !isCard(h) {
		f.Kind = "other"
		return f
	}
	var ins []instrumentJSON
	_ = json.Unmarshal([]byte(h.GetAvailableInstrumentsJson()), &ins)
	for _, in := range ins {
		f.Brands = append(f.Brands, in.Constraints.Brands...)
	}
	_ = json.Unmarshal(f.config["accepted_credential_types"], &f.CredentialTypes)
	if len(f.CredentialTypes) == 0 {
		f.CredentialTypes = credentialTypes
	}
	return f
}

// parseHandlerForm reads a submitted form into f, and its connection
// section into secrets (sent: some connection field was filled).
func parseHandlerForm(r *http.Request, f *handlerForm) (secrets handlersecrets.Secrets, sent bool) {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f.Errors = fieldErrors{}
	if f.New {
		f.ID = g("id")
	}
	f.Environment = g("environment")
	secrets, sent = readConnection(r, f)
	if f.Kind == "pix" {
		f.KeyType, f.PixKey, f.MerchantName, f.MerchantCity, f.ExpirationMinutes = g("key_type"), g("pix_key"), g("merchant_name"), g("merchant_city"), g("expiration_minutes")
		return secrets, sent
	}
	f.Name, f.Spec, f.Schema = g("name"), g("spec"), g("schema")
	_ = r.ParseForm()
	f.Brands, f.CredentialTypes = nil, nil
	for _, b := range r.PostForm["brand"] {
		if slices.Contains(cardBrands, b) {
			f.Brands = append(f.Brands, b)
		}
	}
	for _, c := range r.PostForm["credential_type"] {
		if slices.Contains(credentialTypes, c) {
			f.CredentialTypes = append(f.CredentialTypes, c)
		}
	}
	return secrets, sent
}

var (
	nonDigits = regexp.MustCompile(`[^0-9]`)
	brPhone   = regexp.MustCompile(`^\+55[1-9][0-9]{9,10}$`)
)

// normalizePixKey turns a key typed the usual way (CPF with dots, phone
// with parentheses) into the DICT form and checks it is of the chosen type.
func normalizePixKey(kind, raw string) (string, string) {
	k := strings.TrimSpace(raw)
	switch kind {
	case "cpf":
		k = nonDigits.ReplaceAllString(k, "")
	case "cnpj":
		k = strings.ToUpper(strings.NewReplacer(".", "", "/", "", "-", "", " ", "").Replace(k))
	case "phone":
		plus := strings.HasPrefix(k, "+")
		if k = nonDigits.ReplaceAllString(k, ""); k == "" {
			return "", "Informe a chave Pix."
		}
		if !plus && !(strings.HasPrefix(k, "55") && len(k) >= 12) {
			k = "55" + k // a Brazilian number typed without the country code
		}
		// Pix phone keys are Brazilian: +55, a two-digit DDD, 8 or 9 digits.
		if k = "+" + k; !brPhone.MatchString(k) {
			return "", "Telefone inválido: use DDD e número, como (11) 91234-5678."
		}
	case "email":
		k = strings.ToLower(k)
	case "evp":
		k = strings.ToLower(k)
	default:
		return "", "Escolha o tipo da chave Pix."
	}
	if k == "" || k == "+" {
		return "", "Informe a chave Pix."
	}
	if got := brcode.ClassifyKey(k).String(); got != kind {
		return "", map[string]string{
			"cpf":   "CPF inválido: 11 dígitos com dígitos verificadores corretos.",
			"cnpj":  "CNPJ inválido: 14 caracteres com dígitos verificadores corretos.",
			"phone": "Telefone inválido: use DDD e número, como (11) 91234-5678.",
			"email": "E-mail inválido.",
			"evp":   "Chave aleatória inválida: 36 caracteres, como 123e4567-e89b-12d3-a456-426614174000.",
		}[kind]
	}
	return k, ""
}

func httpsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != ""
}

// toRequest validates the form and builds the SetPaymentHandler request.
func (f *handlerForm) toRequest(tenant string, secrets handlersecrets.Secrets, sent bool, all []*tenantsv1.PaymentHandler) *tenantsv1.SetPaymentHandlerRequest {
	if f.Errors == nil {
		f.Errors = fieldErrors{}
	}
	// The id's and the name's rules are the tenants service's (reject shows
	// what it says); that a new handler must not replace one is the form's.
	if f.New {
		if slices.ContainsFunc(all, func(h *tenantsv1.PaymentHandler) bool { return h.GetId() == f.ID }) {
			f.Errors.add("id", "Já existe um meio de pagamento com este identificador.")
		}
		f.position = 0
		for _, h := range all {
			f.position = max(f.position, h.GetPosition()+1)
		}
	}
	if f.Environment != "sandbox" && f.Environment != "production" {
		f.Errors.add("environment", "Escolha testes (sandbox) ou produção.")
	}
	if f.config == nil {
		f.config = map[string]json.RawMessage{}
	}
	set := func(k string, v any) {
		if v == "" || v == 0 || v == nil {
			delete(f.config, k)
			return
		}
		f.config[k], _ = json.Marshal(v)
	}
	if _, ok := f.config["environment"]; ok {
		set("environment", f.Environment)
	}
	h := &tenantsv1.PaymentHandler{Id: f.ID, Environment: f.Environment, Position: f.position, Version: f.version}
	if f.Kind == "pix" {
		h.Name, h.Spec, h.Schema, h.AvailableInstrumentsJson = bcpnames.PixHandler, bcpnames.PixSpec, bcpnames.PixSchema, f.instruments
		if h.AvailableInstrumentsJson == "" {
			h.AvailableInstrumentsJson = `[{"type":"pix"}]`
		}
		key := ""
		if f.PixKey != "" || f.KeyType != "" || f.Environment == "production" {
			var msg string
			if key, msg = normalizePixKey(f.KeyType, f.PixKey); msg != "" {
				field := "pix_key"
				if f.KeyType == "" {
					field = "key_type"
				}
				f.Errors.add(field, msg)
			}
		}
		set("pix_key", key)
		if n := len([]rune(f.MerchantName)); n > 25 {
			f.Errors.add("merchant_name", "No máximo 25 caracteres (limite do QR Code Pix).")
		}
		if n := len([]rune(f.MerchantCity)); n > 15 {
			f.Errors.add("merchant_city", "No máximo 15 caracteres (limite do QR Code Pix).")
		}
		set("merchant_name", f.MerchantName)
		set("merchant_city", f.MerchantCity)
		var secs int
		if f.ExpirationMinutes != "" {
			m, err := strconv.Atoi(f.ExpirationMinutes)
			if err != nil || m < 1 || m > 7*24*60 {
				f.Errors.add("expiration_minutes", "Minutos entre 1 e 10080 (7 dias).")
			}
			secs = m * 60
		}
		set("expiration_seconds", secs)
	} else {
		h.Name, h.Spec, h.Schema = f.Name, f.Spec, f.Schema
		if f.Spec != "" && !httpsURL(f.Spec) {
			f.Errors.add("spec", "Use um endereço https completo.")
		}
		if f.Schema != "" && !httpsURL(f.Schema) {
			f.Errors.add("schema", "Use um endereço https completo.")
		}
		if len(f.Brands) == 0 {
			f.Errors.add("brand", "Escolha ao menos uma bandeira.")
		}
		if len(f.CredentialTypes) == 0 {
			f.Errors.add("credential_type", "Escolha ao menos um tipo de credencial.")
		}
		in := []instrumentJSON{{Type: "card"}}
		in[0].Constraints.Brands = f.Brands
		b, _ := json.Marshal(in)
		h.AvailableInstrumentsJson = string(b)
		if slices.Equal(f.CredentialTypes, credentialTypes) {
			set("accepted_credential_types", nil)
		} else {
			set("accepted_credential_types", f.CredentialTypes)
		}
	}
	cfg, _ := json.Marshal(f.config)
	h.ConfigJson = string(cfg)
	// The connection: all of it or nothing (nothing keeps what is stored;
	// the tenants service checks each field of what is sent).
	req := &tenantsv1.SetPaymentHandlerRequest{Tenant: tenant, Handler: h}
	switch {
	case sent:
		b, _ := json.Marshal(secrets)
		req.SecretsJson = string(b)
	case f.Environment == "production" && !f.HasSecrets:
		f.connectionRequired()
	}
	return req
}

// reject shows a rule the tenants service says the handler breaks next to
// its field.
func (f *handlerForm) reject(field, code, msg string) {
	if s, ok := strings.CutPrefix(field, "secrets_json"); ok {
		f.rejectSecret(strings.TrimPrefix(s, "."), code, msg)
		return
	}
	switch field = strings.TrimPrefix(field, "handler."); field {
	case "id":
		f.Errors.add("id", "Identificador recusado: "+msg)
	case "name", "spec", "schema", "environment":
		f.Errors.add(field, "Valor recusado: "+msg)
	default:
		f.Error = "Configuração recusada: " + msg
	}
}

func (a *Admin) newHandler(rw http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	f := handlerForm{New: true, Environment: "sandbox", Errors: fieldErrors{}}
	switch kind {
	case "pix":
		f.Kind, f.ID = "pix", "pix"
	case "cartao":
		f.Kind, f.ID, f.Brands, f.CredentialTypes = "card", "cartao", []string{"visa", "mastercard"}, credentialTypes
	default:
		a.errorPage(rw, r, http.StatusNotFound)
		return
	}
	a.render(rw, r, http.StatusOK, "handler", a.newPage(r, "Meio de pagamento", "pagamentos", f))
}

func (a *Admin) editHandler(rw http.ResponseWriter, r *http.Request) {
	h, _, err := a.findHandler(r, r.PathValue("id"))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	f := formFromHandler(h)
	f.CanTest = a.opts.Payments != nil
	a.render(rw, r, http.StatusOK, "handler", a.newPage(r, "Meio de pagamento", "pagamentos", f))
}

func (a *Admin) saveHandler(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	var f handlerForm
	var all []*tenantsv1.PaymentHandler
	if kind := r.PathValue("kind"); kind != "" {
		var err error
		if all, err = a.loadHandlers(r); err != nil {
			a.serviceError(rw, r, err)
			return
		}
		switch kind {
		case "pix":
			f = handlerForm{New: true, Kind: "pix"}
		case "cartao":
			f = handlerForm{New: true, Kind: "card"}
		default:
			a.errorPage(rw, r, http.StatusNotFound)
			return
		}
	} else {
		h, list, err := a.findHandler(r, r.PathValue("id"))
		if err != nil {
			a.serviceError(rw, r, err)
			return
		}
		f, all = formFromHandler(h), list
		f.CanTest = a.opts.Payments != nil
	}
	if f.Kind == "other" {
		f.Error = "Este meio de pagamento só pode ser alterado pelo operador da plataforma."
		a.render(rw, r, http.StatusConflict, "handler", a.newPage(r, "Meio de pagamento", "pagamentos", f))
		return
	}
	secrets, sent := parseHandlerForm(r, &f)
	req := f.toRequest(s.tenant.String(), secrets, sent, all)
	// Every rule the tenants service says the handler breaks, next to the
	// form's own.
	check := proto.Clone(req).(*tenantsv1.SetPaymentHandlerRequest)
	check.ValidateOnly = true
	v, err := a.opts.Tenants.SetPaymentHandler(r.Context(), connect.NewRequest(check))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	for _, x := range v.Msg.GetViolations() {
		f.reject(x.GetField(), x.GetCode(), x.GetMessage())
	}
	if len(f.Errors) == 0 && f.Error == "" {
		_, err := a.opts.Tenants.SetPaymentHandler(r.Context(), connect.NewRequest(req))
		if err == nil {
			a.log.InfoContext(r.Context(), "admin: payment handler set", "tenant_id", s.tenant, "by", s.user.GetId(), "handler", f.ID, "secrets", req.GetSecretsJson() != "")
			http.Redirect(rw, r, "/admin/pagamentos?ok=salvo", http.StatusSeeOther)
			return
		}
		e := appErr(err)
		if e.Kind != apperr.KindInvalidArgument {
			a.serviceError(rw, r, err)
			return
		}
		f.reject(e.Field, e.Code, e.Message)
	}
	a.render(rw, r, http.StatusUnprocessableEntity, "handler", a.newPage(r, "Meio de pagamento", "pagamentos", f))
}

func (a *Admin) removeHandler(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	h, _, err := a.findHandler(r, r.PathValue("id"))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	if r.PostFormValue("confirm") != "on" {
		f := formFromHandler(h)
		f.removeConfirmError = "Marque a confirmação para remover."
		a.render(rw, r, http.StatusUnprocessableEntity, "handler", a.newPage(r, "Meio de pagamento", "pagamentos", f))
		return
	}
	if _, err := a.opts.Tenants.RemovePaymentHandler(r.Context(), connect.NewRequest(&tenantsv1.RemovePaymentHandlerRequest{Tenant: s.tenant.String(), HandlerId: h.GetId()})); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.log.InfoContext(r.Context(), "admin: payment handler removed", "tenant_id", s.tenant, "by", s.user.GetId(), "handler", h.GetId())
	http.Redirect(rw, r, "/admin/pagamentos?ok=removido", http.StatusSeeOther)
}
