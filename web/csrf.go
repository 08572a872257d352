package web

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/web/internal/pagesec"
)

// The simulate form is protected by a double-submit cookie bound to the
// checkout: the cookie holds a random nonce (HttpOnly, SameSite=Strict),
// the form carries HMAC(key, tenant, checkout, nonce). A cross-site page
// can neither read the nonce nor compute the token, and a token copied
// from one checkout does not work on another.
const csrfCookie = "bcp_csrf"

var csrfNonce = pagesec.NonceCookie{Name: csrfCookie, Path: "/checkout/"}

// csrfToken returns the form token for checkoutID, setting the nonce
// cookie when the browser has none yet.
func (w *Web) csrfToken(rw http.ResponseWriter, r *http.Request, tenant uuid.UUID, checkoutID string) string {
	nonce := csrfNonce.Get(rw, r, w.opts.PublicScheme != "http" || r.TLS != nil)
	return w.csrfMAC(tenant, checkoutID, nonce)
}

// csrfValid checks the posted token against the request's nonce cookie.
func (w *Web) csrfValid(r *http.Request, tenant uuid.UUID, checkoutID, token string) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || !pagesec.ValidNonce(c.Value) {
		return false
	}
	return pagesec.Equal(token, w.csrfMAC(tenant, checkoutID, c.Value))
}

func (w *Web) csrfMAC(tenant uuid.UUID, checkoutID, nonce string) string {
	return pagesec.MAC(w.csrfKey, "bcp-web/simulate-payment", tenant.String(), checkoutID, nonce)
}
