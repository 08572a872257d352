package admin

import (
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

type apiKeysData struct {
	Keys    []*tenantsv1.APIKey
	Profile string
	Label   string
	Errors  fieldErrors
	// Secret is set right after creation: shown this once.
	Secret string
	// AuthPolicy is the tenant's agent authentication policy.
	AuthPolicy agentPolicy
	CanAdmin   bool
}

func (a *Admin) listKeys(r *http.Request, d *apiKeysData) error {
	resp, err := a.opts.Tenants.ListAPIKeys(r.Context(), connect.NewRequest(&tenantsv1.ListAPIKeysRequest{Tenant: sessionFrom(r.Context()).tenant.String()}))
	if err != nil {
		return err
	}
	d.Keys = resp.Msg.GetApiKeys()
	d.CanAdmin = sessionFrom(r.Context()).user.GetRole() == "admin"
	if d.AuthPolicy.Policy == "" && d.AuthPolicy.Err == "" {
		if d.AuthPolicy, err = a.loadPolicy(r); err != nil {
			return err
		}
	}
	return nil
}

func (a *Admin) apiKeys(rw http.ResponseWriter, r *http.Request) {
	d := apiKeysData{Errors: fieldErrors{}}
	if err := a.listKeys(r, &d); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "apikeys", a.newPage(r, "Acesso de agentes", "agentes", d))
}

func (a *Admin) createAPIKey(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	if s.user.GetRole() != "admin" {
		a.errorPage(rw, r, http.StatusForbidden)
		return
	}
	d := apiKeysData{Profile: strings.TrimSpace(r.PostFormValue("agent_profile_url")), Label: strings.TrimSpace(r.PostFormValue("label")), Errors: fieldErrors{}}
	status := http.StatusOK
	if len(d.Label) > 200 {
		d.Errors.add("label", "No máximo 200 caracteres.")
	} else {
		resp, err := a.opts.Tenants.CreateAPIKey(r.Context(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: s.tenant.String(), AgentProfileUrl: d.Profile, Label: d.Label}))
		switch {
		case err == nil:
			d.Secret, d.Profile, d.Label = resp.Msg.GetSecret(), "", ""
			a.log.InfoContext(r.Context(), "admin: API key created", "tenant_id", s.tenant, "by", s.user.GetId(), "key", resp.Msg.GetApiKey().GetId())
		case isKind(err, apperr.KindInvalidArgument):
			d.Errors.add("agent_profile_url", "Informe a URL https do perfil do agente.")
		default:
			a.serviceError(rw, r, err)
			return
		}
	}
	if len(d.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	if err := a.listKeys(r, &d); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, status, "apikeys", a.newPage(r, "Acesso de agentes", "agentes", d))
}

func (a *Admin) revokeAPIKey(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	if s.user.GetRole() != "admin" {
		a.errorPage(rw, r, http.StatusForbidden)
		return
	}
	if _, err := a.opts.Tenants.RevokeAPIKey(r.Context(), connect.NewRequest(&tenantsv1.RevokeAPIKeyRequest{Tenant: s.tenant.String(), ApiKeyId: r.PathValue("id")})); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	http.Redirect(rw, r, "/admin/agentes?ok=revogada", http.StatusSeeOther)
}
