package apipix_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/protocol/brcode"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
	"github.com/bcpdev/bcp/services/payments/pix/pixcontract"
	"github.com/bcpdev/bcp/sim/pspsim"
	"github.com/bcpdev/bcp/sim/pspsim/psptest"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// calls counts the client's HTTP exchanges by operation.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) observe(op string, _ int, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op]++
}

func (c *calls) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// client is the API Pix client of account c, every exchange checked
// against the BCB's OpenAPI (undocumented statuses aside: the spec gives
// none for 401, 5xx other than 503, or a lost answer).
func client(t *testing.T, sim *psptest.Sim, c pspsim.Credentials, adjust ...func(*apipix.Config)) (*apipix.Client, *calls) {
	t.Helper()
	contract, err := pixcontract.Load()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCredentials([]byte(c.CertificatePEM), []byte(c.PrivateKeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	tc := cert.TLS()
	simCA, err := pki.ParseCertPool([]byte(c.CAPEM))
	if err != nil {
		t.Fatal(err)
	}
	n := &calls{n: map[string]int{}}
	cfg := apipix.Config{
		BaseURL: c.APIURL, TokenURL: c.TokenURL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		Certificate: &tc, RootCAs: sim.DevCA.Pool(), Webhook: apipix.WebhookAuth{CAs: simCA, Subjects: []string{pspsim.WebhookCertCN}},
		Observe: n.observe, Timeout: 5 * time.Second,
		Wrap: func(next http.RoundTripper) http.RoundTripper {
			return contract.Transport(c.APIURL, next, func(err error) {
				if errors.Is(err, pixcontract.ErrUndocumentedStatus) || errors.Is(err, pixcontract.ErrNoOperation) {
					return // the token endpoint, a 401, a forced 5xx
				}
				t.Errorf("API Pix contract: %v", err)
			})
		},
	}
	for _, f := range adjust {
		f(&cfg)
	}
	cl, err := apipix.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl, n
}

func cobReq(valor, chave string) pix.CobSolicitada {
	var r pix.CobSolicitada
	r.Calendario.Expiracao = 1800
	r.Valor.Original = valor
	r.Chave = chave
	r.SolicitacaoPagador = "Pedido chk_teste"
	return r
}

func problemType(err error) string {
	var p *pix.Problem
	if errors.As(err, &p) {
		return p.Type
	}
	return ""
}

// Every operation the payments service uses, over TLS with the account's
// client certificate and an OAuth2 token, each request and answer checked
// against the BCB's OpenAPI.
func TestEveryOperation(t *testing.T) {
	db := testdb.New(t)
	sim := psptest.Start(t, db.Pool)
	acc := sim.Provision("loja-ops", nil)
	cl, n := client(t, sim, acc)
	ctx := context.Background()

	// A webhook receiver over mTLS: the simulator presents its webhook
	// certificate, which AuthenticateWebhook accepts.
	got := make(chan pix.Webhook, 4)
	srvCert, _ := sim.DevCA.IssueServer([]string{"127.0.0.1", "localhost"}, time.Hour)
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var chain [][]byte
		for _, c := range r.TLS.PeerCertificates {
			chain = append(chain, c.Raw)
		}
		body := make([]byte, r.ContentLength)
		_, _ = r.Body.Read(body)
		got <- pix.Webhook{Header: r.Header, Body: body, ClientCertChain: chain}
	}))
	hook.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert.TLS()}, ClientAuth: tls.RequestClientCert}
	hook.StartTLS()
	defer hook.Close()
	if err := cl.EnsureWebhook(ctx, acc.Chave, hook.URL+"/webhooks/pix/whk_1"); err != nil {
		t.Fatal(err)
	}

	txid := strings.Repeat("a1", 16)
	cob, err := cl.CreateCharge(ctx, txid, cobReq("123.45", acc.Chave))
	if err != nil {
		t.Fatal(err)
	}
	code, err := brcode.Parse(cob.PixCopiaECola)
	if err != nil || cob.Status != pix.StatusAtiva || cob.Revisao != 0 || cob.Valor.Original != "123.45" || code.Amount != 12345 || cob.Loc == nil || cob.Loc.Txid != txid {
		t.Fatalf("created %+v (BR Code %+v, %v)", cob, code, err)
	}
	// The same PUT again (a retry) changes nothing.
	again, err := cl.CreateCharge(ctx, txid, cobReq("123.45", acc.Chave))
	if err != nil || again.Revisao != 0 || again.PixCopiaECola != cob.PixCopiaECola {
		t.Fatalf("retried PUT: %+v %v", again, err)
	}
	if got, err := cl.GetCharge(ctx, txid); err != nil || got.Status != pix.StatusAtiva || len(got.Pix) != 0 {
		t.Fatalf("get: %+v %v", got, err)
	}

	paid := sim.Pay(acc.ClientID, txid, "")
	var w pix.Webhook
	select {
	case w = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook")
	}
	if err := cl.AuthenticateWebhook(ctx, w); err != nil {
		t.Fatalf("the simulator's own webhook: %v", err)
	}
	if !strings.Contains(string(w.Body), paid.EndToEndID) {
		t.Fatalf("webhook body %s", w.Body)
	}
	cob, err = cl.GetCharge(ctx, txid)
	if err != nil || cob.Status != pix.StatusConcluida || len(cob.Pix) != 1 || cob.Pix[0].EndToEndID != paid.EndToEndID || cob.Pix[0].Valor != "123.45" {
		t.Fatalf("paid charge %+v %v", cob, err)
	}
	p, err := cl.GetPix(ctx, paid.EndToEndID)
	if err != nil || p.Txid != txid || p.Valor != "123.45" {
		t.Fatalf("get pix %+v %v", p, err)
	}
	list, err := cl.ListPix(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil || len(list) != 1 || list[0].EndToEndID != paid.EndToEndID {
		t.Fatalf("list %+v %v", list, err)
	}
	// Removing a paid charge: the API refuses, the client reads it back.
	if cob, err := cl.RemoveCharge(ctx, txid); err != nil || cob.Status != pix.StatusConcluida {
		t.Fatalf("remove a paid charge: %+v %v", cob, err)
	}

	d, err := cl.Refund(ctx, paid.EndToEndID, "R1", pix.DevolucaoSolicitada{Valor: "23.45"})
	if err != nil || d.Status != pix.DevolucaoDevolvido || d.Valor != "23.45" || d.ID != "R1" || !pix.EndToEndID.MatchString(d.RtrID) {
		t.Fatalf("refund %+v %v", d, err)
	}
	if d2, err := cl.Refund(ctx, paid.EndToEndID, "R1", pix.DevolucaoSolicitada{Valor: "23.45"}); err != nil || d2.RtrID != d.RtrID {
		t.Fatalf("repeated refund id: %+v %v", d2, err)
	}
	if g, err := cl.GetRefund(ctx, paid.EndToEndID, "R1"); err != nil || g.RtrID != d.RtrID {
		t.Fatalf("get refund %+v %v", g, err)
	}
	if _, err := cl.Refund(ctx, paid.EndToEndID, "R2", pix.DevolucaoSolicitada{Valor: "100.01"}); !errors.Is(err, pix.ErrDevolucaoInvalida) {
		t.Fatalf("refunds over the Pix: %v", err)
	}

	// An ATIVA charge removed.
	txid2 := strings.Repeat("b2", 16)
	if _, err := cl.CreateCharge(ctx, txid2, cobReq("10.00", acc.Chave)); err != nil {
		t.Fatal(err)
	}
	if cob, err := cl.RemoveCharge(ctx, txid2); err != nil || cob.Status != pix.StatusRemovidaRecebedor {
		t.Fatalf("remove: %+v %v", cob, err)
	}
	if _, err := cl.CreateCharge(ctx, txid2, cobReq("10.00", acc.Chave)); !errors.Is(err, pix.ErrOperacaoInvalida) {
		t.Fatalf("PUT on a removed charge: %v", err)
	}

	// The problem types callers branch on.
	if _, err := cl.GetCharge(ctx, strings.Repeat("c3", 16)); !errors.Is(err, pix.ErrCobNaoEncontrado) {
		t.Fatalf("unknown cob: %v", err)
	}
	if _, err := cl.GetPix(ctx, "E99999999202601010000abcdefghijk"); !errors.Is(err, pix.ErrPixNaoEncontrado) {
		t.Fatalf("unknown pix: %v", err)
	}
	if _, err := cl.GetRefund(ctx, paid.EndToEndID, "R9"); !errors.Is(err, pix.ErrDevolucaoNaoEncontrada) {
		t.Fatalf("unknown devolução: %v", err)
	}
	// A request the spec forbids (the checker would flag it): sent by a
	// client without the checker, to see what the PSP answers.
	unchecked, _ := client(t, sim, acc, func(c *apipix.Config) { c.Wrap = nil })
	_, err = unchecked.CreateCharge(ctx, strings.Repeat("d4", 16), cobReq("1,00", acc.Chave))
	var prob *pix.Problem
	if !errors.As(err, &prob) || prob.Type != "CobOperacaoInvalida" || prob.Status != 400 || len(prob.Violacoes) == 0 || !strings.Contains(prob.Violacoes[0].Propriedade, "valor.original") {
		t.Fatalf("bad valor: %#v", err)
	}
	if d := apipix.Diagnose(err); d.Code != "psp_refused" || d.Config {
		t.Fatalf("diagnosis of a refused charge: %+v", d)
	}
	_, err = cl.CreateCharge(ctx, strings.Repeat("e5", 16), cobReq("1.00", "outra@chave.example"))
	if d := apipix.Diagnose(err); problemType(err) != "CobOperacaoInvalida" || d.Code != "unknown_pix_key" || !d.Config {
		t.Fatalf("a key that is not the account's: %v %+v", err, d)
	}

	// One token served every call of this client.
	if n.get("token") != 1 {
		t.Fatalf("%d token requests, want 1", n.get("token"))
	}
}

