package payments_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/httpsig"
	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/hostname"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/internal/wire"
	"github.com/bcpdev/bcp/platform"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/payments"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/paymentshttp"
	"github.com/bcpdev/bcp/sim/pspsim"
	"github.com/bcpdev/bcp/sim/pspsim/psptest"
)

// Every test gets a fresh database on the package's private PostgreSQL.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

const (
	operatorToken = "test-operator-token"
	internalToken = "test-internal-token"
)

var masterKey = []byte("0123456789abcdef0123456789abcdef")

// clock is the service's clock; tests move it. It starts at the real
// time so that durable jobs scheduled "now" run.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// settleCall is one announcement to the checkout service: a durable
// checkout_settle job in the checkout queue (nobody works that queue in
// these tests, so every announcement stays visible).
type settleCall struct{ tenant, checkoutID, attemptID, queue string }

// announced lists the checkout_settle jobs for attemptID.
func announced(t testing.TB, pool *pgxpool.Pool, attemptID string) []settleCall {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT args->>'tenant_id', args->>'checkout_id', args->>'attempt_id', queue
		FROM river.river_job WHERE kind = 'checkout_settle' AND args->>'attempt_id' = $1 ORDER BY id`, attemptID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []settleCall
	for rows.Next() {
		var c settleCall
		if err := rows.Scan(&c.tenant, &c.checkoutID, &c.attemptID, &c.queue); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) settled(attemptID string) []settleCall { return announced(e.t, e.db.Pool, attemptID) }

type merchant struct {
	id      uuid.UUID
	host    string
	baseURL string
	ctx     context.Context
}

// env is a payments service on real listeners: the tenant registry (a
// bcpd process hosting only it), the service with its job client, its
// connect API behind the platform's interceptors, a fake checkout
// service, the PSP simulator its sandbox handlers pay through (on the
// test's clock), and public listeners standing for the edge (Host →
// tenant) with the paymentshttp routes mounted: plain HTTP for browsers,
// and TLS asking for client certificates for the PSP's webhooks.
type env struct {
	t        testing.TB
	db       *testdb.DB
	sim      *psptest.Sim
	svc      *payments.Service
	client   paymentsv1connect.PaymentsServiceClient
	jobs     *jobs.Client
	clock    *clock
	ops      *platform.Clients
	port     string
	tlsPort  string   // the webhook listener's
	hosts    sync.Map // host → tenant id
	webhooks atomic.Int64
	a, b     merchant
}

func quietLog() *slog.Logger {
	if testing.Verbose() && os.Getenv("PAYMENTS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// web is the tests' HTTP client: like the PSP simulator's, it reaches the
// development hosts (*.localhost) on the loopback interface.
var web = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = hostname.DialLocalhost(&net.Dialer{Timeout: 5 * time.Second})
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}()

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, db: testdb.New(t), clock: &clock{t: time.Now().UTC()}}
	log := quietLog()
	plat, err := platform.Start(ctx, platform.Config{
		Services: []string{platform.Tenants}, DatabaseURL: e.db.AppURL, InternalAddr: "127.0.0.1:0",
		InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: masterKey, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plat.Stop)
	e.ops = plat.ClientsWithToken(operatorToken)

	e.sim = psptest.Start(t, e.db.Pool, func(c *pspsim.Config) { c.Now = e.clock.Now })
	e.svc, err = payments.New(e.db.Pool, plat.Clients.Tenants, masterKey, payments.Options{
		Logger: log, Now: e.clock.Now, PSPDial: countDials(hostname.DialLocalhost(&net.Dialer{Timeout: 5 * time.Second})),
		PSPWrap: countRequests,
		Sandbox: payments.SandboxPSP{ControlURL: e.sim.ControlURL(), AdminToken: psptest.AdminToken, RootCAsPEM: e.sim.DevCA.CertPEM},
		// The PSP posts to the merchant's host on the webhook listener.
		WebhookOrigin: func(origin string) string {
			host := strings.TrimPrefix(origin, "http://")
			host, _, _ = net.SplitHostPort(host)
			return "https://" + net.JoinHostPort(host, e.tlsPort)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	workers := river.NewWorkers()
	payments.AddWorkers(workers, e.svc)
	e.jobs, err = jobs.NewClient(e.db.Pool, workers, nil, []string{jobs.QueuePayments}, log)
	if err != nil {
		t.Fatal(err)
	}
	e.svc.UseJobs(e.jobs)
	jctx, cancel := context.WithCancel(ctx)
	if err := e.jobs.Start(jctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = e.jobs.Stop(sctx)
	})

	api := httptest.NewServer(mux(paymentsv1connect.NewPaymentsServiceHandler(e.svc, connect.WithInterceptors(
		apperr.Interceptor(log), svcauth.Server(svcauth.Tokens{Internal: internalToken, Operator: operatorToken}, payments.Policy)))))
	t.Cleanup(api.Close)
	e.client = paymentsv1connect.NewPaymentsServiceClient(http.DefaultClient, api.URL, connect.WithInterceptors(svcauth.Client(internalToken)))

	// The public listener: what the edge does for these routes.
	public := http.NewServeMux()
	for pattern, h := range paymentshttp.Routes(e.client, paymentshttp.Options{}) {
		public.Handle(pattern, h)
	}
	edge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.Host)
		id, ok := e.hosts.Load(host)
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/webhooks/") {
			e.webhooks.Add(1)
		}
		public.ServeHTTP(w, r.WithContext(tenancy.With(r.Context(), id.(uuid.UUID))))
	})
	pub := httptest.NewServer(edge)
	t.Cleanup(pub.Close)
	_, e.port, _ = net.SplitHostPort(pub.Listener.Addr().String())
	cert, err := e.sim.DevCA.IssueServer([]string{"localhost", "*.localhost", "127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wh := httptest.NewUnstartedServer(edge)
	wh.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, ClientAuth: tls.RequestClientCert}
	wh.StartTLS()
	t.Cleanup(wh.Close)
	_, e.tlsPort, _ = net.SplitHostPort(wh.Listener.Addr().String())

	e.a = e.merchant("Loja Árvore", "loja-a.localhost")
	e.b = e.merchant("Loja Bambu", "loja-b.localhost")
	return e
}

func mux(pattern string, h http.Handler) http.Handler {
	m := http.NewServeMux()
	m.Handle(pattern, h)
	return m
}

// merchant onboards a development tenant with a sandbox Pix handler and a
// sandbox delegated card handler (visa, mastercard) through the registry.
func (e *env) merchant(name, host string) merchant {
	e.t.Helper()
	ctx := context.Background()
	tr, err := e.ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: name, Domains: []string{host}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		e.t.Fatal(err)
	}
	id := uuid.MustParse(tr.Msg.GetTenant().GetId())
	e.setHandler(id, &tenantsv1.PaymentHandler{Id: "pix", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`,
		ConfigJson: `{"environment":"sandbox","merchant_city":"Florianópolis"}`, Environment: "sandbox"})
	e.setHandler(id, &tenantsv1.PaymentHandler{Id: "cartao", Name: "com.example.vendor.delegate_payment", Position: 1,
		AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`, ConfigJson: `{}`, Environment: "sandbox"})
	e.hosts.Store(host, id)
	return merchant{id: id, host: host, baseURL: "http://" + host + ":" + e.port, ctx: tenancy.With(ctx, id)}
}

func (e *env) setHandler(tenant uuid.UUID, h *tenantsv1.PaymentHandler) {
	e.t.Helper()
	if _, err := e.ops.Tenants.SetPaymentHandler(context.Background(), connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tenant.String(), Handler: h})); err != nil {
		e.t.Fatal(err)
	}
}

const pixInstrument = `{"id":"pi_1","handler_id":"pix","type":"pix","selected":true}`

// startReq is the StartPayment the checkout service sends for an agent's
// instrument (JSON, as agents send it; "": none).
func startReq(m merchant, checkoutID string, amount int64, instrument string) *paymentsv1.StartPaymentRequest {
	return &paymentsv1.StartPaymentRequest{AttemptId: ids.New("pay"), CheckoutId: checkoutID, Instrument: typedInstrument(instrument),
		Amount: amount, Currency: "BRL", BuyerEmail: "ana@example.com", BaseUrl: m.baseURL, AgentProfileUrl: "https://agente.example/perfil"}
}

// typedInstrument is an agent's instrument as the checkout service passes
// it on: decoded into the checkout's shape, then typed around its
// credential (wire.PaymentInstrument).
func typedInstrument(raw string) *paymentsv1.PaymentInstrument {
	if raw == "" {
		return nil
	}
	var in bcp.PaymentInstrument
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		panic(fmt.Sprintf("instrument %s: %v", raw, err))
	}
	return wire.PaymentInstrument(in)
}

func (e *env) start(m merchant, req *paymentsv1.StartPaymentRequest) *paymentsv1.Attempt {
	e.t.Helper()
	resp, err := e.client.StartPayment(m.ctx, connect.NewRequest(req))
	if err != nil {
		e.t.Fatalf("StartPayment: %v", err)
	}
	return resp.Msg.GetAttempt()
}

func (e *env) get(m merchant, id string) *paymentsv1.Attempt {
	e.t.Helper()
	resp, err := e.client.GetPayment(m.ctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: id}))
	if err != nil {
		e.t.Fatalf("GetPayment: %v", err)
	}
	return resp.Msg.GetAttempt()
}

// eventually polls cond until it holds; for asynchronous work only.
func (e *env) eventually(within time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not true after %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) waitStatus(m merchant, id string, want paymentsv1.AttemptStatus) *paymentsv1.Attempt {
	e.t.Helper()
	var a *paymentsv1.Attempt
	e.eventually(15*time.Second, "attempt "+id+" becomes "+want.String(), func() bool {
		a = e.get(m, id)
		return a.GetStatus() == want
	})
	return a
}

// q runs fn with the payments queries in m's tenant scope.
func (e *env) q(m merchant, fn func(q *paymentsdb.Queries) error) {
	e.t.Helper()
	if err := pgstore.InTenant(m.ctx, e.db.Pool, func(tx pgx.Tx) error { return fn(paymentsdb.New(tx)) }); err != nil {
		e.t.Fatal(err)
	}
}

// scalar runs a one-value query in m's tenant scope (RLS applies).
func (e *env) scalar(m merchant, dst any, sql string, args ...any) {
	e.t.Helper()
	if err := pgstore.InTenant(m.ctx, e.db.Pool, func(tx pgx.Tx) error { return tx.QueryRow(context.Background(), sql, args...).Scan(dst) }); err != nil {
		e.t.Fatal(err)
	}
}

// account is the simulator account a handler of m was given ("" before
// its first payment).
func (e *env) account(m merchant, handlerID string) (clientID string) {
	e.t.Helper()
	e.q(m, func(q *paymentsdb.Queries) error {
		a, err := q.GetSandboxAccount(context.Background(), paymentsdb.GetSandboxAccountParams{TenantID: m.id, HandlerID: handlerID})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		clientID = a.ClientID
		return err
	})
	return clientID
}

// ledger is what the PSP simulator holds for m's Pix handler.
func (e *env) ledger(m merchant) pspsim.Ledger {
	e.t.Helper()
	id := e.account(m, "pix")
	if id == "" {
		return pspsim.Ledger{}
	}
	return e.sim.Ledger(id)
}

// simCharges counts the Pix charges m's Pix handler made at the PSP.
func (e *env) simCharges(m merchant) int64 { return int64(len(e.ledger(m).Charges)) }

// pixOf is the Pix the PSP received for txid (zero when none).
func (e *env) pixOf(m merchant, txid string) pspsim.Pix {
	for _, p := range e.ledger(m).Pix {
		if p.Txid == txid {
			return p
		}
	}
	return pspsim.Pix{}
}

// deliveries waits until the PSP holds n notifications for m's Pix
// handler in status (delivered, dropped, ...), none pending.
func (e *env) deliveries(m merchant, status string, n int) {
	e.t.Helper()
	e.sim.WaitLedger(e.account(m, "pix"), fmt.Sprintf("%d deliveries %s", n, status), func(l pspsim.Ledger) bool {
		got := 0
		for _, d := range l.Deliveries {
			if d.Status == "pending" {
				return false
			}
			if d.Status == status {
				got++
			}
		}
		return got == n
	})
}

// postWebhook posts a notification to the webhook listener as a PSP
// would, presenting cert (nil: none), and returns the HTTP status.
func (e *env) postWebhook(host, hookID string, cert *pki.Issued, body []byte) int {
	e.t.Helper()
	cfg := &tls.Config{RootCAs: e.sim.DevCA.Pool()}
	if cert != nil {
		c := cert.TLS()
		cfg.Certificates = []tls.Certificate{c}
	}
	tr := &http.Transport{TLSClientConfig: cfg, DialContext: hostname.DialLocalhost(&net.Dialer{Timeout: 5 * time.Second})}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, "https://"+net.JoinHostPort(host, e.tlsPort)+"/webhooks/pix/"+hookID+"/pix", bytes.NewReader(body))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// simCharge is one of them, as the PSP holds it.
func (e *env) simCharge(m merchant, txid string) pspsim.Cob {
	e.t.Helper()
	for _, c := range e.ledger(m).Charges {
		if c.Txid == txid {
			return c
		}
	}
	e.t.Fatalf("the PSP has no charge %s", txid)
	return pspsim.Cob{}
}

// cardCharges counts the card payments m's card handler made at the card
// simulator (approved, declined or waiting for 3-D Secure; not the keys
// a cancel claimed).
func (e *env) cardCharges(m merchant) (n int64) {
	e.t.Helper()
	e.superScalar(&n, `SELECT count(*) FROM pspsim.card_intents i JOIN pspsim.accounts a ON a.tenant_id = i.tenant_id
		WHERE a.client_id = $1 AND coalesce(i.metadata->>'bcp_voided', '') <> 'true'`, e.account(m, "cartao"))
	return n
}

// superScalar runs a one-value query as the superuser: the simulators'
// tables, across their accounts.
func (e *env) superScalar(dst any, sql string, args ...any) {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(dst); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) receipts(m merchant) (n int64) {
	e.q(m, func(q *paymentsdb.Queries) (err error) { n, err = q.CountReceipts(context.Background(), m.id); return })
	return n
}

// jobCount counts river jobs of kind whose args name attemptID (any
// state), and how many of them completed.
func (e *env) jobCount(kind, key, value string) (total, completed int) {
	e.t.Helper()
	err := e.db.Pool.QueryRow(context.Background(),
		`SELECT count(*), count(*) FILTER (WHERE state = 'completed') FROM river.river_job WHERE kind = $1 AND args->>$2 = $3`,
		kind, key, value).Scan(&total, &completed)
	if err != nil {
		e.t.Fatal(err)
	}
	return total, completed
}

// jobsFor counts river jobs of any kind whose args name attemptID.
func (e *env) jobsFor(attemptID string) (n int) {
	e.t.Helper()
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job WHERE args->>'attempt_id' = $1`, attemptID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// resolveAfter reads an attempt's resolve_after (nil: NULL).
func (e *env) resolveAfter(m merchant, attemptID string) (t *time.Time) {
	e.t.Helper()
	e.q(m, func(q *paymentsdb.Queries) error {
		a, err := q.GetAttempt(context.Background(), paymentsdb.GetAttemptParams{TenantID: m.id, ID: attemptID})
		t = a.ResolveAfter
		return err
	})
	return t
}

// sweep runs one of the resolve sweep's halves (e.svc.SweepResolves or
// e.svc.SweepReceipts) and says how many rows it settled.
func (e *env) sweep(half func(context.Context) (int, error)) int {
	e.t.Helper()
	n, err := half(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// receipt reads a Pix receipt.
func (e *env) receipt(m merchant, e2e string) (r paymentsdb.PaymentsPixReceipt) {
	e.t.Helper()
	e.q(m, func(q *paymentsdb.Queries) (err error) {
		r, err = q.GetReceipt(context.Background(), paymentsdb.GetReceiptParams{TenantID: m.id, E2eID: e2e})
		return err
	})
	return r
}

// hook returns the id of a handler's Pix webhook hook.
func (e *env) hook(m merchant, handlerID string) (id string) {
	e.t.Helper()
	e.q(m, func(q *paymentsdb.Queries) error {
		h, err := q.GetHookByHandler(context.Background(), paymentsdb.GetHookByHandlerParams{TenantID: m.id, HandlerID: handlerID})
		id = h.ID
		return err
	})
	return id
}

// pixDisplayOf decodes an attempt's Pix display.
func pixDisplayOf(t testing.TB, a *paymentsv1.Attempt) pixDisplayBody {
	t.Helper()
	var d struct {
		Pix pixDisplayBody `json:"pix"`
	}
	if err := json.Unmarshal([]byte(a.GetDisplayJson()), &d); err != nil {
		t.Fatalf("display %q: %v", a.GetDisplayJson(), err)
	}
	return d.Pix
}

// codeOf renders an RPC error as "<connect code>/<domain code>".
func codeOf(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return fmt.Sprint(err)
	}
	return ce.Code().String() + "/" + ce.Meta().Get("Bcp-Error-Code")
}

// Delegated tokens.

// signer is an agent platform's ES256 key.
type signer struct {
	key *ecdsa.PrivateKey
	kid string
	jwk string
}

func newSigner(t testing.TB, kid string) signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	j, err := httpsig.PublicJWK(&k.PublicKey, kid)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(j)
	return signer{key: k, kid: kid, jwk: string(b)}
}

// sign makes a compact JWS (ES256, raw r‖s) of claims.
func (s signer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": s.kid, "typ": "JWT"})
	p, _ := json.Marshal(claims)
	in := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p)
	d := sha256.Sum256([]byte(in))
	r, ss, err := ecdsa.Sign(rand.Reader, s.key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func cardInstrument(credential string, brand, last string) string {
	d := ""
	if brand != "" {
		d = `,"display":{"brand":"` + brand + `","last_digits":"` + last + `"}`
	}
	return `{"id":"pi_c","handler_id":"cartao","type":"card"` + d + `,"credential":` + credential + `}`
}

func tokenCred(tok string) string { return `{"type":"token","token":"` + tok + `"}` }

type pixDisplayBody struct {
	CopiaECola  string `json:"copia_e_cola"`
	QRPngURL    string `json:"qr_png_url"`
	QRSvgURL    string `json:"qr_svg_url"`
	Txid        string `json:"txid"`
	Amount      string `json:"amount"`
	ExpiresAt   string `json:"expires_at"`
	AttemptID   string `json:"attempt_id"`
	Environment string `json:"environment"`
}

// cardHandlerWithJWKS is the delegated handler trusting s's key from its
// config, besides the agents' keys.
func cardHandlerWithJWKS(s signer) *tenantsv1.PaymentHandler {
	return &tenantsv1.PaymentHandler{Id: "cartao", Name: "com.example.vendor.delegate_payment", Position: 1,
		AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`,
		ConfigJson:               `{"jwks":{"keys":[` + s.jwk + `]}}`, Environment: "sandbox"}
}

// scalarExec runs a statement as the superuser (a test forcing a state
// no request can reach in one step).
func (e *env) scalarExec(sql string, args ...any) {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatal(err)
	}
}
