package apipix

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// Webhook authentication schemes.
const (
	// SchemeMTLS: the notification came over TLS with a client
	// certificate issued by one of CAs (and, when set, naming one of
	// Subjects). What the API Pix prescribes.
	SchemeMTLS = "mtls"
	// SchemeHMAC: a PSP-specific option for PSPs that sign the body
	// instead: Header carries hex(HMAC-SHA256(Secret, body)).
	SchemeHMAC = "hmac-sha256"
)

// WebhookAuth is how a PSP's notifications prove where they come from.
// Whatever the scheme, a notification is only a hint: the payments
// service reads every Pix back from the PSP before it counts.
type WebhookAuth struct {
	Scheme string // SchemeMTLS (default) or SchemeHMAC
	// CAs issue the PSP's webhook client certificates (SchemeMTLS).
	CAs *x509.CertPool
	// Subjects, when set, are the certificate common names or DNS names
	// the PSP's webhook certificate may carry.
	Subjects []string
	// Header and Secret (SchemeHMAC).
	Header string
	Secret []byte
}

func (w WebhookAuth) check() error {
	switch w.Scheme {
	case "", SchemeMTLS:
		if w.CAs == nil {
			return &ConfigError{Code: "missing_webhook_ca", Msg: "informe a CA dos certificados com que o PSP chama o webhook (mTLS)"}
		}
	case SchemeHMAC:
		if w.Header == "" || len(w.Secret) == 0 {
			return &ConfigError{Code: "missing_webhook_secret", Msg: "o esquema hmac-sha256 precisa do cabeçalho e do segredo"}
		}
	default:
		return &ConfigError{Code: "invalid_webhook_scheme", Msg: fmt.Sprintf("esquema de autenticação de webhook %q desconhecido (mtls ou hmac-sha256)", w.Scheme)}
	}
	return nil
}

// AuthenticateWebhook checks a notification against the configured scheme.
func (c *Client) AuthenticateWebhook(_ context.Context, w pix.Webhook) error {
	a := c.cfg.Webhook
	switch a.Scheme {
	case SchemeHMAC:
		got, err := hex.DecodeString(strings.TrimSpace(w.Header.Get(a.Header)))
		m := hmac.New(sha256.New, a.Secret)
		m.Write(w.Body)
		if err != nil || !hmac.Equal(got, m.Sum(nil)) {
			return fmt.Errorf("%w: %s does not match the body", pix.ErrUnauthenticated, a.Header)
		}
		return nil
	default:
		if len(w.ClientCertChain) == 0 {
			return fmt.Errorf("%w: no client certificate (the API Pix calls webhooks over mTLS)", pix.ErrUnauthenticated)
		}
		leaf, err := pki.VerifyClientChain(w.ClientCertChain, a.CAs, c.cfg.Now())
		if err != nil {
			return fmt.Errorf("%w: client certificate: %v", pix.ErrUnauthenticated, err)
		}
		if len(a.Subjects) > 0 && !slices.Contains(a.Subjects, leaf.Subject.CommonName) &&
			!slices.ContainsFunc(leaf.DNSNames, func(n string) bool { return slices.Contains(a.Subjects, n) }) {
			return fmt.Errorf("%w: client certificate %q is not the PSP's", pix.ErrUnauthenticated, leaf.Subject.CommonName)
		}
		return nil
	}
}
