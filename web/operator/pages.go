package operator

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// pageSize of the tenant list: keyset pagination by slug, so page 200 of
// 10 000 tenants costs the same as page 1.
const pageSize = 50

type tenantRow struct {
	*tenantsv1.Tenant
	Created   time.Time
	Suspended bool
	// Readiness is the go-live checklist's state: "pronto para vender",
	// "3/6 prontos", or "" when the registry could not say.
	Readiness string
	Ready     bool
}

type listData struct {
	Query   string
	Tenants []tenantRow
	Next    string // next page's URL, "" on the last page
	First   bool   // this is the first page
}

func (c *Console) tenants(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	token := r.URL.Query().Get("apos")
	resp, err := c.opts.Tenants.ListTenants(r.Context(), connect.NewRequest(&tenantsv1.ListTenantsRequest{PageSize: pageSize, PageToken: token, Query: q}))
	if err != nil {
		if appErr(err).Kind == apperr.KindInvalidArgument {
			c.errorPage(w, r, http.StatusNotFound) // a mangled page token or query
			return
		}
		c.serviceError(w, r, err)
		return
	}
	d := listData{Query: q, First: token == ""}
	for _, t := range resp.Msg.GetTenants() {
		d.Tenants = append(d.Tenants, row(t))
	}
	c.readiness(r, d.Tenants)
	if n := resp.Msg.GetNextPageToken(); n != "" {
		v := url.Values{"apos": {n}}
		if q != "" {
			v.Set("q", q)
		}
		d.Next = "/lojas?" + v.Encode()
	}
	p := c.newPage(r, "Lojas", d)
	p.Nav = "lojas"
	c.render(w, r, http.StatusOK, "tenants", p)
}

// readiness fills each row's go-live state from one batch call (issue 34);
// without an answer the column stays empty rather than failing the list.
func (c *Console) readiness(r *http.Request, rows []tenantRow) {
	if len(rows) == 0 {
		return
	}
	ids := make([]string, len(rows))
	for i, t := range rows {
		ids[i] = t.GetId()
	}
	resp, err := c.opts.Tenants.ListGoLiveChecklists(r.Context(), connect.NewRequest(&tenantsv1.ListGoLiveChecklistsRequest{TenantIds: ids}))
	if err != nil {
		c.log.WarnContext(r.Context(), "operator console: go-live checklists", "err", err)
		return
	}
	byID := map[string]*tenantsv1.GoLiveChecklist{}
	for _, cl := range resp.Msg.GetChecklists() {
		byID[cl.GetTenantId()] = cl
	}
	for i := range rows {
		cl := byID[rows[i].GetId()]
		switch {
		case cl == nil:
		case cl.GetReady():
			rows[i].Readiness, rows[i].Ready = "pronto para vender", true
		default:
			rows[i].Readiness = strconv.Itoa(int(cl.GetDone())) + "/" + strconv.Itoa(int(cl.GetRequired())) + " prontos"
		}
	}
}

func row(t *tenantsv1.Tenant) tenantRow {
	return tenantRow{Tenant: t, Created: t.GetCreateTime().AsTime(), Suspended: t.GetStatus() == tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED}
}

// field is a form field's typed value and its error.
type field struct {
	Value string
	Err   string
}

type newData struct {
	Name, Slug, Domain, Environment field
	Error                           string
}

func (c *Console) newTenant(w http.ResponseWriter, r *http.Request) {
	c.renderNew(w, r, http.StatusOK, newData{Environment: field{Value: "production"}})
}

var environments = map[string]tenantsv1.Environment{
	"production":  tenantsv1.Environment_ENVIRONMENT_PRODUCTION,
	"sandbox":     tenantsv1.Environment_ENVIRONMENT_SANDBOX,
	"development": tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
}

