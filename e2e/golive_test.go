package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/sim/pspsim"
)

// bank plays the merchant's bank with the PSP simulator's control API:
// it opens accounts as a developer portal hands them out, and a payer
// pays charges there.
type bank struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newBank(t *testing.T, s *shopper) *bank {
	t.Helper()
	if s.r.PSPSim == nil {
		t.Fatal("the platform hosts no PSP simulator")
	}
	pool, err := pki.ParseCertPool(s.r.DevCAPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &bank{t: t, base: s.r.PSPSim.ControlURL(), hc: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

func (b *bank) do(method, path string, in, out any) int {
	b.t.Helper()
	body, _ := json.Marshal(in)
	req, _ := http.NewRequest(method, b.base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+internalToken) // the simulator's token defaults to the internal one
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func (b *bank) ledger(clientID string) pspsim.Ledger {
	b.t.Helper()
	var l pspsim.Ledger
	if st := b.do(http.MethodGet, "/sim/v1/accounts/"+clientID+"/ledger", nil, &l); st != http.StatusOK {
		b.t.Fatalf("ledger: %d", st)
	}
	return l
}

// A production merchant connected to the simulator exactly as to a real
// bank (its own account, client certificate, OAuth2 client and Stripe-
// compatible key, set by the operator): with a wrong secret or key the
// agent gets a precise recoverable payment_failed, the merchant an alert
// and TestHandler's diagnosis, and nothing is charged; with the right ones
// the same agent buys by Pix (paid at the bank, notified over mTLS) and by
// card, over MCP, end to end.
func TestProductionMerchantOnABank(t *testing.T) {
	const host = "producao.localhost"
	s := newShopper(t, 0, host)
	b := newBank(t, s)
	ctx := context.Background()
	ops := s.r.ClientsWithToken(operatorToken)
	m := s.merchant[host]
	tctx := tenancy.With(ctx, m.tenantID)

	var acc pspsim.Credentials
	if st := b.do(http.MethodPost, "/sim/v1/accounts", pspsim.AccountRequest{Reference: "loja-producao", Nome: "Loja Produção", Cidade: "Recife"}, &acc); st != http.StatusCreated {
		t.Fatalf("open the bank account: %d", st)
	}
	settings := handlersecrets.PixPSP{
		BaseURL: acc.APIURL, TokenURL: acc.TokenURL, ClientID: acc.ClientID, ClientSecret: acc.ClientSecret,
		CertificatePEM: acc.CertificatePEM, PrivateKeyPEM: acc.PrivateKeyPEM, CAPEM: string(s.r.DevCAPEM),
		Webhook: handlersecrets.Webhook{CAPEM: acc.CAPEM, Subjects: []string{acc.WebhookSubject}},
	}
	stripe := handlersecrets.Stripe{SecretKey: acc.StripeSecretKey, APIURL: acc.StripeAPIURL, CAPEM: string(s.r.DevCAPEM)}
	setHandlers := func(psp handlersecrets.PixPSP, card handlersecrets.Stripe) {
		t.Helper()
		pixSecrets, _ := json.Marshal(handlersecrets.Secrets{PSP: &psp})
		cardSecrets, _ := json.Marshal(handlersecrets.Secrets{Stripe: &card})
		for _, req := range []*tenantsv1.SetPaymentHandlerRequest{
			{Tenant: m.tenantID.String(), SecretsJson: string(pixSecrets), Handler: &tenantsv1.PaymentHandler{Id: m.pixHandler, Name: "br.dev.bcp.pix",
				Environment: "production", AvailableInstrumentsJson: `[{"type":"pix"}]`, ConfigJson: `{"pix_key":"` + acc.Chave + `"}`}},
			{Tenant: m.tenantID.String(), SecretsJson: string(cardSecrets), Handler: &tenantsv1.PaymentHandler{Id: "card", Name: "com.example.vendor.delegate_payment",
				Position: 1, Environment: "production", AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`}},
		} {
			if _, err := ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(req)); err != nil {
				t.Fatal(err)
			}
		}
	}
	test := func(handlerID string) *paymentsv1.TestHandlerResponse {
		t.Helper()
		r, err := ops.Payments.TestHandler(tctx, connect.NewRequest(&paymentsv1.TestHandlerRequest{HandlerId: handlerID}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg
	}

	// A wrong client secret and a wrong Stripe key.
	wrongPSP, wrongCard := settings, stripe
	wrongPSP.ClientSecret = "nao-e-este"
	wrongCard.SecretKey = "sk_test_" + strings.Repeat("x", 48)
	setHandlers(wrongPSP, wrongCard)
	eventually(t, 10*time.Second, "the payments service sees the new settings", func() bool { return test(m.pixHandler).GetCode() == "invalid_client" })
	if r := test("card"); r.GetOk() || r.GetCode() != "invalid_key" {
		t.Fatalf("card connection test with a wrong key: %+v", r)
	}
	c := s.ready(host)
	got := s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host))
	if got.Status != bcp.StatusReadyForComplete || !strings.Contains(messageOf(got, bcp.CodePaymentFailed), "problema de configuração") {
		t.Fatalf("Pix with a wrong secret: %s %+v", got.Status, got.Messages)
	}
	got = s.complete(host, c.ID, uuid.NewString(), cardInstrument("tok_producao_4242"))
	if got.Status != bcp.StatusReadyForComplete || !strings.Contains(messageOf(got, bcp.CodePaymentFailed), "problema de configuração") {
		t.Fatalf("card with a wrong key: %s %+v", got.Status, got.Messages)
	}
	alerts, err := ops.Payments.ListAlerts(tctx, connect.NewRequest(&paymentsv1.ListAlertsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, a := range alerts.Msg.GetAlerts() {
		kinds[a.GetKind()] = a.GetMessage()
	}
	if !strings.Contains(kinds["psp_config"], "recusou client_id/client_secret") || !strings.Contains(kinds["processor_config"], "recusou a chave secreta") {
		t.Fatalf("merchant alerts %v", kinds)
	}
	if l := b.ledger(acc.ClientID); len(l.Charges) != 0 || len(l.Pix) != 0 {
		t.Fatalf("the bank holds %d charges and %d Pix after refused credentials", len(l.Charges), len(l.Pix))
	}
	if n := s.sql(`SELECT count(*) FROM pspsim.card_intents i JOIN pspsim.accounts a ON a.tenant_id = i.tenant_id WHERE a.client_id = $1`, acc.ClientID); n != 0 {
		t.Fatalf("%d card intents after a refused key", n)
	}

	// The right settings: the connection test passes, and both ways pay.
	setHandlers(settings, stripe)
	eventually(t, 10*time.Second, "the payments service sees the fixed settings", func() bool { return test(m.pixHandler).GetOk() })
	if r := test("card"); !r.GetOk() {
		t.Fatalf("card connection test: %+v", r)
	}
	got = s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host))
	if got.Status != bcp.StatusCompleteInProgress {
		t.Fatalf("Pix: %s %+v", got.Status, got.Messages)
	}
	d := pixOf(t, got)
	l := b.ledger(acc.ClientID)
	if len(l.Charges) != 1 || l.Charges[0].Txid != d.Pix.Txid || l.Charges[0].Status != "ATIVA" || l.Charges[0].Chave != acc.Chave {
		t.Fatalf("the bank's charges: %+v", l.Charges)
	}
	// The payer pays at the bank; the bank notifies over mTLS; the
	// platform confirms the Pix with the bank and completes.
	if st := b.do(http.MethodPost, "/sim/v1/accounts/"+acc.ClientID+"/cob/"+d.Pix.Txid+"/pay", pspsim.PayRequest{}, nil); st != http.StatusCreated {
		t.Fatalf("pay: %d", st)
	}
	done := s.waitStatus(host, c.ID, bcp.StatusCompleted)
	if done.Order == nil {
		t.Fatal("completed without an order")
	}
	l = b.ledger(acc.ClientID)
	if len(l.Deliveries) != 1 || l.Deliveries[0].Status != "delivered" || l.Charges[0].Status != "CONCLUIDA" {
		t.Fatalf("the bank's deliveries %+v, charge %s", l.Deliveries, l.Charges[0].Status)
	}
	// A card purchase on the same production handler set.
	c2 := s.ready(host)
	got = s.complete(host, c2.ID, uuid.NewString(), cardInstrument("tok_producao_4242"))
	if got.Status != bcp.StatusCompleted || got.Order == nil {
		t.Fatalf("card: %s %+v", got.Status, got.Messages)
	}
	if n := s.sql(`SELECT count(*) FROM pspsim.card_intents i JOIN pspsim.accounts a ON a.tenant_id = i.tenant_id
		WHERE a.client_id = $1 AND i.status = 'succeeded' AND i.amount = $2`, acc.ClientID, totalOf(c2.Totals, bcp.TotalTotal)); n != 1 {
		t.Fatalf("%d succeeded card intents of the checkout's total, want 1", n)
	}
}

func messageOf(c *bcp.Checkout, code string) string {
	for _, m := range c.Messages {
		if m.Code == code {
			return m.Content
		}
	}
	return ""
}
