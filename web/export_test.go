package web

import "github.com/google/uuid"

// Internals the external (platform) test needs.

func CSRFMAC(w *Web, tenant uuid.UUID, checkoutID, nonce string) string {
	return w.csrfMAC(tenant, checkoutID, nonce)
}

func CSRFKey(w *Web) []byte { return w.csrfKey }

const CSRFCookie = csrfCookie
