package cardsim_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
	"github.com/bcpdev/bcp/sim/pspsim/cardsim"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

const returnURL = "https://loja.example/checkout/chk_1"

// env is a simulator on a fresh database behind a real TLS listener, with
// one account (created as the account table's superuser would) and the
// real Stripe adapter pointed at it.
type env struct {
	t       testing.TB
	db      *testdb.DB
	srv     *httptest.Server
	key     string
	account uuid.UUID
	proc    *stripecard.Processor
	rec     *recorder
}

func newEnv(t testing.TB, tweak ...func(*cardsim.Config)) *env {
	t.Helper()
	d := testdb.New(t)
	e := &env{t: t, db: d}
	cfg := cardsim.Config{
		Pool: d.Pool, BaseURL: func() string { return e.srv.URL }, Now: time.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	sim := cardsim.New(cfg)
	mux := http.NewServeMux()
	// As on pspsim's control listener, whose own routes live under /sim/.
	mux.Handle("/sim/", http.NotFoundHandler())
	for pattern, h := range sim.Routes() {
		mux.Handle(pattern, h)
	}
	e.srv = httptest.NewTLSServer(mux)
	t.Cleanup(e.srv.Close)
	e.key, e.account = e.newAccount()
	e.proc, e.rec = e.processor(e.key)
	return e
}

// newAccount inserts an account row with a key from NewKey.
func (e *env) newAccount() (string, uuid.UUID) {
	e.t.Helper()
	key, hash := cardsim.NewKey()
	id := uuid.New()
	random := func() []byte { b := make([]byte, 32); _, _ = rand.Read(b); return b }
	e.super(`INSERT INTO pspsim.accounts (tenant_id, client_id, reference, client_secret_hash, cert_sha256, nome, cidade, cnpj, chave, scopes, stripe_key_hash, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 'Loja Teste', 'São Paulo', '12345678000199', $6, '{}', $7, now(), now())`,
		id, "client-"+id.String(), "ref-"+id.String(), random(), random(), id.String(), hash)
	return key, id
}

func (e *env) processor(key string) (*stripecard.Processor, *recorder) {
	e.t.Helper()
	rec := &recorder{next: e.srv.Client().Transport}
	p, err := stripecard.New(stripecard.Config{SecretKey: key, BaseURL: e.srv.URL, HTTPClient: &http.Client{Transport: rec, Timeout: 30 * time.Second}})
	if err != nil {
		e.t.Fatal(err)
	}
	return p, rec
}

// super runs SQL as the superuser (set-up and reading what was stored).
func (e *env) super(sql string, args ...any) {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// scalar reads one value as the superuser.
func scalar[T any](e *env, sql string, args ...any) T {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v T
	if err := conn.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// intents counts the account's intents (with key, when given).
func (e *env) intents(key string) int64 {
	e.t.Helper()
	return scalar[int64](e, `SELECT count(*) FROM pspsim.card_intents WHERE tenant_id = $1 AND ($2 = '' OR idempotency_key = $2)`, e.account, key)
}

// row is what the simulator stored of an intent.
type row struct {
	ID, Status, DeclineCode string
	Amount, Received        int64
	Refunded                int64
	Voided                  bool
}

func (e *env) intent(key string) row {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var r row
	err = conn.QueryRow(ctx, `SELECT id, status, decline_code, amount, amount_received, amount_refunded, coalesce(metadata->>'bcp_voided', '') = 'true'
		FROM pspsim.card_intents WHERE tenant_id = $1 AND idempotency_key = $2`, e.account, key).
		Scan(&r.ID, &r.Status, &r.DeclineCode, &r.Amount, &r.Received, &r.Refunded, &r.Voided)
	if err != nil {
		e.t.Fatalf("intent %s: %v", key, err)
	}
	return r
}

// exchange is one HTTP request the adapter made and the answer.
type exchange struct {
	Method, Path string
	Status       int
	Header       http.Header // the answer's
	Body         []byte
}

// recorder wraps the TLS transport and keeps every exchange.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	ex   []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	r.mu.Lock()
	r.ex = append(r.ex, exchange{Method: req.Method, Path: req.URL.Path, Status: res.StatusCode, Header: res.Header.Clone(), Body: b})
	r.mu.Unlock()
	return res, nil
}

func (r *recorder) take() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	ex := r.ex
	r.ex = nil
	return ex
}

// calls are exchanges as "METHOD path status" lines.
func calls(ex []exchange) []string {
	var out []string
	for _, x := range ex {
		out = append(out, fmt.Sprintf("%s %s %d", x.Method, x.Path, x.Status))
	}
	return out
}

func wantCalls(t *testing.T, ex []exchange, want ...string) {
	t.Helper()
	if got := calls(ex); !slices.Equal(got, want) {
		t.Fatalf("calls\n got %q\nwant %q", got, want)
	}
}

// newToken is a sandbox token ending in last4.
func newToken(last4 string) string { return "tok_test_" + strings.ToLower(rand.Text()) + "_" + last4 }

func newKey() string { return "pay_" + strings.ToLower(rand.Text()) }

func chargeReq(key, token string, amount int64) card.ChargeRequest {
	return card.ChargeRequest{IdempotencyKey: key, Token: token, TokenHash: card.TokenHash(token), Amount: amount, Currency: "BRL", ReturnURL: returnURL, CheckoutID: "chk_1"}
}

// api sends a raw API request with the account's key (or another).
func (e *env) api(method, path, key string, form url.Values, header ...string) (int, http.Header, map[string]any) {
	e.t.Helper()
	var body io.Reader
	target := e.srv.URL + path
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		target += "?" + form.Encode()
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		e.t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, res.StatusCode, b, err)
	}
	return res.StatusCode, res.Header, v
}

// errorOf is the error object of an API answer.
func errorOf(v map[string]any) map[string]any {
	m, _ := v["error"].(map[string]any)
	return m
}

// browser follows nothing: the 3-D Secure page's redirect is asserted.
func (e *env) browser() *http.Client {
	return &http.Client{Transport: e.srv.Client().Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// challenge answers the 3-D Secure page of an action URL.
func (e *env) challenge(actionURL, outcome string) (int, string) {
	e.t.Helper()
	u, err := url.Parse(actionURL)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.browser().PostForm(e.srv.URL+u.Path, url.Values{"client_secret": {u.Query().Get("client_secret")}, "outcome": {outcome}})
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}

func get(e *env, target string) (int, string) {
	e.t.Helper()
	res, err := e.browser().Get(target)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// retry calls fn until it is not a 409 idempotency_key_in_use (the same
// key running concurrently, which the caller retries), at most 200 times.
func retry[T any](t *testing.T, fn func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := fn()
		var se *stripecard.Error
		if !errors.As(err, &se) || se.HTTPStatus != http.StatusConflict || i == 200 {
			return v, err
		}
		time.Sleep(time.Millisecond)
	}
}

func tokenHash(tok string) []byte { h := sha256.Sum256([]byte(tok)); return h[:] }
