// Package handlersecrets is the format of a payment handler's secret
// settings: how a merchant's Pix handler reaches its PSP (API Pix base
// URL, OAuth2 client, mTLS certificate, how webhooks authenticate) and
// how a delegated card handler reaches its processor (Stripe's secret
// key). The tenant registry validates and seals them and keeps only a
// non-secret Summary in clear; the payments service alone receives them
// opened, to build its clients.
package handlersecrets

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pki"
)

// Secrets are one handler's secret settings.
type Secrets struct {
	PSP    *PixPSP `json:"psp,omitempty"`
	Stripe *Stripe `json:"stripe,omitempty"`
}

// PixPSP is a connection to a PSP's API Pix.
type PixPSP struct {
	// BaseURL includes the version, e.g. https://pix.banco.com.br/api/v2.
	BaseURL  string `json:"base_url"`
	TokenURL string `json:"token_url"`
	// TokenAuth: "basic" (default) or "post".
	TokenAuth    string   `json:"token_auth,omitempty"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes,omitempty"`
	// The client certificate: PEM certificate (chain) and key, or a
	// PKCS#12 file (base64) with its password.
	CertificatePEM string `json:"certificate_pem,omitempty"`
	PrivateKeyPEM  string `json:"private_key_pem,omitempty"`
	PKCS12Base64   string `json:"pkcs12_base64,omitempty"`
	PKCS12Password string `json:"pkcs12_password,omitempty"`
	// CAPEM verifies the PSP's server certificate when it is not from a
	// public CA (sandboxes).
	CAPEM   string  `json:"ca_pem,omitempty"`
	Webhook Webhook `json:"webhook"`
}

