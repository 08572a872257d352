package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcpdev/bcp/internal/hostname"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/sim/pspsim/simcontrol"
)

// pspsimCommand is `bcpctl pspsim …`: the PSP simulator's control API,
// playing the bank (an account as its developer portal hands it out, a
// payer paying a charge, the fault knobs). It needs the simulator's
// control URL, token and the CA of its certificate, which a local
// `bcpd dev` keeps in its data directory.
func pspsimCommand(ctx context.Context, args []string, dataDir string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{"missing subcommand for pspsim"}
	}
	fs := newFS("pspsim " + args[0])
	base := fs.String("pspsim-url", "", "")
	token := fs.String("pspsim-token", os.Getenv("BCP_PSPSIM_TOKEN"), "")
	caFile := fs.String("pspsim-ca", filepath.Join(dataDir, "pki", "dev-ca", "ca.pem"), "")
	name := fs.String("name", "", "")
	city := fs.String("city", "", "")
	scopes := fs.String("scopes", "", "")
	outDir := fs.String("out", "", "")
	valor := fs.String("valor", "", "")
	set := fs.String("set", "", "")
	var n int
	switch args[0] {
	case "account":
		n = 1
	case "pay":
		n = 2
	case "faults":
		n = 0
	default:
		return usageError{"unknown command pspsim " + args[0]}
	}
	p, err := parse(fs, args[1:], n, "")
	if err != nil {
		return err
	}
	if *base == "" {
		var info struct {
			URL string `json:"pspsim_control_url"`
		}
		if b, err := os.ReadFile(filepath.Join(dataDir, "dev.json")); err == nil && json.Unmarshal(b, &info) == nil {
			*base = info.URL
		}
	}
	if *base == "" {
		return usageError{"no simulator: give --pspsim-url (a running bcpd dev records it in dev.json)"}
	}
	if *token == "" {
		b, err := os.ReadFile(filepath.Join(dataDir, "pspsim-token"))
		if err != nil {
			return usageError{"no simulator token: give --pspsim-token or $BCP_PSPSIM_TOKEN"}
		}
		*token = strings.TrimSpace(string(b))
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		return fmt.Errorf("the simulator's CA (--pspsim-ca): %w", err)
	}
	pool, err := pki.ParseCertPool(caPEM)
	if err != nil {
		return fmt.Errorf("the simulator's CA (--pspsim-ca): %w", err)
	}
	sim := &simcontrol.Client{BaseURL: *base, Token: *token, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, DialContext: hostname.DialLocalhost(&net.Dialer{Timeout: 5 * time.Second}),
	}}}
	switch args[0] {
	case "account":
		return account(ctx, sim, p[0], *name, *city, *scopes, *outDir, caPEM, out)
	case "pay":
		body := map[string]string{}
		if *valor != "" {
			body["valor"] = *valor
		}
		var pix map[string]any
		if err := sim.Do(ctx, http.MethodPost, "/sim/v1/accounts/"+p[0]+"/cob/"+p[1]+"/pay", body, &pix); err != nil {
			return err
		}
		fmt.Fprintf(out, "paid: Pix %v, valor %v, to charge %v (the simulator notifies the merchant's webhook)\n", pix["endToEndId"], pix["valor"], pix["txid"])
		return nil
	default: // faults
		var st map[string]any
		if *set != "" {
			spec := *set
			if spec == "off" {
				spec = ""
			}
			if err := sim.Do(ctx, http.MethodPut, "/sim/v1/faults", map[string]string{"spec": spec}, &st); err != nil {
				return err
			}
		} else if err := sim.Do(ctx, http.MethodGet, "/sim/v1/faults", nil, &st); err != nil {
			return err
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
}

// account opens (or re-keys) an account and writes its credentials to dir
// as a bank hands them out, then says how to configure a handler with them.
func account(ctx context.Context, s *simcontrol.Client, reference, name, city, scopes, dir string, serverCA []byte, out io.Writer) error {
	if dir == "" {
		return usageError{"pspsim account needs --out DIR (where the credentials are written)"}
	}
	if name == "" {
		name = reference
	}
	req := map[string]any{"reference": reference, "nome": name}
	if city != "" {
		req["cidade"] = city
	}
	if scopes != "" {
		req["scopes"] = strings.Fields(scopes)
	}
	var c struct {
		ClientID        string `json:"client_id"`
		ClientSecret    string `json:"client_secret"`
		Chave           string `json:"chave"`
		CertificatePEM  string `json:"certificate_pem"`
		PrivateKeyPEM   string `json:"private_key_pem"`
		PKCS12Base64    string `json:"pkcs12_base64"`
		CAPEM           string `json:"ca_pem"`
		WebhookSubject  string `json:"webhook_subject"`
		APIURL          string `json:"api_url"`
		TokenURL        string `json:"token_url"`
		StripeSecretKey string `json:"stripe_secret_key"`
		StripeAPIURL    string `json:"stripe_api_url"`
	}
	if err := s.Do(ctx, http.MethodPost, "/sim/v1/accounts", req, &c); err != nil {
		return err
	}
	p12, err := base64.StdEncoding.DecodeString(c.PKCS12Base64)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"client-cert.pem", []byte(c.CertificatePEM), 0o644},
		{"client-key.pem", []byte(c.PrivateKeyPEM), 0o600},
		{"client.p12", p12, 0o600},
		{"client-secret", []byte(c.ClientSecret + "\n"), 0o600},
		{"webhook-ca.pem", []byte(c.CAPEM), 0o644},
		{"server-ca.pem", serverCA, 0o644},
		{"stripe-key", []byte(c.StripeSecretKey + "\n"), 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, `account %s at the PSP simulator (credentials in %s; the client secret and keys are readable by you only)
  client_id      %s
  Pix key        %s
  API Pix        %s
  token URL      %s
  card API       %s (Stripe-compatible; key in %s)
  webhooks come with a client certificate from webhook-ca.pem, subject %s

connect a handler with them:
  bcpctl handler set <tenant> --id pix --name br.dev.bcp.pix --environment production \
    --config '{"pix_key":"%s"}' \
    --psp-base-url %s --psp-token-url %s --psp-client-id %s \
    --psp-client-secret-file %s --psp-cert %s --psp-key %s \
    --psp-ca %s --psp-webhook-ca %s
  bcpctl handler test <tenant> pix
`, reference, dir, c.ClientID, c.Chave, c.APIURL, c.TokenURL, c.StripeAPIURL, filepath.Join(dir, "stripe-key"), c.WebhookSubject,
		c.Chave, c.APIURL, c.TokenURL, c.ClientID, filepath.Join(dir, "client-secret"), filepath.Join(dir, "client-cert.pem"),
		filepath.Join(dir, "client-key.pem"), filepath.Join(dir, "server-ca.pem"), filepath.Join(dir, "webhook-ca.pem"))
	return nil
}
