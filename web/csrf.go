package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/google/uuid"
)

// The simulate form is protected by a double-submit cookie bound to the
// checkout: the cookie holds a random nonce (HttpOnly, SameSite=Strict),
// the form carries HMAC(key, tenant, checkout, nonce). A cross-site page
// can neither read the nonce nor compute the token, and a token copied
// from one checkout does not work on another.
const csrfCookie = "bcp_csrf"

// csrfToken returns the form token for checkoutID, setting the nonce
// cookie when the browser has none yet.
func (w *Web) csrfToken(rw http.ResponseWriter, r *http.Request, tenant uuid.UUID, checkoutID string) string {
	nonce := ""
	if c, err := r.Cookie(csrfCookie); err == nil && validNonce(c.Value) {
		nonce = c.Value
	} else {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		nonce = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(rw, &http.Cookie{
			Name: csrfCookie, Value: nonce, Path: "/checkout/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode,
			Secure: w.opts.PublicScheme != "http" || r.TLS != nil,
		})
	}
	return w.csrfMAC(tenant, checkoutID, nonce)
}

// csrfValid checks the posted token against the request's nonce cookie.
func (w *Web) csrfValid(r *http.Request, tenant uuid.UUID, checkoutID, token string) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validNonce(c.Value) || token == "" {
		return false
	}
	return hmac.Equal([]byte(token), []byte(w.csrfMAC(tenant, checkoutID, c.Value)))
}

func (w *Web) csrfMAC(tenant uuid.UUID, checkoutID, nonce string) string {
	m := hmac.New(sha256.New, w.csrfKey)
	// NUL separators: none of the parts can contain one.
	m.Write([]byte("bcp-web/simulate-payment\x00" + tenant.String() + "\x00" + checkoutID + "\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func validNonce(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}
