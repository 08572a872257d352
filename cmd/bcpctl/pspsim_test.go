package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
)

// bcpctl pspsim plays the bank of a PSP simulator bcpd hosts (its dev PKI
// in the data directory, as bcpd dev keeps it): an account's credentials
// written as a bank hands them out, which the production API Pix client
// uses as they are; a payer paying a charge made with them; the fault
// knobs set, read and switched off; and the simulator's refusals passed on.
func TestPSPSimCommands(t *testing.T) {
	d := testdb.New(t)
	dataDir := t.TempDir()
	const token = "bank-control-token"
	r, err := platform.Start(context.Background(), platform.Config{
		Services: []string{platform.PSPSim}, DatabaseURL: d.AppURL, InternalAddr: "127.0.0.1:0", InternalToken: "int",
		PSPSimToken: token, DevPKIDir: filepath.Join(dataDir, "pki"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	sim := func(args ...string) (string, error) {
		var out bytes.Buffer
		args = append(append([]string{"--data-dir", dataDir, "pspsim"}, args...), "--pspsim-url", r.PSPSim.ControlURL(), "--pspsim-token", token)
		err := run(context.Background(), args, &out)
		return out.String(), err
	}
	mustOK := func(args ...string) string {
		t.Helper()
		out, err := sim(args...)
		if err != nil {
			t.Fatalf("bcpctl pspsim %v: %v\n%s", args, err, out)
		}
		return out
	}

	// An account: its credentials in files, the secrets readable by the
	// owner only and never printed.
	creds := filepath.Join(t.TempDir(), "banco")
	out := mustOK("account", "loja-pspsim", "--out", creds, "--name", "Loja Pspsim", "--city", "Recife")
	read := func(name string, mode os.FileMode) string {
		t.Helper()
		fi, err := os.Stat(filepath.Join(creds, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
		b, err := os.ReadFile(filepath.Join(creds, name))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %q %v", name, b, err)
		}
		return string(b)
	}
	secret, stripeKey := strings.TrimSpace(read("client-secret", 0o600)), strings.TrimSpace(read("stripe-key", 0o600))
	certPEM, keyPEM, webhookCA := read("client-cert.pem", 0o644), read("client-key.pem", 0o600), read("webhook-ca.pem", 0o644)
	read("client.p12", 0o600)
	devCA, err := os.ReadFile(filepath.Join(dataDir, "pki", "dev-ca", "ca.pem"))
	if err != nil || read("server-ca.pem", 0o644) != string(devCA) {
		t.Errorf("server-ca.pem is not the dev CA the simulator's certificate chains to (%v)", err)
	}
	if !strings.HasPrefix(stripeKey, "sk_test_") {
		t.Errorf("stripe-key %q", stripeKey)
	}
	for _, s := range []string{secret, stripeKey, keyPEM} {
		if strings.Contains(out, s) {
			t.Fatalf("the account's output shows a secret:\n%s", out)
		}
	}
	field := func(label string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^  ` + label + ` +(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %s in:\n%s", label, out)
		}
		return m[1]
	}
	clientID, chave := field("client_id"), field("Pix key")
	if got := field("API Pix"); got != r.PSPSim.PixURL() {
		t.Errorf("API Pix %s, want %s", got, r.PSPSim.PixURL())
	}
	if !strings.Contains(out, "--psp-client-id "+clientID+" \\\n") || !strings.Contains(out, "--psp-client-secret-file "+filepath.Join(creds, "client-secret")) {
		t.Errorf("no handler set command for the account in:\n%s", out)
	}

	// The production client connects with the files as they are.
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	roots, err := pki.ParseCertPool(devCA)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := pki.ParseCertPool([]byte(webhookCA))
	if err != nil {
		t.Fatal(err)
	}
	psp, err := apipix.New(apipix.Config{BaseURL: field("API Pix"), TokenURL: field("token URL"), ClientID: clientID, ClientSecret: secret,
		Certificate: &pair, RootCAs: roots, Webhook: apipix.WebhookAuth{CAs: hooks}})
	if err != nil {
		t.Fatal(err)
	}
	const txid = "bcpctlpspsimtest0000000000001"
	var cob pix.CobSolicitada
	cob.Calendario.Expiracao = 3600
	cob.Valor.Original = "12.34"
	cob.Chave = chave
	if c, err := psp.CreateCharge(context.Background(), txid, cob); err != nil || c.Status != pix.StatusAtiva {
		t.Fatalf("charge with the account's credentials: %+v %v", c, err)
	}

	// A payer pays it; a second payment is refused by the simulator.
	out = mustOK("pay", clientID, txid)
	if !regexp.MustCompile(`^paid: Pix E[0-9A-Za-z]{31}, valor 12\.34, to charge ` + txid + ` \(the simulator notifies the merchant's webhook\)\n$`).MatchString(out) {
		t.Errorf("pay output %q", out)
	}
	if c, err := psp.GetCharge(context.Background(), txid); err != nil || c.Status != pix.StatusConcluida {
		t.Errorf("after the payment: %+v %v", c, err)
	}
	if _, err := sim("pay", clientID, txid); err == nil || exitCode(err) != 1 ||
		!strings.Contains(errorMessage(err), "the PSP simulator answered 409 charge_not_active") || !strings.Contains(errorMessage(err), "only an ATIVA charge can be paid") {
		t.Errorf("paying a paid charge: %v", err)
	}

	// Faults: set, read back, off.
	faults := func(args ...string) (settings map[string]any) {
		t.Helper()
		var st struct {
			Settings map[string]any   `json:"settings"`
			Injected map[string]int64 `json:"injected"`
		}
		if out := mustOK(append([]string{"faults"}, args...)...); json.Unmarshal([]byte(out), &st) != nil || st.Injected == nil {
			t.Fatalf("faults %v: %s", args, out)
		}
		return st.Settings
	}
	if s := faults("--set", "error5xx=0.25,latency=5ms"); s["error5xx"] != 0.25 || s["latency"] != "5ms" {
		t.Errorf("faults set: %v", s)
	}
	if s := faults(); s["error5xx"] != 0.25 || s["latency"] != "5ms" {
		t.Errorf("faults read: %v", s)
	}
	if s := faults("--set", "off"); s["error5xx"] != 0.0 || s["latency"] != "0s" {
		t.Errorf("faults off: %v", s)
	}

	// Refusals: a bad spec and a wrong token are the simulator's answers;
	// no simulator, or no --out, are usage errors.
	if _, err := sim("faults", "--set", "error5xx=2"); err == nil || exitCode(err) != 1 || !strings.Contains(errorMessage(err), "the PSP simulator answered 400") {
		t.Errorf("faults with a share above 1: %v", err)
	}
	var buf bytes.Buffer
	err = run(context.Background(), []string{"--data-dir", dataDir, "pspsim", "faults", "--pspsim-url", r.PSPSim.ControlURL(), "--pspsim-token", "wrong"}, &buf)
	if err == nil || !strings.Contains(errorMessage(err), "the PSP simulator answered 401 unauthorized") {
		t.Errorf("a wrong token: %v", err)
	}
	if err := run(context.Background(), []string{"--data-dir", dataDir, "pspsim", "faults", "--pspsim-token", token}, &buf); err == nil || exitCode(err) != 2 ||
		!strings.Contains(errorMessage(err), "no simulator: give --pspsim-url") {
		t.Errorf("no simulator: %v", err)
	}
	if _, err := sim("account", "loja-sem-pasta"); err == nil || exitCode(err) != 2 || !strings.Contains(errorMessage(err), "needs --out DIR") {
		t.Errorf("account without --out: %v", err)
	}
}
