package pspsim

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/services/payments/pix/pixcontract"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

const adminToken = "test-admin-token"

// clock is real time plus an offset tests can move forward.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// env is a running simulator with its CAs and a control client.
type env struct {
	t     *testing.T
	srv   *Server
	simCA *pki.CA // the simulator's CA
	devCA *pki.CA // issues the listeners' and receivers' server certificates
	clock *clock
	reg   *prometheus.Registry
	ctl   *http.Client
}

// newEnv starts a simulator on a fresh database. Every API answer goes
// through the OpenAPI contract checker; a response that breaks the
// contract fails the test.
func newEnv(t *testing.T, tweak ...func(*Config)) *env {
	t.Helper()
	d := testdb.New(t)
	devCA, err := pki.NewCA("dev CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	simCA, err := pki.NewCA("pspsim CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serverCert, err := devCA.IssueServer([]string{"127.0.0.1", "localhost"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	contract, err := pixcontract.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, simCA: simCA, devCA: devCA, clock: &clock{}, reg: prometheus.NewRegistry()}
	cfg := Config{
		Pool: d.Pool, PixAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", ServerCert: serverCert.TLS(), CA: simCA,
		AdminToken: adminToken, WebhookRootCAs: devCA.Pool(), Now: e.clock.Now, Metrics: e.reg,
		DeliverEvery: 20 * time.Millisecond, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		WrapAPI: func(h http.Handler) http.Handler {
			return contract.Middleware("/api/v2", h, func(err error) {
				var ce *pixcontract.Error
				if !errors.As(err, &ce) || ce.Part == "request" {
					return // tests send broken requests on purpose
				}
				// The document leaves authentication to the Manual de
				// Segurança: a 401 (RFC 6750) is no operation's response.
				if ce.Status == http.StatusUnauthorized && errors.Is(err, pixcontract.ErrUndocumentedStatus) {
					return
				}
				// The document's prose defines PixConsultaInvalida (400) for
				// GET /pix, but its responses omit the 400.
				if ce.Operation == "GET /pix" && ce.Status == http.StatusBadRequest && errors.Is(err, pixcontract.ErrUndocumentedStatus) {
					return
				}
				t.Errorf("simulator broke the API Pix contract: %v", err)
			})
		},
	}
	for _, f := range tweak {
		f(&cfg)
	}
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	e.srv = srv
	e.ctl = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: devCA.Pool()}}}
	return e
}

// control calls the control API; out (if not nil) receives a 2xx body.
func (e *env) control(method, path string, body any, out any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.ControlURL()+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := e.ctl.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode, b
}

// provision makes (or rotates) the account of reference.
func (e *env) provision(reference string, scopes ...string) *merchant {
	e.t.Helper()
	req := AccountRequest{Reference: reference, Nome: "Loja Árvore Ltda", Cidade: "Florianópolis"}
	if scopes != nil {
		req.Scopes = &scopes
	}
	var c Credentials
	if st, b := e.control("POST", "/sim/v1/accounts", req, &c); st != http.StatusCreated && st != http.StatusOK {
		e.t.Fatalf("provision %s: %d %s", reference, st, b)
	}
	return e.merchant(c)
}

// merchant is an account's client side: its credentials and an HTTP
// client presenting its certificate.
type merchant struct {
	e     *env
	creds Credentials
	hc    *http.Client
	token string
}

func (e *env) merchant(c Credentials) *merchant {
	e.t.Helper()
	cred, err := pki.ParseCredentials([]byte(c.CertificatePEM), []byte(c.PrivateKeyPEM))
	if err != nil {
		e.t.Fatal(err)
	}
	return &merchant{e: e, creds: c, hc: e.httpClient(cred.TLS())}
}

// httpClient trusts the dev CA and presents cert (none when empty).
func (e *env) httpClient(cert tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: e.devCA.Pool()}
	if len(cert.Certificate) > 0 {
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}

// tokenRequest posts a token request; basic selects client_secret_basic.
func (m *merchant) tokenRequest(hc *http.Client, clientID, secret string, basic bool, form url.Values) (*http.Response, map[string]any) {
	m.e.t.Helper()
	if form == nil {
		form = url.Values{"grant_type": {"client_credentials"}}
	}
	if !basic {
		form.Set("client_id", clientID)
		form.Set("client_secret", secret)
	}
	req, _ := http.NewRequest("POST", m.e.srv.TokenURL(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		m.e.t.Fatalf("token request: %v", err)
	}
	defer resp.Body.Close()
	var body map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		m.e.t.Fatalf("token answer %d is not JSON: %s", resp.StatusCode, b)
	}
	return resp, body
}

// login gets a token with every granted scope.
func (m *merchant) login() *merchant {
	m.e.t.Helper()
	resp, body := m.tokenRequest(m.hc, m.creds.ClientID, m.creds.ClientSecret, true, nil)
	if resp.StatusCode != http.StatusOK {
		m.e.t.Fatalf("token: %d %v", resp.StatusCode, body)
	}
	m.token = body["access_token"].(string)
	return m
}

