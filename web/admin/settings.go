package admin

import (
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

var linkTypes = []struct{ Type, Label string }{
	{"privacy_policy", "Política de privacidade"},
	{"terms_of_service", "Termos de uso"},
	{"refund_policy", "Política de trocas e reembolsos"},
	{"shipping_policy", "Política de entrega"},
	{"faq", "Perguntas frequentes"},
}

var consentPurposes = []struct{ Name, Label string }{
	{"marketing", "Marketing (e-mails e ofertas)"},
	{"analytics", "Análise de uso"},
	{"preferences", "Preferências"},
	{"sale_of_data", "Compartilhamento de dados"},
}

type settingsLink struct{ Type, Label, URL, Err string }
type settingsPurpose struct {
	Name, Label string
	On          bool
}

type settingsData struct {
	Name     string
	NameErr  string
	Links    []settingsLink
	Purposes []settingsPurpose
	TTLHours string
	TTLErr   string
	Limits   []settingsLimit
	AP2      bool // AP2 mandates (br.dev.bcp.shopping.ap2_mandate) on
	Error    string
	others   []*tenantsv1.Link // links of other types, kept as they are
}

// settingsLimit is one rate limit field. The ranges are the tenants
// service's to check (its refusal lands on the field); the form only
// parses numbers.
type settingsLimit struct {
	Name, Label, Value, Err string
	field                   string // the tenants service's field name
	rate                    bool   // requests per second (decimal) or a burst (whole)
}

func limitFields(l *tenantsv1.RateLimits) []settingsLimit {
	f := func(v float64) string { return strings.Replace(strconv.FormatFloat(v, 'f', -1, 64), ".", ",", 1) }
	return []settingsLimit{
		{Name: "merchant_rate", Label: "Pedidos de agentes por segundo (loja toda)", Value: f(l.GetMerchantRatePerSecond()), field: "settings.rate_limits.merchant_rate_per_second", rate: true},
		{Name: "merchant_burst", Label: "Pico de pedidos de agentes (loja toda)", Value: strconv.FormatInt(l.GetMerchantBurst(), 10), field: "settings.rate_limits.merchant_burst"},
		{Name: "agent_rate", Label: "Pedidos por segundo de cada agente", Value: f(l.GetAgentRatePerSecond()), field: "settings.rate_limits.agent_rate_per_second", rate: true},
		{Name: "agent_burst", Label: "Pico de pedidos de cada agente", Value: strconv.FormatInt(l.GetAgentBurst(), 10), field: "settings.rate_limits.agent_burst"},
	}
}

// parseLimits reads the rate limit fields into out.RateLimits; a form
// without them (an older page) keeps the stored limits. Empty is 0: the
// platform default.
func parseLimits(r *http.Request, d *settingsData, out *tenantsv1.Settings) (bad bool) {
	if _, ok := r.PostForm["merchant_rate"]; !ok {
		return false
	}
	l := &tenantsv1.RateLimits{}
	for i := range d.Limits {
		f := &d.Limits[i]
		f.Value = strings.TrimSpace(r.PostFormValue(f.Name))
		if f.Value == "" {
			continue
		}
		if f.rate {
			v, err := strconv.ParseFloat(strings.Replace(f.Value, ",", ".", 1), 64)
			if err != nil {
				f.Err, bad = "Use um número (pedidos por segundo, ex.: 0,5 ou 100).", true
				continue
			}
			if f.Name == "merchant_rate" {
				l.MerchantRatePerSecond = v
			} else {
				l.AgentRatePerSecond = v
			}
			continue
		}
		v, err := strconv.ParseInt(f.Value, 10, 64)
		if err != nil {
			f.Err, bad = "Use um número inteiro de pedidos.", true
			continue
		}
		if f.Name == "merchant_burst" {
			l.MerchantBurst = v
		} else {
			l.AgentBurst = v
		}
	}
	out.RateLimits = l
	return bad
}

// reject shows a rule the tenants service says the settings break next to
// its field (the form's own errors come first).
func (d *settingsData) reject(field, msg string) {
	if field == "settings.checkout_ttl_seconds" {
		if d.TTLErr == "" {
			d.TTLErr = "Valor recusado: " + msg
		}
		return
	}
	for i := range d.Limits {
		if d.Limits[i].field == field {
			if d.Limits[i].Err == "" {
				d.Limits[i].Err = msg
			}
			return
		}
	}
	if d.Error == "" {
		d.Error = "Configurações recusadas: " + msg
	}
}

func settingsForm(s *tenantsv1.Settings) settingsData {
	d := settingsData{TTLHours: strconv.FormatInt(s.GetCheckoutTtlSeconds()/3600, 10)}
	if s.GetCheckoutTtlSeconds()%3600 != 0 {
		d.TTLHours = strconv.FormatFloat(float64(s.GetCheckoutTtlSeconds())/3600, 'f', 2, 64)
	}
	for _, lt := range linkTypes {
		l := settingsLink{Type: lt.Type, Label: lt.Label}
		for _, have := range s.GetLinks() {
			if have.GetType() == lt.Type {
				l.URL = have.GetUrl()
			}
		}
		d.Links = append(d.Links, l)
	}
	for _, have := range s.GetLinks() {
		if !slices.ContainsFunc(linkTypes, func(lt struct{ Type, Label string }) bool { return lt.Type == have.GetType() }) {
			d.others = append(d.others, have)
		}
	}
	for _, p := range consentPurposes {
		d.Purposes = append(d.Purposes, settingsPurpose{Name: p.Name, Label: p.Label, On: slices.Contains(s.GetConsentPurposes(), p.Name)})
	}
	d.Limits = limitFields(s.GetRateLimits())
	return d
}

func (a *Admin) loadSettings(r *http.Request) (*tenantsv1.Settings, error) {
	resp, err := a.opts.Tenants.GetSettings(r.Context(), connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: sessionFrom(r.Context()).tenant.String()}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.GetSettings(), nil
}

func (a *Admin) storeState(r *http.Request) (string, bool, error) {
	resp, err := a.opts.Tenants.GetDiscovery(r.Context(), connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: sessionFrom(r.Context()).tenant.String()}))
	if err != nil {
		return "", false, err
	}
	t := resp.Msg.GetTenant()
	return t.GetName(), slices.Contains(t.GetCapabilities(), bcpnames.AP2Mandate), nil
}

