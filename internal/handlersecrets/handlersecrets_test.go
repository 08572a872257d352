package handlersecrets_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/pki"
)

func fields(v apperr.Violations) []string {
	var out []string
	for _, e := range v {
		out = append(out, e.Field+"="+e.Code)
	}
	return out
}

func TestCheckPixPSP(t *testing.T) {
	ca, _ := pki.NewCA("PSP CA", 365*24*time.Hour)
	cert, _ := ca.IssueClient("loja-1", 30*24*time.Hour)
	other, _ := ca.IssueClient("loja-2", time.Hour)
	ok := handlersecrets.PixPSP{
		BaseURL: "https://pix.banco.example/api/v2", TokenURL: "https://pix.banco.example/oauth/token",
		ClientID: "cli", ClientSecret: "s3cr3t", CertificatePEM: string(cert.CertPEM), PrivateKeyPEM: string(cert.KeyPEM),
		Webhook: handlersecrets.Webhook{CAPEM: string(ca.CertPEM)},
	}
	sum, v := handlersecrets.Check(handlersecrets.Secrets{PSP: &ok}, time.Now())
	if len(v) != 0 {
		t.Fatalf("valid settings refused: %v", fields(v))
	}
	if sum.Kind != "pix_psp" || sum.ClientID != "cli" || sum.CertSubject != "CN=loja-1" || sum.WebhookScheme != "mtls" ||
		!sum.CertExpires.Equal(cert.Cert.NotAfter.UTC()) || len(sum.CertSHA256) != 64 {
		t.Fatalf("summary %+v", sum)
	}
	b, _ := json.Marshal(sum)
	if strings.Contains(string(b), "s3cr3t") || strings.Contains(string(b), "PRIVATE KEY") {
		t.Fatalf("the summary leaks a secret: %s", b)
	}

	bad := ok
	bad.BaseURL, bad.ClientSecret, bad.PrivateKeyPEM = "http://pix.banco.example", "", string(other.KeyPEM)
	bad.Webhook.CAPEM = ""
	_, v = handlersecrets.Check(handlersecrets.Secrets{PSP: &bad}, time.Now())
	want := []string{"secrets_json.psp.base_url=invalid_url", "secrets_json.psp.client_secret=required",
		"secrets_json.psp.private_key_pem=invalid_certificate", "secrets_json.psp.webhook.ca_pem=invalid_ca"}
	if got := fields(v); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("violations %v, want %v", got, want)
	}

	// An expired certificate is named, with its date.
	_, v = handlersecrets.Check(handlersecrets.Secrets{PSP: &ok}, time.Now().Add(60*24*time.Hour))
	if len(v) != 1 || v[0].Field != "secrets_json.psp.certificate_pem" || !strings.Contains(v[0].Error(), "expired on") {
		t.Fatalf("expired: %v", fields(v))
	}

	// PKCS#12 as PSPs issue it, and its wrong password.
	creds, _ := pki.ParseCredentials(cert.CertPEM, cert.KeyPEM)
	p12, _ := pki.EncodePKCS12(creds, "senha")
	pk := ok
	pk.CertificatePEM, pk.PrivateKeyPEM, pk.PKCS12Base64, pk.PKCS12Password = "", "", base64.StdEncoding.EncodeToString(p12), "senha"
	if sum, v := handlersecrets.Check(handlersecrets.Secrets{PSP: &pk}, time.Now()); len(v) != 0 || sum.CertSubject != "CN=loja-1" {
		t.Fatalf("PKCS#12: %v %+v", fields(v), sum)
	}
	pk.PKCS12Password = "errada"
	if _, v := handlersecrets.Check(handlersecrets.Secrets{PSP: &pk}, time.Now()); len(v) != 1 || v[0].Field != "secrets_json.psp.pkcs12_base64" {
		t.Fatalf("wrong PKCS#12 password: %v", fields(v))
	}
}

func TestCheckStripeAndParse(t *testing.T) {
	sum, v := handlersecrets.Check(handlersecrets.Secrets{Stripe: &handlersecrets.Stripe{SecretKey: "sk_live_51Habc123XYZ9"}}, time.Now())
	if len(v) != 0 || sum.KeyHint != "sk_live_…XYZ9" || sum.Kind != "stripe" {
		t.Fatalf("%v %+v", fields(v), sum)
	}
	if _, v := handlersecrets.Check(handlersecrets.Secrets{Stripe: &handlersecrets.Stripe{SecretKey: "pk_live_x"}}, time.Now()); len(v) != 1 || v[0].Field != "secrets_json.stripe.secret_key" {
		t.Fatalf("publishable key accepted: %v", fields(v))
	}
	if _, err := handlersecrets.Parse([]byte(`{"psp":{"client_secert":"x"}}`)); err == nil || !strings.Contains(err.Error(), "client_secert") {
		t.Fatalf("a misspelt member was accepted: %v", err)
	}
	if s, err := handlersecrets.Parse(nil); err != nil || s.PSP != nil || s.Stripe != nil {
		t.Fatalf("empty: %v", err)
	}
}
