package payments

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/httpdeadline"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// SandboxPSP locates the PSP simulator (bcpd's pspsim role): sandbox
// handlers without settings of their own get an account there and reach
// it through the same clients as production handlers reach their PSP and
// processor. Its control API also pays sandbox charges ("Simular
// pagamento").
type SandboxPSP struct {
	// ControlURL is the simulator's control API (https://host:port).
	ControlURL string
	// AdminToken authenticates at the control API.
	AdminToken string
	// RootCAsPEM verifies the simulator's server certificates (its API
	// Pix and control listeners); kept with each account's settings.
	RootCAsPEM []byte
}

// errNoSandbox: a sandbox handler without settings, and no simulator.
var errNoSandbox = errors.New("payments: no PSP simulator configured for sandbox handlers")

// sandboxAccount is a handler's account at the simulator.
type sandboxAccount struct {
	clientID string
	chave    string
	settings handlersecrets.Secrets
}

func sandboxAAD(tenant uuid.UUID, handlerID string) []byte {
	return []byte("bcp/payments/sandbox-account/" + tenant.String() + "/" + handlerID)
}

// sandboxAccountOf returns the handler's simulator account, opening it
// the first time (under a lock: the simulator issues new credentials on
// every call, so only one process may ask).
func (s *Service) sandboxAccountOf(ctx context.Context, h handler) (sandboxAccount, error) {
	if acc, err := s.storedSandboxAccount(ctx, h.ID); err == nil || !errors.Is(err, pgx.ErrNoRows) {
		return acc, err
	}
	if s.opts.Sandbox.ControlURL == "" {
		return sandboxAccount{}, errNoSandbox
	}
	var acc sandboxAccount
	err := s.inTenant(ctx, func(q *paymentsdb.Queries, tid uuid.UUID, _ pgx.Tx) error {
		if err := q.LockSandboxProvisioning(ctx, paymentsdb.LockSandboxProvisioningParams{TenantID: tid.String(), HandlerID: h.ID}); err != nil {
			return err
		}
		row, err := q.GetSandboxAccount(ctx, paymentsdb.GetSandboxAccountParams{TenantID: tid, HandlerID: h.ID})
		if err == nil {
			acc, err = s.openSandboxAccount(row)
			return err
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		name := h.Config.MerchantName
		if name == "" && h.Tenant != nil {
			name = h.Tenant.GetName()
		}
		if acc, err = s.provision(ctx, tid.String()+"/"+h.ID, name, h.Config.MerchantCity); err != nil {
			return err
		}
		raw, err := json.Marshal(acc.settings)
		if err != nil {
			return err
		}
		sealed, err := s.seal.Seal(raw, sandboxAAD(tid, h.ID))
		if err != nil {
			return err
		}
		return q.InsertSandboxAccount(ctx, paymentsdb.InsertSandboxAccountParams{TenantID: tid, HandlerID: h.ID, ClientID: acc.clientID, Chave: acc.chave, SealedSecrets: sealed})
	})
	return acc, err
}

// storedSandboxAccount reads a handler's account (pgx.ErrNoRows: none
// yet). A stored account never changes, so once read it is kept in
// memory: a sandbox payment costs no read of it.
func (s *Service) storedSandboxAccount(ctx context.Context, handlerID string) (sandboxAccount, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return sandboxAccount{}, err
	}
	return s.sandboxAccounts.Get(ctx, tid.String()+"/"+handlerID, func(ctx context.Context) (sandboxAccount, error) {
		var row paymentsdb.PaymentsSandboxAccount
		err := s.single(ctx, func(q *paymentsdb.Queries, tid uuid.UUID) error {
			var err error
			row, err = q.GetSandboxAccount(ctx, paymentsdb.GetSandboxAccountParams{TenantID: tid, HandlerID: handlerID})
			return err
		})
		if err != nil {
			return sandboxAccount{}, err
		}
		return s.openSandboxAccount(row)
	})
}

func (s *Service) openSandboxAccount(row paymentsdb.PaymentsSandboxAccount) (sandboxAccount, error) {
	raw, err := s.seal.Open(row.SealedSecrets, sandboxAAD(row.TenantID, row.HandlerID))
	if err != nil {
		return sandboxAccount{}, err
	}
	settings, err := handlersecrets.Parse(raw)
	return sandboxAccount{clientID: row.ClientID, chave: row.Chave, settings: settings}, err
}

