package admin

import (
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/web/internal/pagesec"
)

type loginData struct {
	Email string
	Next  string
	Error string
	Token string
}

// loginToken returns the sign-in form token, bound to a nonce cookie (the
// visitor has no session yet).
func (a *Admin) loginToken(rw http.ResponseWriter, r *http.Request, tenant string) string {
	nonce := pagesec.NonceCookie{Name: loginCookie, Path: "/admin"}.Get(rw, r, a.secureCookies(r))
	return a.mac("login", tenant, nonce)
}

// safeNext keeps post-login redirects inside the admin.
func safeNext(s string) string {
	if strings.HasPrefix(s, "/admin/") && !strings.HasPrefix(s, "//") && !strings.ContainsAny(s, "\\\r\n") {
		return s
	}
	return "/admin/"
}

func (a *Admin) loginPage(rw http.ResponseWriter, r *http.Request) {
	tid, err := tenancy.From(r.Context())
	if err != nil {
		a.errorPage(rw, r, http.StatusNotFound)
		return
	}
	d := loginData{Next: safeNext(r.URL.Query().Get("next")), Token: a.loginToken(rw, r, tid.String())}
	a.render(rw, r, http.StatusOK, "login", a.newPage(r, "Entrar", "", d))
}

func (a *Admin) login(rw http.ResponseWriter, r *http.Request) {
	tid, err := tenancy.From(r.Context())
	if err != nil {
		a.errorPage(rw, r, http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, 64<<10)
	c, cerr := r.Cookie(loginCookie)
	if cerr != nil || !pagesec.Equal(r.PostFormValue("_csrf"), a.mac("login", tid.String(), c.Value)) {
		a.errorPage(rw, r, http.StatusForbidden)
		return
	}
	d := loginData{Email: strings.TrimSpace(r.PostFormValue("email")), Next: safeNext(r.PostFormValue("next")), Token: r.PostFormValue("_csrf")}
	resp, err := a.opts.Tenants.SignInMerchantUser(r.Context(), connect.NewRequest(&tenantsv1.SignInMerchantUserRequest{
		TenantId: tid.String(), Email: d.Email, Password: r.PostFormValue("password"),
	}))
	if err != nil {
		e := appErr(err)
		status := http.StatusUnauthorized
		switch {
		case e.Code == "locked":
			status = http.StatusTooManyRequests
			d.Error = "Muitas tentativas sem sucesso. Por segurança, o acesso está bloqueado por alguns minutos; tente de novo mais tarde."
		case e.Kind == apperr.KindUnauthenticated || e.Kind == apperr.KindInvalidArgument:
			d.Error = "E-mail ou senha incorretos."
		default:
			a.serviceError(rw, r, err)
			return
		}
		a.render(rw, r, status, "login", a.newPage(r, "Entrar", "", d))
		return
	}
	exp := resp.Msg.GetExpireTime().AsTime()
	http.SetCookie(rw, &http.Cookie{Name: sessionCookie, Value: resp.Msg.GetSessionToken(), Path: "/admin",
		Expires: exp, MaxAge: int(time.Until(exp).Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.secureCookies(r)})
	http.SetCookie(rw, &http.Cookie{Name: loginCookie, Value: "", Path: "/admin", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: a.secureCookies(r)})
	http.Redirect(rw, r, d.Next, http.StatusSeeOther)
}

func (a *Admin) logout(rw http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	if _, err := a.opts.Tenants.EndMerchantSession(r.Context(), connect.NewRequest(&tenantsv1.EndMerchantSessionRequest{TenantId: s.tenant.String(), SessionToken: s.token})); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	http.SetCookie(rw, &http.Cookie{Name: sessionCookie, Value: "", Path: "/admin", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: a.secureCookies(r)})
	http.Redirect(rw, r, "/admin/entrar", http.StatusSeeOther)
}
