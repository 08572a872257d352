package admin

import (
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// The team page (Equipe): admins invite colleagues with a one-time link to
// choose the password (the tenants service's password links, as `bcpctl
// user invite`); the link is shown once to the inviting admin, who sends
// it. Inviting again someone who never signed in gives a new link and the
// old one stops working. Pending invitations are marked in the list with
// the link's expiry.

type usersData struct {
	Users    []userRow
	CanAdmin bool
	Email    string
	Role     string
	Error    string
	// Invited is set right after an invite: the link is shown this once
	// and never again (only its hash is stored).
	Invited     string
	Link        string
	LinkExpires time.Time
	// Reinvited: the user was already invited; the old link is dead.
	Reinvited bool
}

// userRow is a team member as the list shows it.
type userRow struct {
	ID, Email, Role string
	LastLogin       *time.Time
	Locked          bool
	// Pending: invited by link, not used yet; Expired: the link no longer
	// works (invite again for a new one). Expires is the link's expiry.
	Pending, Expired bool
	Expires          time.Time
}

func userRows(users []*tenantsv1.MerchantUser, now time.Time) []userRow {
	out := make([]userRow, 0, len(users))
	for _, u := range users {
		row := userRow{ID: u.GetId(), Email: u.GetEmail(), Role: u.GetRole(), Locked: u.GetLockedUntil() != nil, Pending: u.GetInvitationPending()}
		if u.GetLastLoginTime() != nil {
			t := u.GetLastLoginTime().AsTime()
			row.LastLogin = &t
		}
		if row.Pending {
			if u.GetInvitationExpireTime() != nil {
				row.Expires = u.GetInvitationExpireTime().AsTime()
			}
			row.Expired = !row.Expires.After(now)
		}
		out = append(out, row)
	}
	return out
}

func (a *Admin) listUsers(r *http.Request, d *usersData) error {
	s := sessionFrom(r.Context())
	resp, err := a.opts.Tenants.ListMerchantUsers(r.Context(), connect.NewRequest(&tenantsv1.ListMerchantUsersRequest{Tenant: s.tenant.String()}))
	if err != nil {
		return err
	}
	d.Users, d.CanAdmin = userRows(resp.Msg.GetUsers(), time.Now()), s.user.GetRole() == "admin"
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

// invite lets a merchant admin invite a colleague (or invite again one
// who never signed in): the answer page shows the one-time link to send.
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
	// Was the user there already (a new link for a pending invitation)?
	if err := a.listUsers(r, &d); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	known := map[string]bool{}
	for _, u := range d.Users {
		known[u.ID] = true
	}
	resp, err := a.opts.Tenants.InviteMerchantUser(r.Context(), connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{
		Tenant: s.tenant.String(), Email: d.Email, Role: d.Role, PasswordLink: true,
	}))
	status := http.StatusOK
	switch {
	case err == nil:
		u := resp.Msg.GetUser()
		d.Invited, d.Email, d.Reinvited = u.GetEmail(), "", known[u.GetId()]
		d.Link = a.origin(r) + "/admin/senha?token=" + resp.Msg.GetPasswordToken()
		d.LinkExpires = resp.Msg.GetPasswordTokenExpireTime().AsTime()
		a.log.InfoContext(r.Context(), "admin: merchant user invited", "tenant_id", s.tenant, "by", s.user.GetId(), "user", u.GetId(), "again", d.Reinvited)
	case isKind(err, apperr.KindAlreadyExists):
		d.Error, status = "Este e-mail já faz parte da equipe (e já entrou no painel).", http.StatusUnprocessableEntity
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