func (a *Admin) settings(rw http.ResponseWriter, r *http.Request) {
	s, err := a.loadSettings(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d := settingsForm(s)
	if d.Name, d.AP2, err = a.storeState(r); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "settings", a.newPage(r, "Configurações da loja", "config", d))
}

func (a *Admin) saveSettings(rw http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	if sess.user.GetRole() != "admin" {
		a.errorPage(rw, r, http.StatusForbidden)
		return
	}
	cur, err := a.loadSettings(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d := settingsForm(cur)
	out := &tenantsv1.Settings{Links: d.others}
	bad := false
	oldName, oldAP2, err := a.storeState(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	// A form without the AP2 section (an older page) keeps it as it is.
	d.AP2 = oldAP2
	if _, ok := r.PostForm["ap2_section"]; ok {
		d.AP2 = r.PostFormValue("ap2_mandates") == "on"
	}
	// A form without the field (an older page) keeps the name.
	d.Name = oldName
	if _, ok := r.PostForm["name"]; ok {
		d.Name = strings.TrimSpace(r.PostFormValue("name"))
	}
	if d.Name == "" || len(d.Name) > 200 {
		d.NameErr, bad = "Informe o nome da loja (até 200 caracteres).", true
	}
	for i := range d.Links {
		l := &d.Links[i]
		l.URL = strings.TrimSpace(r.PostFormValue("link_" + l.Type))
		if l.URL == "" {
			continue
		}
		if u, err := url.Parse(l.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			l.Err, bad = "Use um endereço http(s) completo.", true
			continue
		}
		out.Links = append(out.Links, &tenantsv1.Link{Type: l.Type, Url: l.URL})
	}
	for i := range d.Purposes {
		d.Purposes[i].On = r.PostFormValue("consent_"+d.Purposes[i].Name) == "on"
		if d.Purposes[i].On {
			out.ConsentPurposes = append(out.ConsentPurposes, d.Purposes[i].Name)
		}
	}
	// The lifetime's bounds are the tenants service's (reject shows what it
	// says); 0 would mean its default, which the form does not offer.
	d.TTLHours = strings.TrimSpace(r.PostFormValue("ttl_hours"))
	hours, perr := strconv.ParseFloat(strings.Replace(d.TTLHours, ",", ".", 1), 64)
	if perr != nil || !(hours > 0) || math.IsInf(hours, 0) {
		d.TTLErr, bad = "Informe a validade em horas, como 6 ou 0,5.", true
	}
	out.CheckoutTtlSeconds = int64(hours * 3600)
	if parseLimits(r, &d, out) {
		bad = true
	}
	// Every rule the tenants service says the settings break, next to the
	// form's own.
	v, err := a.opts.Tenants.SetSettings(r.Context(), connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: sess.tenant.String(), Settings: out, ValidateOnly: true}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	for _, x := range v.Msg.GetViolations() {
		d.reject(x.GetField(), x.GetMessage())
		bad = true
	}
	if !bad && d.Name != oldName {
		if _, err := a.opts.Tenants.SetTenantName(r.Context(), connect.NewRequest(&tenantsv1.SetTenantNameRequest{Tenant: sess.tenant.String(), Name: d.Name})); err != nil {
			if !isKind(err, apperr.KindInvalidArgument) {
				a.serviceError(rw, r, err)
				return
			}
			d.NameErr, bad = "Nome recusado: "+appErr(err).Message, true
		}
	}
	if !bad && d.AP2 != oldAP2 {
		if _, err := a.opts.Tenants.SetAP2Mandates(r.Context(), connect.NewRequest(&tenantsv1.SetAP2MandatesRequest{Tenant: sess.tenant.String(), Enabled: d.AP2})); err != nil {
			a.serviceError(rw, r, err)
			return
		}
	}
	if !bad {
		_, err := a.opts.Tenants.SetSettings(r.Context(), connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: sess.tenant.String(), Settings: out}))
		if err == nil {
			http.Redirect(rw, r, "/admin/configuracoes?ok=salvo", http.StatusSeeOther)
			return
		}
		if !isKind(err, apperr.KindInvalidArgument) {
			a.serviceError(rw, r, err)
			return
		}
		e := appErr(err)
		d.reject(e.Field, e.Message)
	}
	a.render(rw, r, http.StatusUnprocessableEntity, "settings", a.newPage(r, "Configurações da loja", "config", d))
}