// The token is cached until it is about to expire, renewed once when the
// PSP stops taking it (401), and renewed when its lifetime ends.
func TestTokenCacheAndRefresh(t *testing.T) {
	db := testdb.New(t)
	sim := psptest.Start(t, db.Pool)
	acc := sim.Provision("loja-token", nil)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cl, n := client(t, sim, acc, func(c *apipix.Config) { c.Now = clock })
	ctx := context.Background()
	txid := strings.Repeat("f6", 16)
	if _, err := cl.CreateCharge(ctx, txid, cobReq("5.00", acc.Chave)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := cl.GetCharge(ctx, txid); err != nil {
			t.Fatal(err)
		}
	}
	if n.get("token") != 1 {
		t.Fatalf("%d tokens for 4 calls, want 1", n.get("token"))
	}
	// The PSP revokes it: the next call gets 401, takes a new token once
	// and succeeds.
	sim.Control(http.MethodPost, "/sim/v1/accounts/"+acc.ClientID+"/revoke-tokens", nil, nil)
	if _, err := cl.GetCharge(ctx, txid); err != nil {
		t.Fatalf("after revocation: %v", err)
	}
	if n.get("token") != 2 || n.get("cob.get") != 5 {
		t.Fatalf("token %d, cob.get %d; want 2 and 5 (one 401, one retry)", n.get("token"), n.get("cob.get"))
	}
	// Its hour is over (by the client's clock): a new one before calling.
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if _, err := cl.GetCharge(ctx, txid); err != nil {
		t.Fatal(err)
	}
	if n.get("token") != 3 || n.get("cob.get") != 6 {
		t.Fatalf("token %d, cob.get %d; want 3 and 6", n.get("token"), n.get("cob.get"))
	}
}

