package tenants_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/pki"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// A Pix handler's PSP settings are checked when set (certificate and key
// belong together, webhook CA present), sealed at rest, summarised in
// clear without a secret, and opened for the internal token only.
func TestPaymentHandlerSecrets(t *testing.T) {
	internal, operator, superURL, _ := rateEnv(t)
	ctx := context.Background()
	r, err := operator.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja PSP", Domains: []string{"psp.localhost"}}))
	if err != nil {
		t.Fatal(err)
	}
	tid := r.Msg.GetTenant().GetId()
	ca, _ := pki.NewCA("Banco CA", 365*24*time.Hour)
	cert, _ := ca.IssueClient("loja-psp", 90*24*time.Hour)
	other, _ := ca.IssueClient("outra", time.Hour)
	psp := handlersecrets.PixPSP{BaseURL: "https://pix.banco.example/api/v2", TokenURL: "https://pix.banco.example/oauth/token",
		ClientID: "cli-123", ClientSecret: "segredo-que-nao-aparece", CertificatePEM: string(cert.CertPEM), PrivateKeyPEM: string(other.KeyPEM),
		Webhook: handlersecrets.Webhook{CAPEM: string(ca.CertPEM)}}
	set := func(p handlersecrets.PixPSP, validate bool) (*tenantsv1.SetPaymentHandlerResponse, error) {
		raw, _ := json.Marshal(handlersecrets.Secrets{PSP: &p})
		resp, err := operator.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid, ValidateOnly: validate,
			SecretsJson: string(raw), Handler: &tenantsv1.PaymentHandler{Id: "pix_banco", Name: "br.dev.bcp.pix", Environment: "production",
				AvailableInstrumentsJson: `[{"type":"pix"}]`, ConfigJson: `{"pix_key":"loja@example.com"}`}}))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	// The key of another certificate is named on its field.
	v, err := set(psp, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := violationFields(t, v.GetViolations()); !slices.Equal(got, []string{"secrets_json.psp.private_key_pem invalid_certificate"}) {
		t.Fatalf("violations %q", got)
	}
	_, err = set(psp, false)
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_certificate")

	psp.PrivateKeyPEM = string(cert.KeyPEM)
	h, err := set(psp, false)
	if err != nil {
		t.Fatal(err)
	}
	var sum handlersecrets.Summary
	if err := json.Unmarshal([]byte(h.GetHandler().GetConnectionJson()), &sum); err != nil || !h.GetHandler().GetHasSecrets() {
		t.Fatalf("connection %q: %v", h.GetHandler().GetConnectionJson(), err)
	}
	if sum.ClientID != "cli-123" || sum.CertSubject != "CN=loja-psp" || !sum.CertExpires.Equal(cert.Cert.NotAfter.UTC()) || sum.BaseURL != psp.BaseURL {
		t.Fatalf("summary %+v", sum)
	}
	if strings.Contains(h.GetHandler().GetConnectionJson(), "segredo") {
		t.Fatal("the summary shows the client secret")
	}

	// Sealed at rest: the secret is not in the row.
	conn, err := pgx.Connect(ctx, superURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var sealed []byte
	if err := conn.QueryRow(ctx, `SELECT sealed_secrets FROM tenants.payment_handlers WHERE id = 'pix_banco'`).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if len(sealed) == 0 || strings.Contains(string(sealed), "segredo") || strings.Contains(string(sealed), "PRIVATE KEY") {
		t.Fatalf("secrets are not sealed at rest (%d bytes)", len(sealed))
	}

	// The operator token cannot read them; the internal token can.
	_, err = operator.GetPaymentHandlerSecrets(ctx, connect.NewRequest(&tenantsv1.GetPaymentHandlerSecretsRequest{TenantId: tid}))
	wantCode(t, err, apperr.KindPermissionDenied, "internal_only")
	got, err := internal.GetPaymentHandlerSecrets(ctx, connect.NewRequest(&tenantsv1.GetPaymentHandlerSecretsRequest{TenantId: tid}))
	if err != nil {
		t.Fatal(err)
	}
	opened, err := handlersecrets.Parse([]byte(got.Msg.GetSecretsJson()["pix_banco"]))
	if err != nil || opened.PSP == nil || opened.PSP.ClientSecret != "segredo-que-nao-aparece" || len(got.Msg.GetSecretsJson()) != 1 {
		t.Fatalf("opened %+v: %v", got.Msg.GetSecretsJson(), err)
	}

	// A set without secrets keeps them and their summary.
	if _, err := operator.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid,
		Handler: &tenantsv1.PaymentHandler{Id: "pix_banco", Name: "br.dev.bcp.pix", Environment: "production", AvailableInstrumentsJson: `[{"type":"pix"}]`}})); err != nil {
		t.Fatal(err)
	}
	d, err := internal.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tid}))
	if err != nil || len(d.Msg.GetPaymentHandlers()) != 1 || !d.Msg.GetPaymentHandlers()[0].GetHasSecrets() ||
		!strings.Contains(d.Msg.GetPaymentHandlers()[0].GetConnectionJson(), `"client_id":"cli-123"`) {
		t.Fatalf("after a set without secrets: %v %v", d.Msg.GetPaymentHandlers(), err)
	}
	// Stripe settings on a Pix handler are refused.
	_, err = operator.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid, SecretsJson: `{"stripe":{"secret_key":"sk_test_123456"}}`,
		Handler: &tenantsv1.PaymentHandler{Id: "pix_banco", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}}))
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_secrets")
}
