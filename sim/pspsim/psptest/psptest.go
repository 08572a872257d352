// Package psptest runs the PSP simulator for other packages' tests: on
// the test's database, over real TLS, with a dev CA its clients trust,
// and drives its control API (accounts, payments, faults, ledger).
package psptest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/hostname"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/sim/pspsim"
)

// AdminToken is the control API's token in tests.
const AdminToken = "psptest-admin-token"

// Sim is a running simulator and what its clients need to trust it.
type Sim struct {
	*pspsim.Server
	// DevCA issued the simulator's server certificate (and may issue the
	// webhook receiver's): clients trust it.
	DevCA *pki.CA
	// CA is the simulator's own: account client certificates, webhook
	// client certificate.
	CA *pki.CA
	t  testing.TB
	hc *http.Client
}

// Start runs a simulator on pool until the test ends. tweak adjusts its
// configuration (faults, clock, routes) before it starts.
func Start(t testing.TB, pool *pgxpool.Pool, tweak ...func(*pspsim.Config)) *Sim {
	t.Helper()
	devCA, err := pki.NewCA("psptest dev CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	simCA, err := pki.NewCA("psptest PSP CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return StartWith(t, pool, devCA, simCA, tweak...)
}

// StartWith is Start with given CAs (a test that serves webhooks with a
// certificate of devCA).
func StartWith(t testing.TB, pool *pgxpool.Pool, devCA, simCA *pki.CA, tweak ...func(*pspsim.Config)) *Sim {
	t.Helper()
	cert, err := devCA.IssueServer([]string{"localhost", "*.localhost", "127.0.0.1"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pspsim.Config{
		Pool: pool, PixAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", ServerCert: cert.TLS(), CA: simCA,
		AdminToken: AdminToken, WebhookRootCAs: devCA.Pool(), DeliverEvery: 50 * time.Millisecond,
		RetryBase: 100 * time.Millisecond, RetryMax: time.Second, Logger: slog.New(slog.DiscardHandler),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	srv, err := pspsim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: devCA.Pool()}, DialContext: hostname.DialLocalhost(&net.Dialer{Timeout: 5 * time.Second})}
	return &Sim{Server: srv, DevCA: devCA, CA: simCA, t: t, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Control calls the control API; out (may be nil) receives a 2xx JSON
// answer. It returns the HTTP status and the body.
func (s *Sim) Control(method, path string, in, out any) (int, []byte) {
	s.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			s.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.ControlURL()+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("control %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("control %s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, b
}

func (s *Sim) must(method, path string, in, out any) {
	s.t.Helper()
	if st, b := s.Control(method, path, in, out); st/100 != 2 {
		s.t.Fatalf("control %s %s: %d %s", method, path, st, b)
	}
}

// Provision opens an account (scopes nil: all).
func (s *Sim) Provision(reference string, scopes []string) pspsim.Credentials {
	s.t.Helper()
	req := pspsim.AccountRequest{Reference: reference, Nome: "Loja " + reference}
	if scopes != nil {
		req.Scopes = &scopes
	}
	var c pspsim.Credentials
	s.must(http.MethodPost, "/sim/v1/accounts", req, &c)
	return c
}

// Settings are the handler settings of an account, as the payments
// service stores them.
func (s *Sim) Settings(c pspsim.Credentials) handlersecrets.PixPSP {
	return handlersecrets.PixPSP{
		BaseURL: c.APIURL, TokenURL: c.TokenURL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		CertificatePEM: c.CertificatePEM, PrivateKeyPEM: c.PrivateKeyPEM, CAPEM: string(s.DevCA.CertPEM),
		Webhook: handlersecrets.Webhook{Scheme: "mtls", CAPEM: c.CAPEM, Subjects: []string{c.WebhookSubject}},
	}
}

// Pay pays an ATIVA charge ("" valor: the charged amount).
func (s *Sim) Pay(clientID, txid, valor string) pspsim.Pix {
	s.t.Helper()
	var p pspsim.Pix
	s.must(http.MethodPost, "/sim/v1/accounts/"+clientID+"/cob/"+txid+"/pay", pspsim.PayRequest{Valor: valor}, &p)
	return p
}

// SetFaults replaces the fault settings ("" switches them off).
func (s *Sim) SetFaults(spec string) {
	s.t.Helper()
	s.must(http.MethodPut, "/sim/v1/faults", map[string]string{"spec": spec}, nil)
}

// Injected is how many faults of each kind the simulator injected.
func (s *Sim) Injected() map[string]int64 {
	s.t.Helper()
	var st struct {
		Injected map[string]int64 `json:"injected"`
	}
	s.must(http.MethodGet, "/sim/v1/faults", nil, &st)
	return st.Injected
}

// Ledger is the account's whole state at the simulator.
func (s *Sim) Ledger(clientID string) pspsim.Ledger {
	s.t.Helper()
	var l pspsim.Ledger
	s.must(http.MethodGet, "/sim/v1/accounts/"+clientID+"/ledger", nil, &l)
	return l
}

// WaitLedger polls the ledger until ok holds (or fails after 15 s).
func (s *Sim) WaitLedger(clientID, what string, ok func(pspsim.Ledger) bool) pspsim.Ledger {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		l := s.Ledger(clientID)
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the simulator's ledger never showed %s: %+v", what, l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// String names the simulator in failures.
func (s *Sim) String() string { return fmt.Sprintf("pspsim(%s, %s)", s.PixURL(), s.ControlURL()) }