// Configuration errors say what to fix, and are never retried.
func TestConfigurationErrors(t *testing.T) {
	db := testdb.New(t)
	sim := psptest.Start(t, db.Pool)
	acc := sim.Provision("loja-cfg", nil)
	other := sim.Provision("loja-outra", nil)
	ctx := context.Background()
	try := func(adjust func(*apipix.Config)) apipix.Diagnosis {
		t.Helper()
		cl, _ := client(t, sim, acc, adjust)
		err := cl.TestConnection(ctx, acc.Chave, "https://loja.example/webhooks/pix/whk_1")
		if err == nil {
			t.Fatal("a broken configuration connected")
		}
		return apipix.Diagnose(err)
	}
	if d := try(func(c *apipix.Config) { c.ClientSecret = "errado" }); d.Code != "invalid_client" || !d.Config {
		t.Fatalf("wrong secret: %+v", d)
	}
	otherCert, _ := pki.ParseCredentials([]byte(other.CertificatePEM), []byte(other.PrivateKeyPEM))
	oc := otherCert.TLS()
	if d := try(func(c *apipix.Config) { c.Certificate = &oc }); d.Code != "invalid_client" {
		t.Fatalf("another account's certificate: %+v", d)
	}
	if d := try(func(c *apipix.Config) { c.Certificate = nil }); d.Code != "tls_client_rejected" || !strings.Contains(d.Merchant, "certificado de cliente") {
		t.Fatalf("no client certificate: %+v", d)
	}
	stranger, _ := pki.NewCA("stranger", time.Hour)
	if d := try(func(c *apipix.Config) { c.RootCAs = stranger.Pool() }); d.Code != "tls_server_untrusted" {
		t.Fatalf("untrusted server: %+v", d)
	}
	if d := try(func(c *apipix.Config) {
		c.BaseURL = "https://psp.invalid/api/v2"
		c.TokenURL = "https://psp.invalid/oauth/token"
	}); d.Code != "dns" {
		t.Fatalf("unknown host: %+v", d)
	}
	// An account without webhook.write: the token is refused for it.
	narrow := sim.Provision("loja-escopos", []string{"cob.read", "cob.write"})
	cl, _ := client(t, sim, narrow)
	if d := apipix.Diagnose(cl.TestConnection(ctx, narrow.Chave, "https://loja.example/webhooks/pix/whk_1")); d.Code != "missing_scope" {
		t.Fatalf("missing scope: %+v", d)
	}
	// With the scopes it has, the PSP itself refuses the webhook write.
	cl, _ = client(t, sim, narrow, func(c *apipix.Config) { c.Scopes = []string{"cob.read", "cob.write"} })
	if d := apipix.Diagnose(cl.TestConnection(ctx, narrow.Chave, "https://loja.example/webhooks/pix/whk_1")); d.Code != "access_denied" || !strings.Contains(d.Merchant, "webhook.write") {
		t.Fatalf("403: %+v", d)
	}
	// A key that is not the account's.
	cl, _ = client(t, sim, acc)
	if d := apipix.Diagnose(cl.TestConnection(ctx, "chave@desconhecida.example", "https://loja.example/webhooks/pix/whk_1")); d.Code != "unknown_pix_key" {
		t.Fatalf("unknown key: %+v", d)
	}
	if err := cl.TestConnection(ctx, acc.Chave, "https://loja.example/webhooks/pix/whk_1"); err != nil {
		t.Fatalf("the right settings: %v", err)
	}
}

