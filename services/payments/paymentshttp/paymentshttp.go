// Package paymentshttp holds the payments service's public HTTP routes,
// which the edge mounts behind its Host → tenant routing (the tenant is in
// the request context, and the payments client's interceptor forwards it):
//
//	POST /webhooks/pix/{hook}      PSP notifications (the API Pix appends
//	POST /webhooks/pix/{hook}/pix  "/pix" to the registered URL)
//	GET  /pix/qr/{attempt}.png     the Pix QR of a pending attempt
//	GET  /pix/qr/{attempt}.svg
//
// The handlers hold no rules: webhooks are forwarded raw to
// IngestPixWebhook, with the client certificate the PSP presented (which
// the payments service checks against the handler's PSP settings), and
// answered 200 only once stored; QR images are rendered from the
// attempt's copia e cola.
package paymentshttp

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/services/payments/pix/qr"
)

// MaxWebhookBody is the largest notification accepted (1 MiB).
const MaxWebhookBody = 1 << 20

// Options tune the routes.
type Options struct {
	// ClientCertHeader names the header in which a trusted TLS-terminating
	// proxy forwards the client certificate it verified (URL-escaped PEM,
	// leaf first, as nginx's $ssl_client_escaped_cert). Read only for
	// requests that did not arrive over TLS here; "" never.
	ClientCertHeader string
}

// Routes returns the handlers by http.ServeMux pattern.
func Routes(c paymentsv1connect.PaymentsServiceClient, opts Options) map[string]http.Handler {
	wh := &webhook{c: c, certHeader: opts.ClientCertHeader}
	return map[string]http.Handler{
		"POST /webhooks/pix/{hook}":     wh,
		"POST /webhooks/pix/{hook}/pix": wh,
		"GET /pix/qr/{file}":            &qrImage{c: c},
	}
}

type webhook struct {
	c          paymentsv1connect.PaymentsServiceClient
	certHeader string
}

// Headers never forwarded: credentials of other schemes.
var dropHeaders = map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true}

func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := tenancy.From(r.Context()); err != nil {
		status(w, http.StatusNotFound, "not_found")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status(w, http.StatusRequestEntityTooLarge, "body_too_large")
			return
		}
		status(w, http.StatusBadRequest, "unreadable_body")
		return
	}
	headers := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		if !dropHeaders[k] && (h.certHeader == "" || !strings.EqualFold(k, h.certHeader)) {
			headers[k] = strings.Join(v, ", ")
		}
	}
	_, err = h.c.IngestPixWebhook(r.Context(), connect.NewRequest(&paymentsv1.IngestPixWebhookRequest{
		HookId: r.PathValue("hook"), Body: body, Headers: headers, ClientCertChain: h.clientCerts(r),
	}))
	if err == nil {
		status(w, http.StatusOK, "ok")
		return
	}
	switch connect.CodeOf(err) {
	case connect.CodeUnauthenticated:
		status(w, http.StatusUnauthorized, "invalid_signature")
	case connect.CodeNotFound:
		status(w, http.StatusNotFound, "not_found")
	case connect.CodeInvalidArgument:
		status(w, http.StatusBadRequest, "invalid_notification")
	default:
		// Not stored: the PSP must retry.
		status(w, http.StatusServiceUnavailable, "unavailable")
	}
}

// clientCerts is the certificate chain the caller presented: from this
// connection's TLS handshake, or, for a request that came through a
// trusted proxy (plain HTTP here), from the configured header.
func (h *webhook) clientCerts(r *http.Request) [][]byte {
	if r.TLS != nil {
		out := make([][]byte, 0, len(r.TLS.PeerCertificates))
		for _, c := range r.TLS.PeerCertificates {
			out = append(out, c.Raw)
		}
		return out
	}
	if h.certHeader == "" {
		return nil
	}
	raw, err := url.QueryUnescape(r.Header.Get(h.certHeader))
	if err != nil {
		return nil
	}
	var out [][]byte
	rest := []byte(raw)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		if b.Type == "CERTIFICATE" {
			out = append(out, b.Bytes)
		}
	}
}

func status(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": s})
}

type qrImage struct {
	c paymentsv1connect.PaymentsServiceClient
}

func (h *qrImage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ext, ok := cutExt(r.PathValue("file"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	if _, err := tenancy.From(r.Context()); err != nil {
		http.NotFound(w, r)
		return
	}
	resp, err := h.c.GetPayment(r.Context(), connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: id}))
	if err != nil {
		if c := connect.CodeOf(err); c == connect.CodeNotFound || c == connect.CodeInvalidArgument {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "indisponível", http.StatusServiceUnavailable)
		return
	}
	a := resp.Msg.GetAttempt()
	var d struct {
		Pix struct {
			CopiaECola string `json:"copia_e_cola"`
		} `json:"pix"`
	}
	// Only a payable charge gets a QR: an expired or paid one must not be
	// scanned again.
	if a.GetStatus() != paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING ||
		json.Unmarshal([]byte(a.GetDisplayJson()), &d) != nil || d.Pix.CopiaECola == "" {
		http.NotFound(w, r)
		return
	}
	var img []byte
	ctype := "image/png"
	if ext == "svg" {
		img, err = qr.SVG(d.Pix.CopiaECola)
		ctype = "image/svg+xml"
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	} else {
		img, err = qr.PNG(d.Pix.CopiaECola, qr.DefaultScale)
	}
	if err != nil {
		http.Error(w, "erro ao gerar o QR Code", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "private, max-age=60")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(img)
}

func cutExt(file string) (id, ext string, ok bool) {
	i := strings.LastIndexByte(file, '.')
	if i <= 0 {
		return "", "", false
	}
	id, ext = file[:i], file[i+1:]
	return id, ext, ext == "png" || ext == "svg"
}