// answer is an API response.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %d %s: %v", a.status, a.body, err)
	}
}

// call makes an API Pix call with the merchant's token; body is sent as
// is when it is a string, as JSON otherwise.
func (m *merchant) call(method, path string, body any) answer {
	m.e.t.Helper()
	a, err := m.try(method, path, body)
	if err != nil {
		m.e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

func (m *merchant) try(method, path string, body any) (answer, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, m.e.srv.PixURL()+path, rd)
	if err != nil {
		return answer{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if m.token != "" {
		req.Header.Set("Authorization", "Bearer "+m.token)
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// cobBody is a CobSolicitada for the merchant's key.
func (m *merchant) cobBody(valor string) map[string]any {
	return map[string]any{
		"calendario":         map[string]any{"expiracao": 3600},
		"valor":              map[string]any{"original": valor},
		"chave":              m.creds.Chave,
		"solicitacaoPagador": "Pedido 42",
	}
}

// createCob makes an ATIVA charge.
func (m *merchant) createCob(txid, valor string) Cob {
	m.e.t.Helper()
	a := m.call("PUT", "/cob/"+txid, m.cobBody(valor))
	if a.status != http.StatusCreated {
		m.e.t.Fatalf("PUT /cob/%s: %d %s", txid, a.status, a.body)
	}
	var c Cob
	a.decode(m.e.t, &c)
	return c
}

// pay pays a charge through the control API.
func (m *merchant) pay(txid, valor string) Pix {
	m.e.t.Helper()
	var body any
	if valor != "" {
		body = PayRequest{Valor: valor}
	}
	var p Pix
	if st, b := m.e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/cob/"+txid+"/pay", body, &p); st != http.StatusCreated {
		m.e.t.Fatalf("pay %s: %d %s", txid, st, b)
	}
	return p
}

func (m *merchant) ledger() Ledger {
	m.e.t.Helper()
	var l Ledger
	if st, b := m.e.control("GET", "/sim/v1/accounts/"+m.creds.ClientID+"/ledger", nil, &l); st != http.StatusOK {
		m.e.t.Fatalf("ledger: %d %s", st, b)
	}
	return l
}

// waitLedger polls the ledger until ok says so (or fails after 10 s).
func (m *merchant) waitLedger(what string, ok func(Ledger) bool) Ledger {
	m.e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := m.ledger()
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			m.e.t.Fatalf("waiting for %s; ledger deliveries: %+v", what, l.Deliveries)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) setFaults(spec string) FaultsState {
	e.t.Helper()
	var st FaultsState
	if code, b := e.control("PUT", "/sim/v1/faults", map[string]string{"spec": spec}, &st); code != http.StatusOK {
		e.t.Fatalf("set faults %q: %d %s", spec, code, b)
	}
	return st
}

// faultMetric is bcp_pspsim_faults_total{kind}.
func (e *env) faultMetric(kind string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "bcp_pspsim_faults_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	e.t.Fatalf("no bcp_pspsim_faults_total{kind=%q}", kind)
	return 0
}

// receiver is a merchant's webhook listener: TLS requiring a client
// certificate from the simulator's CA.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []notification
	// fail answers 500 to the first fail notifications.
	fail int
}

type notification struct {
	path     string
	ctype    string
	clientCN string
	body     []byte
}

func (e *env) receiver(fail int) *receiver {
	e.t.Helper()
	cert, err := e.devCA.IssueServer([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	r := &receiver{fail: fail}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		n := notification{path: req.URL.Path, ctype: req.Header.Get("Content-Type"), body: b}
		if len(req.TLS.PeerCertificates) > 0 {
			n.clientCN = req.TLS.PeerCertificates[0].Subject.CommonName
		}
		r.mu.Lock()
		r.got = append(r.got, n)
		failing := len(r.got) <= r.fail
		r.mu.Unlock()
		if failing {
			http.Error(w, "receiver down", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: e.simCA.Pool()}
	r.srv.StartTLS()
	e.t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) notifications() []notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notification(nil), r.got...)
}

// webhookPix decodes a notification's body.
func (n notification) pix(t *testing.T) []Pix {
	t.Helper()
	var body Notification
	if err := json.Unmarshal(n.body, &body); err != nil {
		t.Fatalf("notification %s: %v", n.body, err)
	}
	return body.Pix
}

// problemOf decodes an API Pix problem and checks its frame.
func problemOf(t *testing.T, a answer, status int, tipo string) problem {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	a.decode(t, &p)
	if p.Type != "https://pix.bcb.gov.br/api/v2/error/"+tipo || p.Status != status || p.Title == "" || p.Detail == "" || p.CorrelationID == "" {
		t.Errorf("problem = %+v, want type %s status %d with title, detail and correlationId", p, tipo, status)
	}
	return p
}

// violated says whether p names prop among its violations.
func violated(p problem, prop string) bool {
	for _, v := range p.Violacoes {
		if v.Propriedade == prop && v.Razao != "" {
			return true
		}
	}
	return false
}

func txid(n int) string { return fmt.Sprintf("pedido%026d", n) }
