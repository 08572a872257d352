package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/handlersecrets"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

func (c *cli) handlerSet(ctx context.Context, args []string) error {
	fs := newFS("handler set")
	id := fs.String("id", "", "")
	name := fs.String("name", "", "")
	instruments := fs.String("instruments", "", "")
	config := fs.String("config", "{}", "")
	secrets := fs.String("secrets", "", "")
	secretsFile := fs.String("secrets-file", "", "")
	env := fs.String("environment", "sandbox", "")
	version := fs.String("version", "", "")
	spec := fs.String("spec", "", "")
	schema := fs.String("schema", "", "")
	position := fs.Int("position", 0, "")
	var psp handlersecrets.PixPSP
	fs.StringVar(&psp.BaseURL, "psp-base-url", "", "")
	fs.StringVar(&psp.TokenURL, "psp-token-url", "", "")
	fs.StringVar(&psp.TokenAuth, "psp-token-auth", "", "")
	fs.StringVar(&psp.ClientID, "psp-client-id", "", "")
	pspSecretFile := fs.String("psp-client-secret-file", "", "")
	pspCert := fs.String("psp-cert", "", "")
	pspKey := fs.String("psp-key", "", "")
	pspP12 := fs.String("psp-pkcs12", "", "")
	pspP12PwFile := fs.String("psp-pkcs12-password-file", "", "")
	pspCA := fs.String("psp-ca", "", "")
	pspWebhookCA := fs.String("psp-webhook-ca", "", "")
	pspScopes := fs.String("psp-scopes", "", "")
	var stripe handlersecrets.Stripe
	stripeKeyFile := fs.String("stripe-key-file", "", "")
	fs.StringVar(&stripe.APIURL, "stripe-api-url", "", "")
	stripeCA := fs.String("stripe-ca", "", "")
	preset := fs.String("preset", "", "")
	pixKey := fs.String("pix-key", "", "")
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *preset != "" {
		pr, ok := handlerPresets[*preset]
		if !ok {
			return usageError{"unknown --preset " + *preset + "; one of " + presetNames()}
		}
		for _, d := range []struct {
			flag string
			dst  *string
			v    string
		}{{"id", id, pr.id}, {"name", name, pr.name}, {"instruments", instruments, pr.instruments}, {"config", config, pr.config},
			{"environment", env, pr.environment}, {"spec", spec, pr.spec}, {"schema", schema, pr.schema}} {
			if !set[d.flag] {
				*d.dst = d.v
			}
		}
		if pr.position != 0 && !set["position"] {
			*position = pr.position
		}
		if err := pr.check(set); err != nil {
			return err
		}
	}
	if *pixKey != "" {
		if set["config"] && *preset == "" {
			return usageError{"give the Pix key either as --pix-key or in --config"}
		}
		var cfg map[string]any
		if err := json.Unmarshal([]byte(*config), &cfg); err != nil || cfg == nil {
			return usageError{"--config must be a JSON object"}
		}
		cfg["pix_key"] = *pixKey
		b, _ := json.Marshal(cfg)
		*config = string(b)
	}
	if *id == "" || *name == "" {
		return usageError{"handler set needs --id and --name, or --preset (" + presetNames() + ")"}
	}
	if *instruments == "" && *name == "br.dev.bcp.pix" {
		*instruments = `[{"type":"pix"}]`
	}
	if *secretsFile != "" {
		b, err := os.ReadFile(*secretsFile)
		if err != nil {
			return err
		}
		*secrets = string(b)
	}
	// Secrets come from files or the environment, never from the command
	// line (shell history, ps).
	var sec handlersecrets.Secrets
	if psp.BaseURL != "" || psp.ClientID != "" || *pspCert != "" || *pspP12 != "" {
		if psp.ClientSecret, err = secretFrom(*pspSecretFile, "BCP_PSP_CLIENT_SECRET", "--psp-client-secret-file"); err != nil {
			return err
		}
		for _, f := range []struct {
			file string
			dst  *string
		}{{*pspCert, &psp.CertificatePEM}, {*pspKey, &psp.PrivateKeyPEM}, {*pspCA, &psp.CAPEM}, {*pspWebhookCA, &psp.Webhook.CAPEM}} {
			if f.file == "" {
				continue
			}
			b, err := os.ReadFile(f.file)
			if err != nil {
				return err
			}
			*f.dst = string(b)
		}
		if *pspP12 != "" {
			b, err := os.ReadFile(*pspP12)
			if err != nil {
				return err
			}
			psp.PKCS12Base64 = base64.StdEncoding.EncodeToString(b)
			if psp.PKCS12Password, err = secretFrom(*pspP12PwFile, "BCP_PSP_PKCS12_PASSWORD", ""); err != nil {
				return err
			}
		}
		if *pspScopes != "" {
			psp.Scopes = strings.Fields(*pspScopes)
		}
		sec.PSP = &psp
	}
	if *stripeKeyFile != "" || os.Getenv("BCP_STRIPE_SECRET_KEY") != "" || stripe.APIURL != "" {
		if stripe.SecretKey, err = secretFrom(*stripeKeyFile, "BCP_STRIPE_SECRET_KEY", "--stripe-key-file"); err != nil {
			return err
		}
		if *stripeCA != "" {
			b, err := os.ReadFile(*stripeCA)
			if err != nil {
				return err
			}
			stripe.CAPEM = string(b)
		}
		sec.Stripe = &stripe
	}
	if sec.PSP != nil || sec.Stripe != nil {
		if *secrets != "" {
			return usageError{"give the secret settings either as --secrets/--secrets-file or with the --psp-*/--stripe-* flags"}
		}
		b, err := json.Marshal(sec)
		if err != nil {
			return err
		}
		*secrets = string(b)
	}
	r, err := c.client.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{
		Tenant: p[0], SecretsJson: *secrets,
		Handler: &tenantsv1.PaymentHandler{
			Id: *id, Name: *name, Version: *version, Spec: *spec, Schema: *schema, AvailableInstrumentsJson: *instruments,
			ConfigJson: *config, Environment: *env, Position: int32(*position),
		},
	}))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(r.Msg.GetHandler())
	}
	h := r.Msg.GetHandler()
	fmt.Fprintf(c.out, "handler %s (%s) set: instruments %s, config %s, environment %s, secrets stored: %v\n",
		h.GetId(), h.GetName(), h.GetAvailableInstrumentsJson(), h.GetConfigJson(), h.GetEnvironment(), h.GetHasSecrets())
	if conn := connectionLine(h.GetConnectionJson()); conn != "" {
		fmt.Fprintf(c.out, "  connection: %s\n", conn)
	}
	fmt.Fprintf(c.out, "next: bcpctl handler test %s %s\n", p[0], h.GetId())
	return nil
}