// A PUT whose answer is lost after the PSP created the charge is settled
// by reading it: one charge, never a second one or a guess.
func TestLostAnswerIsResolvedByReading(t *testing.T) {
	db := testdb.New(t)
	sim := psptest.Start(t, db.Pool)
	acc := sim.Provision("loja-perdida", nil)
	cl, n := client(t, sim, acc)
	ctx := context.Background()
	if err := cl.EnsureWebhook(ctx, acc.Chave, "https://loja.example/webhooks/pix/whk_1"); err != nil {
		t.Fatal(err)
	}
	sim.SetFaults("reset_after_write=1")
	txid := strings.Repeat("a7", 16)
	cob, err := cl.CreateCharge(ctx, txid, cobReq("42.00", acc.Chave))
	if err != nil || cob.Status != pix.StatusAtiva || cob.Valor.Original != "42.00" {
		t.Fatalf("create with a lost answer: %+v %v", cob, err)
	}
	if n.get("cob.put") != 1 || n.get("cob.get") != 1 {
		t.Fatalf("cob.put %d, cob.get %d: want one PUT and one read back", n.get("cob.put"), n.get("cob.get"))
	}
	sim.SetFaults("")
	paid := sim.Pay(acc.ClientID, txid, "")
	sim.SetFaults("reset_after_write=1")
	d, err := cl.Refund(ctx, paid.EndToEndID, "Rperdida", pix.DevolucaoSolicitada{Valor: "2.00"})
	if err != nil || d.Status != pix.DevolucaoDevolvido {
		t.Fatalf("refund with a lost answer: %+v %v", d, err)
	}
	sim.SetFaults("")
	l := sim.Ledger(acc.ClientID)
	if len(l.Charges) != 1 || l.Charges[0].Revisao != 1 || len(l.Refunds) != 1 {
		t.Fatalf("the PSP holds %d charges (revisão %d) and %d refunds; want 1 (paid once), 1", len(l.Charges), l.Charges[0].Revisao, len(l.Refunds))
	}
	if got := sim.Injected()["reset_after_write"]; got != 2 {
		t.Fatalf("%d resets injected, want 2", got)
	}

	// A PSP that answers 503 to everything: the client retries twice,
	// then says the PSP is unavailable (not a configuration error).
	sim.SetFaults("error5xx=1")
	_, err = cl.CreateCharge(ctx, strings.Repeat("b8", 16), cobReq("1.00", acc.Chave))
	if d := apipix.Diagnose(err); !errors.Is(err, pix.ErrServicoIndisponivel) || d.Code != "psp_unavailable" || d.Config {
		t.Fatalf("503s: %v %+v", err, d)
	}
	sim.SetFaults("")
	if l := sim.Ledger(acc.ClientID); len(l.Charges) != 1 {
		t.Fatalf("a refused PUT made a charge: %d", len(l.Charges))
	}
}