func (c *Console) createTenant(w http.ResponseWriter, r *http.Request) {
	d := newData{
		Name:        field{Value: strings.TrimSpace(r.PostFormValue("name"))},
		Slug:        field{Value: strings.TrimSpace(r.PostFormValue("slug"))},
		Domain:      field{Value: strings.TrimSpace(r.PostFormValue("domain"))},
		Environment: field{Value: r.PostFormValue("environment")},
	}
	env, ok := environments[d.Environment.Value]
	if !ok {
		d.Environment.Err = "Escolha um ambiente."
	}
	if d.Name.Value == "" {
		d.Name.Err = "Informe o nome da loja."
	}
	if d.Domain.Value == "" {
		d.Domain.Err = "Informe o primeiro domínio da loja."
	}
	if d.Name.Err != "" || d.Domain.Err != "" || d.Environment.Err != "" {
		c.renderNew(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	resp, err := c.opts.Tenants.CreateTenant(r.Context(), connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: d.Name.Value, Slug: d.Slug.Value, Domains: []string{d.Domain.Value}, Environment: env,
	}))
	if err != nil {
		e := appErr(err)
		switch {
		case e.Code == "duplicate_slug":
			d.Slug.Err = "Este identificador já é de outra loja."
		case e.Code == "duplicate_domain":
			d.Domain.Err = "Este domínio já é de outra loja."
		case e.Kind != apperr.KindInvalidArgument:
			c.serviceError(w, r, err)
			return
		case e.Field == "name":
			d.Name.Err = "Nome inválido (de 1 a 200 caracteres)."
		case e.Field == "slug":
			d.Slug.Err = "Use só letras minúsculas sem acento, números e hífens (até 63)."
		case strings.HasPrefix(e.Field, "domain"):
			d.Domain.Err = domainMessage(e)
		default:
			d.Error = "Não foi possível criar a loja: " + e.Message
		}
		c.renderNew(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	http.Redirect(w, r, "/lojas/"+resp.Msg.GetTenant().GetId()+"?ok=criada", http.StatusSeeOther)
}

func (c *Console) renderNew(w http.ResponseWriter, r *http.Request, status int, d newData) {
	p := c.newPage(r, "Nova loja", d)
	p.Nav = "nova"
	c.render(w, r, status, "new", p)
}

func domainMessage(e *apperr.Error) string {
	switch e.Code {
	case "reserved_domain":
		return "Este domínio é reservado ao console do operador."
	case "duplicate_domain":
		return "Este domínio já é de outra loja."
	}
	return "Domínio inválido: use um nome como loja.com.br (sem http:// nem caminho)."
}

// usageWindow is the console's usage period: the last 30 days.
const usageWindow = 30 * 24 * time.Hour

type tenantData struct {
	Tenant    *tenantsv1.Tenant
	Created   time.Time
	Suspended bool
	Since     time.Time
	Until     time.Time
	Usage     *tenantsv1.GetUsageResponse // nil: unavailable
	Stats     stats
	Domain    field // the add-domain form
	Error     string
}

func (c *Console) tenant(w http.ResponseWriter, r *http.Request) {
	c.renderTenant(w, r, http.StatusOK, field{}, "")
}

// renderTenant shows a tenant with the add-domain form's value and error
// and an action's error, if any.
func (c *Console) renderTenant(w http.ResponseWriter, r *http.Request, status int, domain field, actionErr string) {
	ctx := r.Context()
	resp, err := c.opts.Tenants.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: r.PathValue("id")}))
	if err != nil {
		c.serviceError(w, r, err)
		return
	}
	t := resp.Msg.GetTenant()
	until := c.now()
	since := until.Add(-usageWindow)
	d := tenantData{Tenant: t, Created: t.GetCreateTime().AsTime(), Since: since, Until: until, Domain: domain, Error: actionErr,
		Suspended: t.GetStatus() == tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED}
	u, err := c.opts.Tenants.GetUsage(ctx, connect.NewRequest(&tenantsv1.GetUsageRequest{Tenant: t.GetId(), SinceUnix: since.Unix(), UntilUnix: until.Unix()}))
	if err != nil {
		c.log.WarnContext(ctx, "operator console: usage unavailable", "tenant_id", t.GetId(), "err", err)
	} else {
		d.Usage = u.Msg
	}
	d.Stats = c.stats(ctx, t.GetId(), since, until)
	c.render(w, r, status, "tenant", c.newPage(r, t.GetName(), d))
}

