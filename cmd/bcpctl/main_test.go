package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/services/edge"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestOperatorCommandsAndErrors(t *testing.T) {
	d := testdb.New(t)
	r, err := platform.Start(context.Background(), platform.Config{
		Services: platform.AllServices, DatabaseURL: d.AppURL, PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0",
		InternalToken: "int", OperatorToken: "op", MasterKey: bytes.Repeat([]byte{3}, 32), Edge: edge.Config{PublicScheme: "http"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"--server", "http://" + r.InternalAddr, "--token", "op"}, args...), &out)
		return out.String(), err
	}
	mustOK := func(args ...string) string {
		t.Helper()
		out, err := ctl(args...)
		if err != nil {
			t.Fatalf("bcpctl %v: %v", args, err)
		}
		return out
	}
	wantErr := func(code int, contains string, args ...string) {
		t.Helper()
		_, err := ctl(args...)
		if err == nil {
			t.Fatalf("bcpctl %v succeeded, want an error", args)
		}
		if exitCode(err) != code || !strings.Contains(errorMessage(err), contains) {
			t.Fatalf("bcpctl %v: exit %d, %q; want exit %d containing %q", args, exitCode(err), errorMessage(err), code, contains)
		}
	}

	out := mustOK("tenant", "create", "--name", "Loja São João", "--domain", "Sao-Joao.localhost", "--domain", "www.sao-joao.localhost")
	if !strings.Contains(out, "(loja-sao-joao)") || !strings.Contains(out, "sao-joao.localhost, www.sao-joao.localhost (primary sao-joao.localhost)") {
		t.Fatalf("create output:\n%s", out)
	}
	wantErr(2, "duplicate_domain", "tenant", "create", "--name", "Outra", "--domain", "www.sao-joao.localhost")
	wantErr(2, "invalid_domain", "tenant", "create", "--name", "Outra", "--domain", "not a domain")
	wantErr(2, "invalid_domain", "tenant", "create", "--name", "Outra", "--domain", "127.0.0.1")
	wantErr(2, "needs --name", "tenant", "create", "--domain", "x.localhost")
	wantErr(2, "tenant_not_found", "tenant", "suspend", "nope")
	wantErr(2, "tenant_not_found", "domain", "add", "nope.localhost", "x.localhost")
	wantErr(2, "unknown command", "tenant", "explode")
	wantErr(2, "duplicate_domain", "domain", "add", "loja-sao-joao", "sao-joao.localhost")

	if out := mustOK("tenant", "suspend", "sao-joao.localhost"); !strings.Contains(out, "suspended") {
		t.Fatalf("suspend output: %s", out)
	}
	mustOK("tenant", "resume", "loja-sao-joao")
	mustOK("domain", "add", "loja-sao-joao", "loja.example.com.br", "--primary")
	out = mustOK("tenant", "get", "loja.example.com.br")
	if !strings.Contains(out, "(primary loja.example.com.br)") {
		t.Fatalf("primary domain not switched:\n%s", out)
	}
	mustOK("domain", "remove", "loja-sao-joao", "www.sao-joao.localhost")
	wantErr(2, "domain_not_found", "domain", "remove", "loja-sao-joao", "www.sao-joao.localhost")

	out = mustOK("apikey", "create", "loja-sao-joao", "--agent-profile", "https://agent.example/profile.json", "--label", "agente")
	secret := out[strings.Index(out, "bcp_sk_"):]
	secret = strings.TrimSpace(secret)
	if len(secret) < 40 {
		t.Fatalf("apikey create output: %s", out)
	}
	list := mustOK("apikey", "list", "loja-sao-joao")
	if strings.Contains(list, secret) || !strings.Contains(list, secret[:13]) || !strings.Contains(list, "https://agent.example/profile.json") {
		t.Fatalf("apikey list must show the prefix and never the secret:\n%s", list)
	}
	wantErr(2, "invalid_profile_url", "apikey", "create", "loja-sao-joao", "--agent-profile", "http://agent.example/profile.json")
	keyID := strings.Fields(out)[2]
	mustOK("apikey", "revoke", "loja-sao-joao", keyID)
	if list := mustOK("apikey", "list", "loja-sao-joao"); !strings.Contains(list, "revoked") {
		t.Fatalf("revoked key not shown as revoked:\n%s", list)
	}

	// A Pix handler on the merchant's PSP: the settings come from files
	// (the client secret never on the command line), are checked, sealed,
	// and only their summary is printed.
	psp := pspFiles(t)
	out = mustOK("handler", "set", "loja-sao-joao", "--id", "pix_1", "--name", "br.dev.bcp.pix",
		"--psp-base-url", "https://pix.banco.example/api/v2", "--psp-token-url", "https://pix.banco.example/oauth/token",
		"--psp-client-id", "abc", "--psp-client-secret-file", psp.secret, "--psp-cert", psp.cert, "--psp-key", psp.key, "--psp-webhook-ca", psp.ca)
	if !strings.Contains(out, `[{"type":"pix"}]`) || !strings.Contains(out, "secrets stored: true") ||
		!strings.Contains(out, "connection: API Pix https://pix.banco.example/api/v2, client abc, certificate CN=loja-sao-joao") ||
		!strings.Contains(out, "webhooks mtls") || strings.Contains(out, "xyz-client-secret") || strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("handler set output: %s", out)
	}
	wantErr(2, "client_id is required", "handler", "set", "loja-sao-joao", "--id", "pix_2", "--name", "br.dev.bcp.pix",
		"--secrets", `{"psp":{"base_url":"https://pix.banco.example/api/v2","token_url":"https://pix.banco.example/oauth/token","client_secret":"xyz-client-secret"}}`)
	wantErr(2, "invalid_secrets", "handler", "set", "loja-sao-joao", "--id", "pix_2", "--name", "br.dev.bcp.pix", "--secrets", `{"client_id":"abc","client_secret":"xyz"}`)
	wantErr(2, "invalid_handler_name", "handler", "set", "loja-sao-joao", "--id", "h", "--name", "Not A Name")
	wantErr(2, "invalid_instruments", "handler", "set", "loja-sao-joao", "--id", "h", "--name", "com.example.pay", "--instruments", `{"type":"card"}`)
	mustOK("handler", "remove", "loja-sao-joao", "pix_1")
	wantErr(2, "handler_not_found", "handler", "remove", "loja-sao-joao", "pix_1")

	// Admin-web users: a one-time link to choose the password is printed
	// (TestOnboardingCommands follows it); list shows role and e-mail.
	out = mustOK("user", "invite", "loja-sao-joao", "Dona@Loja.com.br")
	pw := strings.TrimSpace(out[strings.LastIndex(out, "token=")+6:])
	if !strings.Contains(out, "user dona@loja.com.br (admin) invited") || !strings.Contains(out, "https://loja.example.com.br/admin/senha?token=") || len(pw) != 43 {
		t.Fatalf("user invite output: %s", out)
	}
	if out := mustOK("user", "invite", "loja.example.com.br", "caixa@loja.com.br", "--role", "staff"); !strings.Contains(out, "(staff)") {
		t.Fatalf("staff invite output: %s", out)
	}
	wantErr(2, "--role must be admin or staff", "user", "invite", "loja-sao-joao", "x@loja.com.br", "--role", "owner")
	wantErr(2, "tenant_not_found", "user", "list", "nope")
	users := mustOK("user", "list", "loja-sao-joao")
	if lines := strings.Split(strings.TrimSpace(users), "\n"); len(lines) != 3 || !regexp.MustCompile(`dona@loja\.com\.br\s+admin\s+never\s+pending until 20\S+Z\s`).MatchString(users) ||
		!regexp.MustCompile(`caixa@loja\.com\.br\s+staff\s+never\s+pending until 20\S+Z\s`).MatchString(users) || strings.Contains(users, pw) {
		t.Fatalf("user list:\n%s", users)
	}

	list = mustOK("tenant", "list")
	if !strings.Contains(list, "loja-sao-joao") || !strings.Contains(list, "active") {
		t.Fatalf("tenant list:\n%s", list)
	}
	if e := func() error {
		var out bytes.Buffer
		return run(context.Background(), []string{"--server", "http://" + r.InternalAddr, "--token", "wrong", "tenant", "list"}, &out)
	}(); e == nil || exitCode(e) != 1 {
		t.Fatalf("wrong token: %v", e)
	}
}

// pspFiles writes what a bank's developer portal hands a merchant: the
// client secret, an mTLS client certificate and key, and the CA of the
// PSP's webhook client certificates.
func pspFiles(t *testing.T) (f struct{ secret, cert, key, ca string }) {
	t.Helper()
	ca, err := pki.NewCA("Banco Exemplo CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient("loja-sao-joao", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, w := range []struct {
		dst  *string
		name string
		data []byte
	}{{&f.secret, "secret", []byte("xyz-client-secret\n")}, {&f.cert, "cert.pem", client.CertPEM}, {&f.key, "key.pem", client.KeyPEM}, {&f.ca, "ca.pem", ca.CertPEM}} {
		*w.dst = filepath.Join(dir, w.name)
		if err := os.WriteFile(*w.dst, w.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}
