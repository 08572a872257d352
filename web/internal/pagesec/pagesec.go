// Package pagesec holds the browser-facing protections the buyer pages,
// the merchant admin and the operator console share: the security headers
// every page carries and the pieces of their CSRF tokens (a random nonce
// cookie and an HMAC over a purpose and the values a token is bound to).
package pagesec

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// Headers are the security headers of a set of pages.
type Headers struct {
	// CSP is the Content-Security-Policy.
	CSP string
	// FrameDeny also sends X-Frame-Options: DENY (for browsers that
	// ignore frame-ancestors).
	FrameDeny bool
}

// Wrap sets the headers before h runs. Pages hold personal data, so
// no-store is the default; handlers serving static files override it.
func (s Headers) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hd := rw.Header()
		hd.Set("Content-Security-Policy", s.CSP)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		if s.FrameDeny {
			hd.Set("X-Frame-Options", "DENY")
		}
		h.ServeHTTP(rw, r)
	})
}

// Key returns key, or 32 random bytes when it is empty (enough for one
// process; several processes behind one host need the same key).
func Key(key []byte) []byte {
	if len(key) > 0 {
		return key
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand panics instead)
	return k
}

// NonceCookie is a double-submit nonce cookie (HttpOnly,
// SameSite=Strict): a cross-site page can neither read it nor compute a
// token bound to it.
type NonceCookie struct {
	Name, Path string
}

// Get returns the request's nonce, setting a new cookie when the browser
// has no valid one; secure sets the cookie's Secure flag.
func (c NonceCookie) Get(rw http.ResponseWriter, r *http.Request, secure bool) string {
	if ck, err := r.Cookie(c.Name); err == nil && ValidNonce(ck.Value) {
		return ck.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(rw, &http.Cookie{
		Name: c.Name, Value: nonce, Path: c.Path,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure,
	})
	return nonce
}

// ValidNonce reports whether s has the shape of a nonce Get sets.
func ValidNonce(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}

// MAC is HMAC-SHA256(key, purpose NUL part NUL part ...), base64url. The
// NUL separators keep parts from running into each other (none of them
// can contain one).
func MAC(key []byte, purpose string, parts ...string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Equal compares a posted token with the expected one in constant time;
// an empty token never matches.
func Equal(token, want string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(want))
}
