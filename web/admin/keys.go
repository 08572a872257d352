package admin

import (
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/apperr"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// adminOnly refuses the page to staff users: keys, payment handlers and
// the agent policy change what agents and PSPs trust.
func (a *Admin) adminOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		if s := sessionFrom(r.Context()); s == nil || s.user.GetRole() != "admin" {
			a.errorPage(rw, r, http.StatusForbidden)
			return
		}
		h(rw, r)
	}
}

// signingKeyRow is one key as the page shows it.
type signingKeyRow struct {
	Kid, Alg, Thumbprint string
	Status, StatusLabel  string // current | pending | retiring | retired | revoked
	Created, SignFrom    string
	RetireAt, RevokedAt  string
	Revocable            bool
}

type keysData struct {
	Keys   []signingKeyRow
	Delay  string // "1h" | "0"
	Errors fieldErrors
	Error  string
	// Confirm is the key being revoked on the confirmation page.
	Confirm *signingKeyRow
}

var keyStatus = map[tenantsv1.SigningKeyStatus][2]string{
	tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_PENDING:  {"pending", "Publicada, assina em breve"},
	tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_CURRENT:  {"current", "Em uso"},
	tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRING: {"retiring", "Aposentada (ainda publicada)"},
	tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_RETIRED:  {"retired", "Aposentada"},
	tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_REVOKED:  {"revoked", "Revogada"},
}

func keyRow(k *tenantsv1.SigningKey) signingKeyRow {
	st := keyStatus[k.GetStatus()]
	row := signingKeyRow{Kid: k.GetKid(), Alg: k.GetAlg(), Status: st[0], StatusLabel: st[1],
		Created: fmtTime(k.GetCreateTime().AsTime()), SignFrom: fmtTime(k.GetSignFromTime().AsTime()),
		Revocable: k.GetStatus() != tenantsv1.SigningKeyStatus_SIGNING_KEY_STATUS_REVOKED}
	if k.GetRetireTime() != nil {
		row.RetireAt = fmtTime(k.GetRetireTime().AsTime())
	}
	if k.GetRevokeTime() != nil {
		row.RevokedAt = fmtTime(k.GetRevokeTime().AsTime())
	}
	// The RFC 7638 thumbprint of the published JWK, computed here so the
	// merchant can compare it with what verifiers show.
	if j, err := httpsig.ParseJWK([]byte(k.GetPublicJwkJson())); err == nil {
		row.Thumbprint, _ = httpsig.Thumbprint(j)
	}
	return row
}

func fmtTime(t time.Time) string { return t.In(saoPaulo).Format("02/01/2006 15:04") }

func (a *Admin) listSigningKeys(r *http.Request) ([]signingKeyRow, error) {
	resp, err := a.opts.Tenants.ListSigningKeys(r.Context(), connect.NewRequest(&tenantsv1.ListSigningKeysRequest{Tenant: sessionFrom(r.Context()).tenant.String()}))
	if err != nil {
		return nil, err
	}
	var out []signingKeyRow
	// Newest first: the key in use and the pending one lead the list.
	keys := resp.Msg.GetKeys()
	for i := len(keys) - 1; i >= 0; i-- {
		out = append(out, keyRow(keys[i]))
	}
	return out, nil
}

func (a *Admin) signingKeys(rw http.ResponseWriter, r *http.Request) {
	a.renderKeys(rw, r, http.StatusOK, keysData{Delay: "1h", Errors: fieldErrors{}})
}

func (a *Admin) renderKeys(rw http.ResponseWriter, r *http.Request, status int, d keysData) {
	keys, err := a.listSigningKeys(r)
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d.Keys = keys
	a.render(rw, r, status, "keys", a.newPage(r, "Chaves de assinatura", "chaves", d))
}

func (a *Admin) rotateSigningKey(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	d := keysData{Delay: r.PostFormValue("delay"), Errors: fieldErrors{}}
	var delay time.Duration
	switch d.Delay {
	case "1h":
		delay = time.Hour
	case "0":
	default:
		d.Errors.add("delay", "Escolha quando a nova chave começa a assinar.")
		a.renderKeys(rw, r, http.StatusUnprocessableEntity, d)
		return
	}
	resp, err := a.opts.Tenants.RotateSigningKey(r.Context(), connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: s.tenant.String(), Delay: durationpb.New(delay)}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.log.InfoContext(r.Context(), "admin: signing key rotated", "tenant_id", s.tenant, "by", s.user.GetId(), "kid", resp.Msg.GetKey().GetKid())
	http.Redirect(rw, r, "/admin/chaves?ok=girada", http.StatusSeeOther)
}

// findKey returns the tenant's key kid, or not found (another tenant's
// kid included).
func (a *Admin) findKey(r *http.Request, kid string) (*signingKeyRow, error) {
	keys, err := a.listSigningKeys(r)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		if keys[i].Kid == kid {
			return &keys[i], nil
		}
	}
	return nil, apperr.NotFound("signing_key_not_found", "no key %q", kid)
}

// confirmRevoke is the confirmation page: revoking unpublishes the key at
// once, and signatures it made stop verifying.
func (a *Admin) confirmRevoke(rw http.ResponseWriter, r *http.Request) {
	k, err := a.findKey(r, r.PathValue("kid"))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	if !k.Revocable {
		http.Redirect(rw, r, "/admin/chaves", http.StatusSeeOther)
		return
	}
	a.render(rw, r, http.StatusOK, "keyrevoke", a.newPage(r, "Revogar chave", "chaves", keysData{Confirm: k, Errors: fieldErrors{}}))
}

func (a *Admin) revokeSigningKey(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	k, err := a.findKey(r, r.PathValue("kid"))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d := keysData{Confirm: k, Errors: fieldErrors{}}
	if r.PostFormValue("confirm") != "on" {
		d.Errors.add("confirm", "Marque a confirmação para revogar a chave.")
		a.render(rw, r, http.StatusUnprocessableEntity, "keyrevoke", a.newPage(r, "Revogar chave", "chaves", d))
		return
	}
	_, err = a.opts.Tenants.RevokeSigningKey(r.Context(), connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: s.tenant.String(), Kid: k.Kid}))
	if err != nil && isKind(err, apperr.KindFailedPrecondition) {
		d.Error = "Esta é a única chave que pode assinar: gere uma nova chave antes de revogá-la."
		a.render(rw, r, http.StatusConflict, "keyrevoke", a.newPage(r, "Revogar chave", "chaves", d))
		return
	}
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.log.WarnContext(r.Context(), "admin: signing key revoked", "tenant_id", s.tenant, "by", s.user.GetId(), "kid", k.Kid)
	http.Redirect(rw, r, "/admin/chaves?ok=revogada", http.StatusSeeOther)
}