// Webhook is how the PSP's notifications authenticate.
type Webhook struct {
	// Scheme: "mtls" (default) or "hmac-sha256".
	Scheme string `json:"scheme,omitempty"`
	// CAPEM issues the PSP's webhook client certificates (mtls).
	CAPEM    string   `json:"ca_pem,omitempty"`
	Subjects []string `json:"subjects,omitempty"`
	// Header and Secret (hmac-sha256).
	Header string `json:"header,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// Stripe is a connection to Stripe (or an API-compatible simulator).
type Stripe struct {
	SecretKey string `json:"secret_key"`
	// APIURL overrides https://api.stripe.com (stripe-mock, the sandbox).
	APIURL string `json:"api_url,omitempty"`
	// CAPEM verifies APIURL's certificate when it is not public.
	CAPEM string `json:"ca_pem,omitempty"`
}

// Parse reads raw (empty: no secrets). Unknown members are refused: a
// misspelt "client_secert" must not be silently ignored.
func Parse(raw []byte) (Secrets, error) {
	var s Secrets
	if len(strings.TrimSpace(string(raw))) == 0 {
		return s, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("secrets: %w", err)
	}
	return s, nil
}

// Credentials opens the client certificate.
func (p *PixPSP) Credentials() (*pki.Credentials, error) {
	switch {
	case p.PKCS12Base64 != "":
		der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p.PKCS12Base64))
		if err != nil {
			return nil, fmt.Errorf("pkcs12_base64 is not base64: %w", err)
		}
		return pki.ParsePKCS12(der, p.PKCS12Password)
	case p.CertificatePEM != "" || p.PrivateKeyPEM != "":
		return pki.ParseCredentials([]byte(p.CertificatePEM), []byte(p.PrivateKeyPEM))
	}
	return nil, pki.ErrNoCertificate
}

// Summary is what may be shown of the secrets: enough for a merchant to
// recognise the configuration, nothing that grants access.
type Summary struct {
	Kind string `json:"kind,omitempty"` // "pix_psp" or "stripe"
	// Pix.
	BaseURL     string    `json:"base_url,omitempty"`
	TokenURL    string    `json:"token_url,omitempty"`
	ClientID    string    `json:"client_id,omitempty"`
	CertSubject string    `json:"cert_subject,omitempty"`
	CertIssuer  string    `json:"cert_issuer,omitempty"`
	CertExpires time.Time `json:"cert_expires,omitzero"`
	// CertSHA256 identifies the certificate (its fingerprint, public).
	CertSHA256    string `json:"cert_sha256,omitempty"`
	WebhookScheme string `json:"webhook_scheme,omitempty"`
	// Stripe: the key's mode and last four characters.
	KeyHint string `json:"key_hint,omitempty"`
	APIURL  string `json:"api_url,omitempty"`
}

// Check validates s as sent for a handler: every broken rule as a
// violation on its field (secrets_json.psp.client_id, …), and the
// summary to keep in clear. now dates the certificate checks.
func Check(s Secrets, now time.Time) (Summary, apperr.Violations) {
	var v apperr.Violations
	var sum Summary
	bad := func(field, code, format string, args ...any) {
		v.Add(apperr.Invalid("secrets_json."+field, code, format, args...))
	}
	if p := s.PSP; p != nil {
		sum.Kind = "pix_psp"
		sum.BaseURL, sum.TokenURL, sum.ClientID = p.BaseURL, p.TokenURL, p.ClientID
		for _, u := range []struct{ field, url string }{{"psp.base_url", p.BaseURL}, {"psp.token_url", p.TokenURL}} {
			if pu, err := url.Parse(u.url); err != nil || pu.Scheme != "https" || pu.Host == "" || pu.User != nil {
				bad(u.field, "invalid_url", "%s must be an https URL (e.g. https://pix.banco.com.br/api/v2)", u.field)
			}
		}
		if p.TokenAuth != "" && p.TokenAuth != "basic" && p.TokenAuth != "post" {
			bad("psp.token_auth", "invalid_token_auth", "token_auth must be basic or post")
		}
		if p.ClientID == "" {
			bad("psp.client_id", "required", "client_id is required")
		}
		if p.ClientSecret == "" {
			bad("psp.client_secret", "required", "client_secret is required")
		}
		if c, err := p.Credentials(); err != nil {
			field := "psp.certificate_pem"
			if p.PKCS12Base64 != "" {
				field = "psp.pkcs12_base64"
			} else if errors.Is(err, pki.ErrKeyMismatch) || errors.Is(err, pki.ErrNoKey) {
				field = "psp.private_key_pem"
			}
			bad(field, "invalid_certificate", "client certificate: %v", err)
		} else {
			sum.CertSubject, sum.CertIssuer = c.Leaf.Subject.String(), c.Leaf.Issuer.String()
			sum.CertExpires = c.Leaf.NotAfter.UTC()
			fp := sha256.Sum256(c.Leaf.Raw)
			sum.CertSHA256 = hex.EncodeToString(fp[:])
			if err := c.CheckValidity(now); err != nil {
				bad("psp.certificate_pem", "certificate_not_valid", "client certificate: %v", err)
			}
		}
		if p.CAPEM != "" {
			if _, err := pki.ParseCertPool([]byte(p.CAPEM)); err != nil {
				bad("psp.ca_pem", "invalid_ca", "ca_pem: %v", err)
			}
		}
		sum.WebhookScheme = p.Webhook.Scheme
		switch p.Webhook.Scheme {
		case "", "mtls":
			sum.WebhookScheme = "mtls"
			if _, err := pki.ParseCertPool([]byte(p.Webhook.CAPEM)); err != nil {
				bad("psp.webhook.ca_pem", "invalid_ca", "webhook.ca_pem must hold the CA of the PSP's webhook client certificates (PEM): %v", err)
			}
		case "hmac-sha256":
			if p.Webhook.Header == "" || len(p.Webhook.Secret) < 16 {
				bad("psp.webhook.secret", "invalid_webhook_secret", "hmac-sha256 needs webhook.header and a webhook.secret of at least 16 characters")
			}
		default:
			bad("psp.webhook.scheme", "invalid_webhook_scheme", "webhook.scheme must be mtls or hmac-sha256")
		}
	}
	if st := s.Stripe; st != nil {
		sum.Kind = "stripe"
		switch {
		case strings.HasPrefix(st.SecretKey, "sk_live_"), strings.HasPrefix(st.SecretKey, "sk_test_"),
			strings.HasPrefix(st.SecretKey, "rk_live_"), strings.HasPrefix(st.SecretKey, "rk_test_"):
			sum.KeyHint = st.SecretKey[:strings.IndexByte(st.SecretKey[3:], '_')+4] + "…" + st.SecretKey[max(len(st.SecretKey)-4, 0):]
		default:
			bad("stripe.secret_key", "invalid_stripe_key", "secret_key must be a Stripe secret or restricted key (sk_live_…, sk_test_…, rk_…)")
		}
		if st.APIURL != "" {
			if u, err := url.Parse(st.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				bad("stripe.api_url", "invalid_url", "api_url must be an http(s) URL")
			}
			sum.APIURL = st.APIURL
		}
		if st.CAPEM != "" {
			if _, err := pki.ParseCertPool([]byte(st.CAPEM)); err != nil {
				bad("stripe.ca_pem", "invalid_ca", "ca_pem: %v", err)
			}
		}
	}
	if s.PSP != nil && s.Stripe != nil {
		bad("", "invalid_secrets", "a handler has either psp or stripe settings, not both")
	}
	return sum, v
}
