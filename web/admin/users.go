package admin

import (
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

type usersData struct {
	Users    []*tenantsv1.MerchantUser
	CanAdmin bool
	Email    string
	Role     string
	Error    string
	// Invited is set right after an invite: the initial password is
	// shown this once and never again.
	Invited  string
	Password string
}

func (a *Admin) listUsers(r *http.Request, d *usersData) error {
	s := sessionFrom(r.Context())
	resp, err := a.opts.Tenants.ListMerchantUsers(r.Context(), connect.NewRequest(&tenantsv1.ListMerchantUsersRequest{Tenant: s.tenant.String()}))
	if err != nil {
		return err
	}
	d.Users, d.CanAdmin = resp.Msg.GetUsers(), s.user.GetRole() == "admin"
	return nil
}

func (a *Admin) users(rw http.ResponseWriter, r *http.Request) {
	d := usersData{Role: "staff"}
	if err := a.listUsers(r, &d); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "users", a.newPage(r, "Equipe", "equipe", d))
}

// invite lets a merchant admin invite a colleague; the initial password
// is shown once on the answer page (never stored in clear).
func (a *Admin) invite(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	if s.user.GetRole() != "admin" {
		a.errorPage(rw, r, http.StatusForbidden)
		return
	}
	d := usersData{Email: strings.TrimSpace(r.PostFormValue("email")), Role: r.PostFormValue("role")}
	if d.Role != "admin" {
		d.Role = "staff"
	}
	resp, err := a.opts.Tenants.InviteMerchantUser(r.Context(), connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: s.tenant.String(), Email: d.Email, Role: d.Role}))
	status := http.StatusOK
	switch {
	case err == nil:
		d.Invited, d.Password, d.Email = resp.Msg.GetUser().GetEmail(), resp.Msg.GetInitialPassword(), ""
		a.log.InfoContext(r.Context(), "admin: merchant user invited", "tenant_id", s.tenant, "by", s.user.GetId(), "user", resp.Msg.GetUser().GetId())
	case isKind(err, apperr.KindAlreadyExists):
		d.Error, status = "Este e-mail já faz parte da equipe.", http.StatusUnprocessableEntity
	case isKind(err, apperr.KindInvalidArgument):
		d.Error, status = "Informe um e-mail válido.", http.StatusUnprocessableEntity
	default:
		a.serviceError(rw, r, err)
		return
	}
	if err := a.listUsers(r, &d); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, status, "users", a.newPage(r, "Equipe", "equipe", d))
}
