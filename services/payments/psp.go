package payments

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
)

// errNotConfigured: a production handler without PSP or processor
// settings.
type errNotConfigured struct{ handlerID, what string }

func (e *errNotConfigured) Error() string {
	return fmt.Sprintf("payments: handler %s has no %s settings", e.handlerID, e.what)
}

// connection is where one handler's payments go: the settings, and for
// sandbox handlers on the simulator's provisioned account its client id
// (for "Simular pagamento") and Pix key.
type connection struct {
	settings handlersecrets.Secrets
	// sandbox: a provisioned simulator account (clientID, chave set).
	sandbox  bool
	clientID string
	chave    string
}

// connectionOf resolves a handler's connection. env is the environment
// the payment was made in ("" for the handler's current one): a handler
// that moved from sandbox to production keeps its sandbox payments on
// the simulator account they were made with.
func (s *Service) connectionOf(ctx context.Context, h handler, secrets handlersecrets.Secrets, env string) (connection, error) {
	if env == "" {
		env = h.Environment
	}
	if env == "sandbox" {
		// A sandbox payment made on the provisioned account stays there;
		// a sandbox handler with settings of its own uses them.
		if acc, err := s.storedSandboxAccount(ctx, h.ID); err == nil {
			return connection{settings: acc.settings, sandbox: true, clientID: acc.clientID, chave: acc.chave}, nil
		}
		if secrets.PSP != nil || secrets.Stripe != nil {
			return connection{settings: secrets}, nil
		}
		acc, err := s.sandboxAccountOf(ctx, h)
		if err != nil {
			return connection{}, err
		}
		return connection{settings: acc.settings, sandbox: true, clientID: acc.clientID, chave: acc.chave}, nil
	}
	return connection{settings: secrets}, nil
}

// handlerByID finds a handler and its secrets among the tenant's current
// ones (nil when it was removed).
func (s *Service) handlerByID(ctx context.Context, tenantID, handlerID string) (*handler, handlersecrets.Secrets, error) {
	m, err := s.merchant(ctx, tenantID)
	if err != nil {
		return nil, handlersecrets.Secrets{}, err
	}
	for _, h := range m.handlers {
		if h.ID == handlerID {
			return &h, m.secrets[handlerID], nil
		}
	}
	return nil, handlersecrets.Secrets{}, nil
}

// settingsKey identifies a client by what it was built from, so a
// changed setting builds a new client and an unchanged one keeps its
// token and connections.
func settingsKey(tenantID, handlerID string, v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return tenantID + "/" + handlerID + "/" + hex.EncodeToString(sum[:12])
}

// pixClient returns the API Pix client of a connection.
func (s *Service) pixClient(ctx context.Context, tenantID, handlerID string, c connection) (*apipix.Client, error) {
	p := c.settings.PSP
	if p == nil {
		return nil, &errNotConfigured{handlerID: handlerID, what: "PSP (API Pix)"}
	}
	return s.pixClients.Get(ctx, settingsKey(tenantID, handlerID, p), func(context.Context) (*apipix.Client, error) {
		cfg := apipix.Config{
			BaseURL: p.BaseURL, TokenURL: p.TokenURL, TokenAuth: p.TokenAuth, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
			Scopes: p.Scopes, Dial: s.opts.PSPDial, Wrap: s.opts.PSPWrap,
			Observe: func(op string, status int, d time.Duration) { s.metrics.observePSP("pix", op, status, d) },
			Now:     s.now,
		}
		creds, err := p.Credentials()
		if err != nil {
			return nil, &apipix.ConfigError{Code: "invalid_certificate", Msg: "o certificado de cliente configurado não pôde ser lido: " + err.Error()}
		}
		tc := creds.TLS()
		cfg.Certificate = &tc
		if p.CAPEM != "" {
			if cfg.RootCAs, err = pki.ParseCertPool([]byte(p.CAPEM)); err != nil {
				return nil, &apipix.ConfigError{Code: "invalid_ca", Msg: "a CA do servidor do PSP configurada é inválida"}
			}
		}
		cfg.Webhook = apipix.WebhookAuth{Scheme: p.Webhook.Scheme, Subjects: p.Webhook.Subjects, Header: p.Webhook.Header, Secret: []byte(p.Webhook.Secret)}
		if cfg.Webhook.Scheme == "" {
			cfg.Webhook.Scheme = apipix.SchemeMTLS
		}
		if cfg.Webhook.Scheme == apipix.SchemeMTLS {
			if cfg.Webhook.CAs, err = pki.ParseCertPool([]byte(p.Webhook.CAPEM)); err != nil {
				return nil, &apipix.ConfigError{Code: "missing_webhook_ca", Msg: "informe a CA dos certificados com que o PSP chama o webhook (mTLS)"}
			}
		}
		return apipix.New(cfg)
	})
}

// cardProcessor returns the Stripe client of a connection.
func (s *Service) cardProcessor(ctx context.Context, tenantID, handlerID string, c connection) (card.Processor, error) {
	st := c.settings.Stripe
	if st == nil {
		return nil, &errNotConfigured{handlerID: handlerID, what: "card processor (Stripe)"}
	}
	return s.cardClients.Get(ctx, settingsKey(tenantID, handlerID, st), func(context.Context) (*stripecard.Processor, error) {
		hc, err := s.processorHTTP(st)
		if err != nil {
			return nil, err
		}
		return stripecard.New(stripecard.Config{SecretKey: st.SecretKey, BaseURL: strings.TrimRight(st.APIURL, "/"), HTTPClient: hc})
	})
}

// processorHTTP is the HTTP client of a card processor connection.
func (s *Service) processorHTTP(st *handlersecrets.Stripe) (*http.Client, error) {
	var pool *x509.CertPool
	if st.CAPEM != "" {
		var err error
		if pool, err = pki.ParseCertPool([]byte(st.CAPEM)); err != nil {
			return nil, errors.New("payments: the processor's CA is invalid")
		}
	}
	var rt http.RoundTripper = stripecard.NewTransport(pool, s.opts.PSPDial)
	if s.opts.PSPWrap != nil {
		rt = s.opts.PSPWrap(rt)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: tracing.Transport(rt)}, nil
}

// connectionFor resolves the connection of a handler's payments made in
// env ("" for the handler's current environment).
func (s *Service) connectionFor(ctx context.Context, tenantID, handlerID, env string) (connection, error) {
	h, secrets, err := s.handlerByID(ctx, tenantID, handlerID)
	if err != nil {
		return connection{}, err
	}
	if h == nil {
		// Removed: its sandbox payments can still be followed on the
		// simulator account they were made with.
		acc, err := s.storedSandboxAccount(ctx, handlerID)
		if err != nil {
			return connection{}, fmt.Errorf("payments: handler %s was removed: %w", handlerID, err)
		}
		return connection{settings: acc.settings, sandbox: true, clientID: acc.clientID, chave: acc.chave}, nil
	}
	return s.connectionOf(ctx, *h, secrets, env)
}

// pixOf is the PSP client for a handler's payments made in env, with the
// connection it uses.
func (s *Service) pixOf(ctx context.Context, tenantID, handlerID, env string) (pix.PSP, connection, error) {
	c, err := s.connectionFor(ctx, tenantID, handlerID, env)
	if err != nil {
		return nil, c, err
	}
	psp, err := s.pixClient(ctx, tenantID, handlerID, c)
	return psp, c, err
}
