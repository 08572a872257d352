package operator

import (
	"net/http"
	"strconv"
	"time"

	"github.com/bcpdev/bcp/web/internal/pagesec"
)

type loginData struct {
	Error string
	Token string
}

// loginNonce is the sign-in form's nonce cookie (the visitor has no
// session to bind a token to).
var loginNonce = pagesec.NonceCookie{Name: loginCookie, Path: "/"}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if _, ok := c.keys.parseSession(ck.Value, c.now()); ok {
			http.Redirect(w, r, "/lojas", http.StatusSeeOther)
			return
		}
	}
	d := loginData{Token: c.keys.loginToken(loginNonce.Get(w, r, c.secureCookies(r)))}
	c.render(w, r, http.StatusOK, "login", c.newPage(r, "Entrar", d))
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	ck, err := r.Cookie(loginCookie)
	if err != nil || !pagesec.Equal(r.PostFormValue("_csrf"), c.keys.loginToken(ck.Value)) {
		c.errorPage(w, r, http.StatusForbidden)
		return
	}
	d := loginData{Token: r.PostFormValue("_csrf")}
	ip := clientIP(r)
	// While locked out the token is not even compared: guessing costs
	// time whatever the guess.
	if wait := c.limit.locked(ip); wait > 0 {
		d.Error = lockedMessage(wait)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		c.render(w, r, http.StatusTooManyRequests, "login", c.newPage(r, "Entrar", d))
		return
	}
	if !tokenEqual(r.PostFormValue("token"), c.opts.OperatorToken) {
		c.log.WarnContext(r.Context(), "operator console: failed sign-in", "client_ip", ip)
		status := http.StatusUnauthorized
		d.Error = "Token incorreto."
		if lock := c.limit.fail(ip); lock > 0 {
			status = http.StatusTooManyRequests
			d.Error = "Token incorreto. " + lockedMessage(lock)
			w.Header().Set("Retry-After", strconv.Itoa(int(lock/time.Second)))
		}
		c.render(w, r, status, "login", c.newPage(r, "Entrar", d))
		return
	}
	c.limit.success(ip)
	value, s := c.keys.newSession(c.now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: "/", Expires: s.expires,
		MaxAge: int(SessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secureCookies(r)})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secureCookies(r)})
	c.log.InfoContext(r.Context(), "operator console: signed in", "client_ip", ip)
	http.Redirect(w, r, "/lojas", http.StatusSeeOther)
}

func lockedMessage(wait time.Duration) string {
	secs := int((wait + time.Second - 1) / time.Second)
	unit := "segundos"
	if secs == 1 {
		unit = "segundo"
	}
	return "Muitas tentativas sem sucesso: aguarde " + strconv.Itoa(secs) + " " + unit + " antes de tentar de novo."
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secureCookies(r)})
	http.Redirect(w, r, "/entrar", http.StatusSeeOther)
}
