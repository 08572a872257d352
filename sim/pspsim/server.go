// Package pspsim is the sandbox's Pix PSP: a bank's side of the BCB API Pix
// v2 served over HTTPS, so sandbox merchants use the very client
// production uses (OAuth2 client credentials over mTLS) pointed at it.
//
// It has two listeners:
//
//   - the API listener (PixAddr) requires a client certificate issued by
//     the simulator's CA, as a real PSP does, and serves POST /oauth/token
//     and the API Pix subset under /api/v2 (cob, pix, devolução, webhook)
//     with the API's rules and RFC 7807 problems;
//   - the control listener (ControlAddr) is what a real bank does not
//     have: provisioning accounts (credentials as a developer portal hands
//     them out), paying charges, orphan and repeated Pix, the account's
//     ledger and the fault knobs, behind an admin bearer token; and the
//     card API, Stripe-compatible (package cardsim), with each account's
//     own secret key.
//
// State lives in PostgreSQL (schema pspsim, one tenant per simulated
// account, row-level security), so it survives restarts and several
// simulator processes can serve the same accounts. Webhooks go out from a
// durable outbox over mTLS, with the simulator's own client certificate,
// and are retried with backoff until the receiver answers 2xx.
//
// Faults (Config.Faults, PUT /sim/v1/faults) act at the HTTP level on the
// API and on webhook deliveries, never on the control API.
package pspsim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/protocol/brcode"
)

// Config configures a simulator.
type Config struct {
	Pool *pgxpool.Pool
	// PixAddr and ControlAddr are the listen addresses ("127.0.0.1:0"
	// picks a port).
	PixAddr, ControlAddr string
	// ServerCert is the certificate of both listeners, issued by a CA the
	// clients trust.
	ServerCert tls.Certificate
	// CA is the simulator's own CA: it issues the accounts' client
	// certificates and the webhook client certificate, and verifies API
	// clients.
	CA *pki.CA
	// AdminToken guards the control API (Authorization: Bearer …).
	AdminToken string
	// WebhookRootCAs verify the receivers' server certificates (nil: the
	// system's).
	WebhookRootCAs *x509.CertPool
	// WebhookDial dials receivers (nil: "localhost" and "*.localhost" go
	// to 127.0.0.1, anything else through the system resolver).
	WebhookDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// LocationHost is the host of charge locations (default
	// "pix.sandbox.bcp.dev.br").
	LocationHost string
	// TokenLifetime is how long an access token lives (default 1 h).
	TokenLifetime time.Duration
	// Faults are the initial fault settings, e.g.
	// "error5xx=0.1,latency=200ms,drop_webhook=0.1" (see ParseFaults).
	Faults string
	// DeliverEvery is how often the webhook worker polls the outbox
	// (default 250 ms; deliveries made by this process wake it at once).
	DeliverEvery time.Duration
	// RetryBase and RetryMax shape a failed delivery's backoff: RetryBase
	// doubling per attempt, at most RetryMax (defaults 1 s and 1 min).
	RetryBase, RetryMax time.Duration
	// WrapAPI, when set, wraps the API Pix routes (/api/v2/…) inside the
	// fault layer: tests put the OpenAPI contract checker there.
	WrapAPI func(http.Handler) http.Handler
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics prometheus.Registerer
	// Tracing traces both listeners and the webhooks (nil: off). A
	// webhook of a payment made through the control API continues that
	// call's trace, as if the bank told the PSP which purchase it paid
	// (deliveryTraces).
	Tracing *tracing.Provider
}

// DefaultLocationHost is the host of charge locations unless configured.
const DefaultLocationHost = "pix.sandbox.bcp.dev.br"

// locationPath is what follows the host in a location; a 32-hex id ends it.
const locationPath = "/qr/v2/"

// Server is a running simulator.
type Server struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	faults  *faults
	pixLn   net.Listener
	ctlLn   net.Listener
	pixSrv  *http.Server
	ctlSrv  *http.Server
	webhook *http.Client
	wake    chan struct{}
	traces  deliveryTraces
	// certAccounts maps a client certificate's SHA-256 to the account it
	// was issued to. Fingerprints are never reused, so an entry never goes
	// wrong; a rotated-out certificate is refused by the token check.
	certAccounts sync.Map // [32]byte → uuid.UUID

	stop     context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// Start checks cfg, listens on both addresses and starts the webhook