func (c *Console) setStatus(w http.ResponseWriter, r *http.Request) {
	var st tenantsv1.TenantStatus
	var ok string
	switch r.PostFormValue("acao") {
	case "suspender":
		st, ok = tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED, "suspensa"
	case "reativar":
		st, ok = tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE, "reativada"
	default:
		c.errorPage(w, r, http.StatusBadRequest)
		return
	}
	resp, err := c.opts.Tenants.SetTenantStatus(r.Context(), connect.NewRequest(&tenantsv1.SetTenantStatusRequest{Tenant: r.PathValue("id"), Status: st}))
	if err != nil {
		c.serviceError(w, r, err)
		return
	}
	c.log.InfoContext(r.Context(), "operator console: tenant status", "tenant_id", resp.Msg.GetTenant().GetId(), "status", st.String())
	http.Redirect(w, r, "/lojas/"+resp.Msg.GetTenant().GetId()+"?ok="+ok, http.StatusSeeOther)
}

func (c *Console) addDomain(w http.ResponseWriter, r *http.Request) {
	f := field{Value: strings.TrimSpace(r.PostFormValue("domain"))}
	if f.Value == "" {
		f.Err = "Informe o domínio."
		c.renderTenant(w, r, http.StatusUnprocessableEntity, f, "")
		return
	}
	resp, err := c.opts.Tenants.AddDomain(r.Context(), connect.NewRequest(&tenantsv1.AddDomainRequest{
		Tenant: r.PathValue("id"), Domain: f.Value, Primary: r.PostFormValue("primary") == "1",
	}))
	if err != nil {
		e := appErr(err)
		if e.Kind != apperr.KindInvalidArgument && e.Kind != apperr.KindAlreadyExists {
			c.serviceError(w, r, err)
			return
		}
		f.Err = domainMessage(e)
		c.renderTenant(w, r, http.StatusUnprocessableEntity, f, "")
		return
	}
	http.Redirect(w, r, "/lojas/"+resp.Msg.GetTenant().GetId()+"?ok=dominio", http.StatusSeeOther)
}

func (c *Console) removeDomain(w http.ResponseWriter, r *http.Request) {
	resp, err := c.opts.Tenants.RemoveDomain(r.Context(), connect.NewRequest(&tenantsv1.RemoveDomainRequest{
		Tenant: r.PathValue("id"), Domain: r.PostFormValue("domain"),
	}))
	if err != nil {
		e := appErr(err)
		switch e.Code {
		case "last_domain":
			c.renderTenant(w, r, http.StatusConflict, field{}, "Não é possível remover o único domínio da loja: adicione outro antes.")
			return
		case "domain_not_found":
			c.renderTenant(w, r, http.StatusNotFound, field{}, "Este domínio não é desta loja.")
			return
		}
		c.serviceError(w, r, err)
		return
	}
	http.Redirect(w, r, "/lojas/"+resp.Msg.GetTenant().GetId()+"?ok=removido", http.StatusSeeOther)
}

// formatDay shows a YYYY-MM-DD day as DD/MM/YYYY.
func formatDay(s string) string {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return s
	}
	return t.Format("02/01/2006")
}

// errorRate is errors/requests as "1,5 %" (one decimal), "—" without
// requests.
func errorRate(errors, requests int64) string {
	if requests <= 0 {
		return "—"
	}
	tenths := (errors*1000 + requests/2) / requests
	return strconv.FormatInt(tenths/10, 10) + "," + strconv.FormatInt(tenths%10, 10) + " %"
}

// formatInt groups thousands the Brazilian way: 12.345.
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteByte(s[i])
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