// provisioned is the simulator's answer to POST /sim/v1/accounts: the
// credentials a bank's developer portal hands out.
type provisioned struct {
	ClientID        string `json:"client_id"`
	ClientSecret    string `json:"client_secret"`
	Chave           string `json:"chave"`
	CertificatePEM  string `json:"certificate_pem"`
	PrivateKeyPEM   string `json:"private_key_pem"`
	CAPEM           string `json:"ca_pem"`
	WebhookSubject  string `json:"webhook_subject"`
	APIURL          string `json:"api_url"`
	TokenURL        string `json:"token_url"`
	StripeSecretKey string `json:"stripe_secret_key"`
	StripeAPIURL    string `json:"stripe_api_url"`
}

// provision opens (or, for a reference seen before, re-keys) an account
// at the simulator and turns its answer into handler settings.
func (s *Service) provision(ctx context.Context, reference, name, city string) (sandboxAccount, error) {
	body := map[string]any{"reference": reference, "nome": name}
	if city != "" {
		body["cidade"] = city
	}
	var p provisioned
	if err := s.simControl(ctx, http.MethodPost, "/sim/v1/accounts", body, &p); err != nil {
		return sandboxAccount{}, fmt.Errorf("payments: open an account at the PSP simulator: %w", err)
	}
	root := string(s.opts.Sandbox.RootCAsPEM)
	settings := handlersecrets.Secrets{PSP: &handlersecrets.PixPSP{
		BaseURL: p.APIURL, TokenURL: p.TokenURL, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		CertificatePEM: p.CertificatePEM, PrivateKeyPEM: p.PrivateKeyPEM, CAPEM: root,
		Webhook: handlersecrets.Webhook{Scheme: "mtls", CAPEM: p.CAPEM, Subjects: nonEmpty(p.WebhookSubject)},
	}}
	if p.StripeSecretKey != "" {
		settings.Stripe = &handlersecrets.Stripe{SecretKey: p.StripeSecretKey, APIURL: p.StripeAPIURL, CAPEM: root}
	}
	return sandboxAccount{clientID: p.ClientID, chave: p.Chave, settings: settings}, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// simControl calls the simulator's control API with the admin token.
func (s *Service) simControl(ctx context.Context, method, path string, in, out any) error {
	if s.opts.Sandbox.ControlURL == "" {
		return errNoSandbox
	}
	return s.sim.Do(ctx, method, path, in, out)
}

// newSimHTTP is the client of the simulator's control API.
func newSimHTTP(sb SandboxPSP, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Client, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(sb.RootCAsPEM) > 0 {
		pool, err := pki.ParseCertPool(sb.RootCAsPEM)
		if err != nil {
			return nil, fmt.Errorf("payments: the PSP simulator's CA: %w", err)
		}
		tlsCfg.RootCAs = pool
	}
	if sb.ControlURL != "" {
		if u, err := url.Parse(sb.ControlURL); err != nil || u.Scheme != "https" {
			return nil, fmt.Errorf("payments: the PSP simulator's control URL %q must be https", sb.ControlURL)
		}
	}
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	// The timeout as a context deadline (no goroutine and timer per
	// request, see httpdeadline).
	return &http.Client{Transport: &httpdeadline.Transport{Timeout: 15 * time.Second,
		Next: tracing.Transport(&http.Transport{DialContext: dial, TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 4})}}, nil
}

// simPay pays a sandbox charge as the payer's bank would (the simulator
// notifies the webhook afterwards, like a PSP).
func (s *Service) simPay(ctx context.Context, clientID, txid string, cents int64) error {
	body := map[string]string{}
	if cents > 0 {
		v, err := pix.FormatValor(cents)
		if err != nil {
			return err
		}
		body["valor"] = v
	}
	return s.simControl(ctx, http.MethodPost, "/sim/v1/accounts/"+url.PathEscape(clientID)+"/cob/"+url.PathEscape(txid)+"/pay", body, nil)
}
