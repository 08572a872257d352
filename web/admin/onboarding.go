package admin

import (
	"context"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/web/internal/pagesec"
)

// Onboarding (issue 34): the dashboard's "Primeiros passos" (the tenants
// service's go-live checklist) and the page where a user invited with a
// link chooses the password.

// checklistView is the go-live checklist as the dashboard shows it.
type checklistView struct {
	Ready          bool
	Done, Required int32
	Items          []checklistItemView
}

type checklistItemView struct {
	Key, State, StateText, Badge string
	Label, Detail                string
	// Link is the admin page that fixes the item (empty when done or when
	// only the operator can); Command the operator's bcpctl command.
	Link, Command string
}

var checklistStates = map[tenantsv1.ChecklistState]struct{ key, text, badge string }{
	tenantsv1.ChecklistState_CHECKLIST_STATE_DONE:         {"feito", "Feito", "badge-ok"},
	tenantsv1.ChecklistState_CHECKLIST_STATE_MISSING:      {"falta", "Falta", "badge-warn"},
	tenantsv1.ChecklistState_CHECKLIST_STATE_NOT_REQUIRED: {"opcional", "Opcional", "badge-neutral"},
	tenantsv1.ChecklistState_CHECKLIST_STATE_UNKNOWN:      {"indisponivel", "Indisponível", "badge-neutral"},
}

// checklist reads the merchant's go-live checklist; nil when the tenants
// service cannot answer it (the dashboard shows the rest).
func (a *Admin) checklist(ctx context.Context, s *session) *checklistView {
	resp, err := a.opts.Tenants.GetGoLiveChecklist(ctx, connect.NewRequest(&tenantsv1.GetGoLiveChecklistRequest{Tenant: s.tenant.String()}))
	if err != nil {
		a.log.WarnContext(ctx, "admin: go-live checklist", "tenant_id", s.tenant, "err", err)
		return nil
	}
	c := resp.Msg.GetChecklist()
	v := &checklistView{Ready: c.GetReady(), Done: c.GetDone(), Required: c.GetRequired()}
	for _, it := range c.GetItems() {
		st := checklistStates[it.GetState()]
		iv := checklistItemView{Key: it.GetKey(), State: st.key, StateText: st.text, Badge: st.badge, Label: it.GetLabel(), Detail: it.GetDetail()}
		if it.GetState() == tenantsv1.ChecklistState_CHECKLIST_STATE_MISSING {
			iv.Link = it.GetAdminPath()
			if iv.Link == "" {
				iv.Command = it.GetCommand()
			}
		}
		v.Items = append(v.Items, iv)
	}
	return v
}

// ---- set-password page (/admin/senha?token=…) ----

type passwordData struct {
	Token    string // the link's token
	CSRF     string
	Email    string
	Error    string
	Invalid  bool // the link does not work
	MinChars int
}

const minPasswordChars = 10

func (a *Admin) passwordPage(rw http.ResponseWriter, r *http.Request) {
	tid, err := tenancy.From(r.Context())
	if err != nil {
		a.errorPage(rw, r, http.StatusNotFound)
		return
	}
	rw.Header().Set("Referrer-Policy", "no-referrer") // the token is in the URL
	d := passwordData{Token: r.URL.Query().Get("token"), CSRF: a.loginToken(rw, r, tid.String()), MinChars: minPasswordChars}
	resp, err := a.opts.Tenants.CheckPasswordLink(r.Context(), connect.NewRequest(&tenantsv1.CheckPasswordLinkRequest{TenantId: tid.String(), Token: d.Token}))
	switch {
	case err == nil:
		d.Email = resp.Msg.GetEmail()
	case isKind(err, apperr.KindNotFound) || isKind(err, apperr.KindInvalidArgument):
		d.Invalid = true
		a.render(rw, r, http.StatusNotFound, "password", a.newPage(r, "Definir senha", "", d))
		return
	default:
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "password", a.newPage(r, "Definir senha", "", d))
}

func (a *Admin) setPassword(rw http.ResponseWriter, r *http.Request) {
	tid, err := tenancy.From(r.Context())
	if err != nil {
		a.errorPage(rw, r, http.StatusNotFound)
		return
	}
	rw.Header().Set("Referrer-Policy", "no-referrer")
	r.Body = http.MaxBytesReader(rw, r.Body, 64<<10)
	c, cerr := r.Cookie(loginCookie)
	if cerr != nil || !pagesec.Equal(r.PostFormValue("_csrf"), a.mac("login", tid.String(), c.Value)) {
		a.errorPage(rw, r, http.StatusForbidden)
		return
	}
	d := passwordData{Token: r.PostFormValue("token"), CSRF: r.PostFormValue("_csrf"), Email: strings.TrimSpace(r.PostFormValue("email")), MinChars: minPasswordChars}
	pw, again := r.PostFormValue("password"), r.PostFormValue("password_again")
	switch {
	case len([]rune(pw)) < minPasswordChars:
		d.Error = "Use ao menos 10 caracteres."
	case pw != again:
		d.Error = "As duas senhas não são iguais."
	}
	if d.Error != "" {
		a.render(rw, r, http.StatusUnprocessableEntity, "password", a.newPage(r, "Definir senha", "", d))
		return
	}
	_, err = a.opts.Tenants.SetPasswordWithLink(r.Context(), connect.NewRequest(&tenantsv1.SetPasswordWithLinkRequest{TenantId: tid.String(), Token: d.Token, Password: pw}))
	switch {
	case err == nil:
	case isKind(err, apperr.KindNotFound):
		d.Invalid = true
		a.render(rw, r, http.StatusNotFound, "password", a.newPage(r, "Definir senha", "", d))
		return
	case isKind(err, apperr.KindInvalidArgument):
		d.Error = "Senha recusada: use de 10 a 1024 caracteres."
		a.render(rw, r, http.StatusUnprocessableEntity, "password", a.newPage(r, "Definir senha", "", d))
		return
	default:
		a.serviceError(rw, r, err)
		return
	}
	a.log.InfoContext(r.Context(), "admin: password set through an invitation link", "tenant_id", tid)
	http.Redirect(rw, r, "/admin/entrar?ok=senha", http.StatusSeeOther)
}