// secretFrom reads a secret from file (trailing newline dropped), else
// from the environment variable; flag names the file flag for the error
// ("" when the secret is optional).
func secretFrom(file, envVar, flag string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	if v := os.Getenv(envVar); v != "" || flag == "" {
		return v, nil
	}
	return "", usageError{fmt.Sprintf("give the secret with %s or $%s", flag, envVar)}
}

// connectionLine renders a handler's connection summary for people.
func connectionLine(raw string) string {
	var s handlersecrets.Summary
	if json.Unmarshal([]byte(raw), &s) != nil {
		return ""
	}
	switch s.Kind {
	case "pix_psp":
		line := fmt.Sprintf("API Pix %s, client %s, certificate %s", s.BaseURL, s.ClientID, s.CertSubject)
		if !s.CertExpires.IsZero() {
			left := time.Until(s.CertExpires).Hours() / 24
			line += fmt.Sprintf(" (expires %s, in %.0f days)", s.CertExpires.Format("2006-01-02"), left)
		}
		return line + ", webhooks " + s.WebhookScheme
	case "stripe":
		line := "Stripe, key " + s.KeyHint
		if s.APIURL != "" {
			line += ", API " + s.APIURL
		}
		return line
	}
	return ""
}

func (c *cli) handlerList(ctx context.Context, args []string) error {
	p, err := parse(newFS("handler list"), args, 1, "<tenant>")
	if err != nil {
		return err
	}
	t, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
	if err != nil {
		return err
	}
	d, err := c.client.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: t.Msg.GetTenant().GetId()}))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(d.Msg.GetPaymentHandlers())
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tENVIRONMENT\tCONNECTION")
	for _, h := range d.Msg.GetPaymentHandlers() {
		conn := connectionLine(h.GetConnectionJson())
		if conn == "" && h.GetEnvironment() == "sandbox" {
			conn = "the PSP simulator (sandbox)"
		} else if conn == "" {
			conn = "not configured"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.GetId(), h.GetName(), h.GetEnvironment(), conn)
	}
	return tw.Flush()
}

func (c *cli) handlerTest(ctx context.Context, args []string) error {
	fs := newFS("handler test")
	base := fs.String("base-url", "", "")
	p, err := parse(fs, args, 2, "<tenant> <handler-id>")
	if err != nil {
		return err
	}
	t, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
	if err != nil {
		return err
	}
	tid, err := uuid.Parse(t.Msg.GetTenant().GetId())
	if err != nil {
		return err
	}
	r, err := c.payments.TestHandler(tenancy.With(ctx, tid), connect.NewRequest(&paymentsv1.TestHandlerRequest{HandlerId: p[1], BaseUrl: *base}))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(r.Msg)
	}
	if r.Msg.GetOk() {
		fmt.Fprintf(c.out, "ok: %s\n", r.Msg.GetMessage())
		return nil
	}
	return fmt.Errorf("handler %s: %s (%s)", p[1], r.Msg.GetMessage(), r.Msg.GetCode())
}