// worker. ctx is for starting only (its values are kept, its end is not):
// Stop ends them.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Pool == nil {
		return nil, errors.New("pspsim: Config.Pool is required")
	}
	if cfg.CA == nil {
		return nil, errors.New("pspsim: Config.CA is required")
	}
	if len(cfg.ServerCert.Certificate) == 0 {
		return nil, errors.New("pspsim: Config.ServerCert is required")
	}
	if cfg.AdminToken == "" {
		return nil, errors.New("pspsim: Config.AdminToken is required")
	}
	cfg.LocationHost = cmp.Or(cfg.LocationHost, DefaultLocationHost)
	if n := len(cfg.LocationHost) + len(locationPath) + 32; n > brcode.MaxURLLen {
		return nil, fmt.Errorf("pspsim: LocationHost %q makes %d-character locations; the API Pix allows %d", cfg.LocationHost, n, brcode.MaxURLLen)
	}
	if _, err := (brcode.Payload{URL: cfg.LocationHost + locationPath + strings.Repeat("0", 32), MerchantName: "X", MerchantCity: "X"}).Encode(); err != nil {
		return nil, fmt.Errorf("pspsim: LocationHost %q: %w", cfg.LocationHost, err)
	}
	cfg.TokenLifetime = cmp.Or(cfg.TokenLifetime, time.Hour)
	cfg.DeliverEvery = cmp.Or(cfg.DeliverEvery, 250*time.Millisecond)
	cfg.RetryBase = cmp.Or(cfg.RetryBase, time.Second)
	cfg.RetryMax = cmp.Or(cfg.RetryMax, time.Minute)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	settings, err := ParseFaults(cfg.Faults)
	if err != nil {
		return nil, err
	}
	f, err := newFaults(settings, cfg.Metrics)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log.With("component", "pspsim"), now: cfg.Now, faults: f, wake: make(chan struct{}, 1)}
	if s.webhook, err = s.webhookClient(); err != nil {
		return nil, err
	}
	ctl, err := s.controlHandler()
	if err != nil {
		return nil, err
	}

	s.pixLn, err = net.Listen("tcp", cfg.PixAddr)
	if err != nil {
		return nil, fmt.Errorf("pspsim: listen %s: %w", cfg.PixAddr, err)
	}
	s.ctlLn, err = net.Listen("tcp", cfg.ControlAddr)
	if err != nil {
		s.pixLn.Close()
		return nil, fmt.Errorf("pspsim: listen %s: %w", cfg.ControlAddr, err)
	}
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	s.pixSrv = &http.Server{
		Handler: cfg.Tracing.Handler("pspsim-api", false, s.pixHandler()),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cfg.ServerCert},
			// As at a real PSP: no certificate from the simulator's CA, no
			// connection.
			ClientAuth: tls.RequireAndVerifyClientCert,
			ClientCAs:  cfg.CA.Pool(),
			MinVersion: tls.VersionTLS12,
		},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          errLog,
	}
	s.ctlSrv = &http.Server{
		Handler:           cfg.Tracing.Handler("pspsim-control", false, ctl),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cfg.ServerCert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          errLog,
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		if err := s.pixSrv.ServeTLS(s.pixLn, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("pspsim: API listener stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		if err := s.ctlSrv.ServeTLS(s.ctlLn, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("pspsim: control listener stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.deliverLoop(wctx)
	}()
	return s, nil
}

// PixURL is the API Pix base URL, https://<PixAddr>/api/v2 (the port
// the listener got; localhost for a wildcard address).
func (s *Server) PixURL() string { return publicURL(s.cfg.PixAddr, s.pixLn) + "/api/v2" }

// TokenURL is the OAuth2 token endpoint.
func (s *Server) TokenURL() string { return publicURL(s.cfg.PixAddr, s.pixLn) + "/oauth/token" }

// ControlURL is the control API's root.
func (s *Server) ControlURL() string { return publicURL(s.cfg.ControlAddr, s.ctlLn) }

// Stop closes the listeners (waiting up to 5 s for requests under way)
// and stops the webhook worker.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.pixSrv.Shutdown(ctx)
		_ = s.ctlSrv.Shutdown(ctx)
		s.wg.Wait()
		s.webhook.CloseIdleConnections()
	})
}

// pixHandler serves the API listener.
func (s *Server) pixHandler() http.Handler {
	api := http.NewServeMux()
	route := func(pattern, scope string, h func(http.ResponseWriter, *http.Request, *account)) {
		api.Handle(pattern, s.authorized(scope, h))
	}
	route("PUT /api/v2/cob/{txid}", "cob.write", s.putCob)
	route("PATCH /api/v2/cob/{txid}", "cob.write", s.patchCob)
	route("GET /api/v2/cob/{txid}", "cob.read", s.getCob)
	route("GET /api/v2/pix/{e2eid}", "pix.read", s.getPix)
	route("GET /api/v2/pix", "pix.read", s.listPix)
	route("PUT /api/v2/pix/{e2eid}/devolucao/{id}", "pix.write", s.putDevolucao)
	route("GET /api/v2/pix/{e2eid}/devolucao/{id}", "pix.read", s.getDevolucao)
	route("PUT /api/v2/webhook/{chave}", "webhook.write", s.putWebhook)
	route("GET /api/v2/webhook/{chave}", "webhook.read", s.getWebhook)
	route("DELETE /api/v2/webhook/{chave}", "webhook.write", s.deleteWebhook)
	api.HandleFunc("/api/v2/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, problemf(tNaoEncontrado, "%s %s não é um recurso deste PSP", r.Method, r.URL.Path))
	})

	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", s.token)
	var inner http.Handler = api
	if s.cfg.WrapAPI != nil {
		inner = s.cfg.WrapAPI(api)
	}
	mux.Handle("/api/v2/", s.faults.api(inner))
	return mux
}

// fingerprint is the SHA-256 of a certificate's DER.
func fingerprint(c *x509.Certificate) [32]byte { return sha256.Sum256(c.Raw) }

// peerFingerprint is the fingerprint of the client certificate of r (the
// listener requires one).
func peerFingerprint(r *http.Request) ([32]byte, bool) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return [32]byte{}, false
	}
	return fingerprint(r.TLS.PeerCertificates[0]), true
}

// account is the authenticated caller of an API request.
type account struct {
	id     uuid.UUID
	chave  string
	nome   string
	cidade string
	cnpj   string
	scopes []string
}