// Webhooks are authenticated by the PSP's client certificate only.
func TestWebhookAuthentication(t *testing.T) {
	db := testdb.New(t)
	sim := psptest.Start(t, db.Pool)
	acc := sim.Provision("loja-webhook", nil)
	cl, _ := client(t, sim, acc)
	ctx := context.Background()
	body := []byte(`{"pix":[{"endToEndId":"E99999999202601010000abcdefghijk","txid":"` + strings.Repeat("a", 32) + `","valor":"1.00","horario":"2026-01-01T00:00:00Z"}]}`)
	if err := cl.AuthenticateWebhook(ctx, pix.Webhook{Body: body}); !errors.Is(err, pix.ErrUnauthenticated) {
		t.Fatalf("without a certificate: %v", err)
	}
	// A certificate from another CA, with the right name.
	forger, _ := pki.NewCA("forger", time.Hour)
	fake, _ := forger.IssueClient(pspsim.WebhookCertCN, time.Hour)
	if err := cl.AuthenticateWebhook(ctx, pix.Webhook{Body: body, ClientCertChain: [][]byte{fake.Cert.Raw}}); !errors.Is(err, pix.ErrUnauthenticated) {
		t.Fatalf("a forged certificate: %v", err)
	}
	// The PSP's CA, but a merchant's client certificate, not its webhook's.
	own, _ := pki.ParseCredentials([]byte(acc.CertificatePEM), []byte(acc.PrivateKeyPEM))
	if err := cl.AuthenticateWebhook(ctx, pix.Webhook{Body: body, ClientCertChain: own.Chain}); !errors.Is(err, pix.ErrUnauthenticated) {
		t.Fatalf("a merchant certificate: %v", err)
	}
}

// TestConnectionsDoNotGrowWithCalls: the client keeps its connections to
// the PSP (each one a TLS handshake with the client certificate): one for
// any number of calls made one after another, the token's included; and
// 8 at once, once the first 16 charges have opened what they needed, 80
// more open at most 16, not one per call.
func TestConnectionsDoNotGrowWithCalls(t *testing.T) {
	db := testdb.New(t)
	sim := psptest.Start(t, db.Pool)
	acc := sim.Provision("loja-conns", nil)
	var dials atomic.Int64
	cl, n := client(t, sim, acc, func(c *apipix.Config) {
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		}
	})
	ctx := context.Background()
	var txids atomic.Int64
	calls := func(workers, each int) {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					txid := fmt.Sprintf("conns%027d", txids.Add(1))
					if _, err := cl.CreateCharge(ctx, txid, cobReq("5.00", acc.Chave)); err != nil {
						t.Error(err)
					}
					if _, err := cl.GetCharge(ctx, txid); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	calls(1, 2)
	calls(1, 10)
	if d := dials.Load(); d != 1 {
		t.Fatalf("12 charges one at a time: %d connections, want 1", d)
	}
	const workers = 8
	calls(workers, 2)
	before := dials.Load()
	calls(workers, 10)
	if d := dials.Load() - before; d > 2*workers {
		t.Errorf("80 charges 8 at once dialed %d connections (%d before), want at most %d", d, before, 2*workers)
	}
	if n.get("token") != 1 || n.get("cob.put") != 2+10+workers*12 {
		t.Errorf("token %d, cob.put %d", n.get("token"), n.get("cob.put"))
	}
}
