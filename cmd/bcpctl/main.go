// Command bcpctl is the operator CLI of the BCP platform. It talks to the
// tenant registry's and the catalog's connect APIs with the operator token.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

const usage = `usage: bcpctl [--server URL] [--catalog-server URL] [--token TOKEN] [--data-dir DIR] [--json] <command> ...

commands:
  tenant create --name NAME --domain DOMAIN [--domain ...] [--slug SLUG] [--environment production|sandbox|development]
  tenant list
  tenant get <tenant>
  tenant suspend <tenant>
  tenant resume <tenant>
  tenant usage <tenant> [--days 30]   agent requests, errors, checkouts, orders and GMV (as the console)
  tenant status <tenant>     the go-live checklist: what the merchant lacks before an agent can buy
              (domain, tested payment handler, product in stock, shipping or pickup, agent access,
              AP2 when on), each with the command or admin page that fixes it
  tenant update <tenant> [--name NAME] [--environment production|sandbox|development]
              development: agent profiles and order webhooks may be http/loopback (local agents);
              sandbox, production: https on public addresses only (API keys bound to http profiles
              stop working); payment handlers keep their own environment. Prints what changed.
  domain add <tenant> <domain> [--primary]
  domain remove <tenant> <domain>
  apikey create <tenant> --agent-profile URL [--label TEXT]
  apikey list <tenant>
  apikey revoke <tenant> <key-id>
  handler set <tenant> --preset NAME [--id ID] [--pix-key KEY] [connection flags below]
              pix-sandbox   br.dev.bcp.pix, id pix, sandbox: test Pix at the PSP simulator, no settings
              card-sandbox  com.example.vendor.delegate_payment, id cartao, sandbox: test cards (visa,
                            mastercard) at the simulator, no settings
              pix-psp       br.dev.bcp.pix, id pix, production: the merchant's PSP (API Pix); needs
                            --pix-key and the --psp-* flags
              stripe-card   com.example.vendor.delegate_payment, id cartao, production: Stripe; needs
                            --stripe-key-file (or $BCP_STRIPE_SECRET_KEY)
              flags given override the preset's values; then run handler test
  handler set <tenant> --id ID --name REVERSE.DOMAIN [--instruments JSON] [--config JSON]
              [--environment sandbox|production] [--version DATE] [--spec URL] [--schema URL]
              a Pix PSP (API Pix): --psp-base-url URL --psp-token-url URL --psp-client-id ID
              --psp-client-secret-file FILE (or $BCP_PSP_CLIENT_SECRET) and --psp-cert FILE --psp-key FILE
              or --psp-pkcs12 FILE [--psp-pkcs12-password-file FILE] (or $BCP_PSP_PKCS12_PASSWORD),
              --psp-webhook-ca FILE [--psp-ca FILE] [--psp-token-auth basic|post] [--psp-scopes "a b"]
              a card processor (Stripe): --stripe-key-file FILE (or $BCP_STRIPE_SECRET_KEY) [--stripe-api-url URL]
              or all secret settings as JSON: --secrets JSON | --secrets-file FILE
  handler list <tenant>      handlers, their environment and connection (PSP, client id, certificate expiry)
  handler test <tenant> <handler-id> [--base-url https://loja.com.br]
              gets a token and registers the webhook (Pix), or checks the key (card), and says what failed
  handler remove <tenant> <handler-id>
  pspsim account <reference> --out DIR [--name NAME] [--city CITY] [--scopes "cob.write cob.read ..."]
              the PSP simulator as a bank: opens an account (or re-keys it) and writes its credentials to DIR
              (client certificate and key, .p12, client secret, CAs, card API key) as a developer portal would
  pspsim pay <client-id> <txid> [--valor 12.34]   a payer pays a charge at the simulator (any amount)
  pspsim faults [--set SPEC|off]   the simulator's fault knobs (error5xx=0.1,latency=200ms,...) and counts
              pspsim commands find the simulator, its token and CA through a local bcpd dev's data directory,
              or --pspsim-url, --pspsim-token ($BCP_PSPSIM_TOKEN), --pspsim-ca
  keys list <tenant>
  keys rotate <tenant> [--delay 1h] [--retain 168h]
  keys revoke <tenant> <kid> [--force]
  auth policy <tenant> [--policy either|api_key|signature] [--sign-all-responses true|false]
              [--require-created true|false] [--require-nonce true|false]
  rate limits <tenant> [--merchant-rate N] [--merchant-burst N] [--agent-rate N] [--agent-burst N]
              agent requests (MCP tool calls, REST operations) per second and burst, for the
              merchant and for each agent; shows them, or sets those given (0: the default)
  agent call <endpoint> <tool> --profile URL (--key-file PEM [--kid KID] | --api-key KEY)
             [--args JSON] [--idempotency-key KEY|auto] [--host HOST] [--verify]
  agent keygen [--out FILE] [--kid KID]
  agent mandate --key-file PEM --audience ORIGIN [--kid KID] [--checkout FILE|-] [--issuer URL] [--lifetime 10m]
             [--payment-instrument ID --payment-type pix|card [--payment-description D] [--payee-name N]]
             the test wallet: prints AP2's checkout mandate (mandate.checkout.1, SD-JWT+kb) for a
             checkout response, or with --payment-instrument its payment mandate (mandate.payment.1)
  ap2 on|off|status <tenant>   AP2 mandates (br.dev.bcp.shopping.ap2_mandate) for the merchant
  shipping rate add <tenant> --title TITLE --price 18,90 [--carrier C] [--description D] [--regions SP,RJ]
              [--cep 01000000:09999999 ...] [--free-above 199,00] [--min-days N] [--max-days N]
              [--position N] [--inactive]      prices in centavos (1890) or reais (18,90); no
              --regions/--cep: all of Brazil
  shipping rate list <tenant>
  shipping rate remove <tenant> <rate-id>
  pickup add <tenant> --name NAME --street "Rua X, 10" --city CITY --region UF --cep 01001000
              [--extended TEXT] [--price 0] [--hours "Seg. a sex., 9h às 18h"] [--inactive]
  pickup list <tenant>
  pickup remove <tenant> <pickup-id>
  catalog import <tenant> <file.json|file.csv> [--dry-run]
  catalog list <tenant>
  merchant export <tenant> [--out FILE]
  merchant import <tenant> <file.json> [--dry-run]
  user invite <tenant> <email> [--role admin|staff] [--base-url https://loja.com.br]
  user list <tenant>

<tenant> is a tenant id, slug or domain. Flags may come before, between or after the arguments; a
word that starts with "-" but is not one of the command's flags (a kid such as -a3aYY7R...) is an
argument, and so is everything after "--".

user invite creates a user of the merchant admin web (https://<merchant host>/admin) and prints a link
(<origin>/admin/senha?token=...) where the user chooses the password: it works once and for 72 hours,
and only its hash is stored. The origin is --base-url, else the merchant's primary domain over https
(over a local bcpd dev's scheme and port when its dev.json is found). Inviting again a user who never
signed in gives a new link (the old one stops working). The default role is admin; staff users cannot
invite users or change keys, payment handlers, agent access or store settings. user list's INVITATION
column says "pending until <time>" while a user's link is not used, "expired <time>" once it lapsed
(invite again), "-" after the password is chosen.

catalog import creates or updates products, all or nothing: any error is listed (exit status 2) and
nothing changes. Products match by id (without one, by their SKUs), variants by SKU; each listed
product is replaced, and its variants left out are deactivated, never deleted. Importing the same
file again changes nothing. A JSON file is {"products":[{"id","title","description","image_url",
"active","variants":[{"id","sku","title","price","currency","stock","active","image_url"}]}]} with
prices in integer centavos and active defaulting to true. A .csv file has the header
product_id,product_title,description,image_url,sku,variant_title,price,stock,active and one row per
variant (',' or ';' separated); rows sharing a product_id form one product, a row without one is a
product of its own; an empty variant_title is the product_title, an empty active is true. A CSV price
is whole centavos (5990) or reais with a decimal comma (59,90 or "R$ 1.234,56"); 59.90 and 1.234
are rejected as ambiguous.

merchant export writes one JSON document with the merchant's catalog (products, variants, prices,
stock), shipping rates, pickup points, discount codes, automatic discounts and settings (links,
consent purposes, checkout lifetime). merchant import validates the whole document first (every
problem listed with its JSON path, nothing applied), then applies it; the same file twice changes
nothing, and nothing the document lacks is deleted. Pricing and settings live in other services than
the catalog: a failure after validation (e.g. a service down) can leave earlier sections applied;
run the import again.

The server defaults to $BCP_SERVER, else the operator API a local 'bcpd dev' recorded in dev.json in
its data directory (--data-dir, $BCP_DATA_DIR or .bcp), else http://127.0.0.1:9090; the catalog
server to $BCP_CATALOG_SERVER or the server; the token to $BCP_OPERATOR_TOKEN or the operator-token
file in that data directory. -h/--help after any command prints its usage, no token needed.
`

// Exit codes: 2 for usage errors and invalid input, 1 for everything else.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout)
	if err == nil {
		return
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "bcpctl: %s\n\n%s", ue.msg, usage)
	} else {
		fmt.Fprintln(os.Stderr, "bcpctl:", errorMessage(err))
	}
	os.Exit(exitCode(err))
}

// exitCode is 2 for usage errors and for requests the server refused as
// wrong (invalid, duplicate, unknown), 1 for everything else.
func exitCode(err error) int {
	var ue usageError
	var ie inputError
	if errors.As(err, &ue) || errors.As(err, &ie) {
		return 2
	}
	switch apperr.As(err).Kind {
	case apperr.KindInvalidArgument, apperr.KindAlreadyExists, apperr.KindNotFound, apperr.KindFailedPrecondition:
		return 2
	}
	return 1
}

// errorMessage shows the server's code, message and field.
func errorMessage(err error) string {
	e := apperr.As(err)
	if e.Kind == apperr.KindInternal && e.Code == "internal" {
		return err.Error()
	}
	return e.Error()
}

type cli struct {
	client  tenantsv1connect.TenantServiceClient
	catalog catalogv1connect.CatalogServiceClient
	pricing pricingv1connect.PricingServiceClient
	orders  ordersv1connect.OrdersServiceClient // merchant export (AP2 mandates)
	// payments tests handler connections (on the catalog server's URL:
	// one internal listener in bcpd all).
	payments paymentsv1connect.PaymentsServiceClient
	out      io.Writer
	json     bool
	dataDir  string // of a local bcpd dev (user invite's link origin)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	global := flag.NewFlagSet("bcpctl", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	server := global.String("server", os.Getenv("BCP_SERVER"), "")
	catalogServer := global.String("catalog-server", os.Getenv("BCP_CATALOG_SERVER"), "")
	token := global.String("token", os.Getenv("BCP_OPERATOR_TOKEN"), "")
	dataDir := global.String("data-dir", envOr("BCP_DATA_DIR", ".bcp"), "")
	asJSON := global.Bool("json", false, "")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(out, usage)
			return nil
		}
		return usageError{err.Error()}
	}
	rest := global.Args()
	if len(rest) == 0 || rest[0] == "help" {
		fmt.Fprint(out, usage)
		if len(rest) == 0 {
			return usageError{"missing command"}
		}
		return nil
	}
	// Help never needs a server or a token.
	if wantsHelp(rest) {
		fmt.Fprint(out, commandUsage(rest[0]))
		return nil
	}
	if rest[0] == "agent" { // agent-side commands: no operator token
		return agentCommand(ctx, rest[1:], out)
	}
	if rest[0] == "pspsim" { // the simulated bank's controls: its own token
		return pspsimCommand(ctx, rest[1:], *dataDir, out)
	}
	if *server == "" {
		*server = devServer(*dataDir)
	}
	if *token == "" {
		*token = devToken(*dataDir)
	}
	if *token == "" {
		return errors.New("no operator token: set --token or BCP_OPERATOR_TOKEN")
	}
	if *catalogServer == "" {
		*catalogServer = *server // every service is on one internal listener in `bcpd all`
	}
	auth := connect.WithInterceptors(svcauth.Client(*token))
	c := &cli{
		client: tenantsv1connect.NewTenantServiceClient(&http.Client{Timeout: 30 * time.Second}, strings.TrimRight(*server, "/"), auth),
		// A large import runs longer than any registry call.
		catalog: catalogv1connect.NewCatalogServiceClient(&http.Client{Timeout: 5 * time.Minute}, strings.TrimRight(*catalogServer, "/"), auth),
		pricing: pricingv1connect.NewPricingServiceClient(&http.Client{Timeout: 30 * time.Second}, strings.TrimRight(*catalogServer, "/"), auth),
		orders:  ordersv1connect.NewOrdersServiceClient(&http.Client{Timeout: 30 * time.Second}, strings.TrimRight(*catalogServer, "/"), auth),
		// A connection test waits on a PSP's TLS, OAuth2 and webhook calls.
		payments: paymentsv1connect.NewPaymentsServiceClient(&http.Client{Timeout: 90 * time.Second}, strings.TrimRight(*catalogServer, "/"), auth),
		out:      out, json: *asJSON, dataDir: *dataDir,
	}
	if len(rest) < 2 {
		return usageError{"missing subcommand for " + rest[0]}
	}
	cmd := rest[0] + " " + rest[1]
	sub := rest[2:]
	switch cmd {
	case "tenant create":
		return c.tenantCreate(ctx, sub)
	case "tenant list":
		return c.tenantList(ctx, sub)
	case "tenant usage":
		return c.tenantUsage(ctx, sub, *catalogServer, auth)
	case "tenant status":
		return c.tenantStatus(ctx, sub)
	case "tenant update":
		return c.tenantUpdate(ctx, sub)
	case "shipping rate", "pickup add", "pickup list", "pickup remove":
		if rest[0] == "pickup" {
			return c.pickup(ctx, rest[1], sub)
		}
		if len(sub) == 0 {
			return usageError{"missing subcommand for shipping rate (add, list, remove)"}
		}
		return c.shippingRate(ctx, sub[0], sub[1:])
	case "tenant get":
		return c.withTenant(sub, 1, func(p []string) error {
			r, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
			return c.printTenant(r, err)
		})
	case "tenant suspend", "tenant resume":
		st := tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED
		if rest[1] == "resume" {
			st = tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE
		}
		return c.withTenant(sub, 1, func(p []string) error {
			r, err := c.client.SetTenantStatus(ctx, connect.NewRequest(&tenantsv1.SetTenantStatusRequest{Tenant: p[0], Status: st}))
			if err != nil {
				return err
			}
			return c.printTenant(connect.NewResponse(&tenantsv1.GetTenantResponse{Tenant: r.Msg.GetTenant()}), nil)
		})
	case "domain add":
		fs := newFS("domain add")
		primary := fs.Bool("primary", false, "")
		p, err := parse(fs, sub, 2, "<tenant> <domain>")
		if err != nil {
			return err
		}
		r, err := c.client.AddDomain(ctx, connect.NewRequest(&tenantsv1.AddDomainRequest{Tenant: p[0], Domain: p[1], Primary: *primary}))
		if err != nil {
			return err
		}
		return c.printTenant(connect.NewResponse(&tenantsv1.GetTenantResponse{Tenant: r.Msg.GetTenant()}), nil)
	case "domain remove":
		return c.withTenant(sub, 2, func(p []string) error {
			r, err := c.client.RemoveDomain(ctx, connect.NewRequest(&tenantsv1.RemoveDomainRequest{Tenant: p[0], Domain: p[1]}))
			if err != nil {
				return err
			}
			return c.printTenant(connect.NewResponse(&tenantsv1.GetTenantResponse{Tenant: r.Msg.GetTenant()}), nil)
		})
	case "apikey create":
		fs := newFS("apikey create")
		profile := fs.String("agent-profile", "", "")
		label := fs.String("label", "", "")
		p, err := parse(fs, sub, 1, "<tenant>")
		if err != nil {
			return err
		}
		if *profile == "" {
			return usageError{"--agent-profile is required: the key is bound to one agent profile URL"}
		}
		r, err := c.client.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: p[0], AgentProfileUrl: *profile, Label: *label}))
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"api_key": r.Msg.GetApiKey(), "secret": r.Msg.GetSecret()})
		}
		fmt.Fprintf(c.out, "API key %s for %s\nsecret (shown once, store it now): %s\n", r.Msg.GetApiKey().GetId(), r.Msg.GetApiKey().GetAgentProfileUrl(), r.Msg.GetSecret())
		return nil
	case "apikey list":
		return c.withTenant(sub, 1, func(p []string) error {
			r, err := c.client.ListAPIKeys(ctx, connect.NewRequest(&tenantsv1.ListAPIKeysRequest{Tenant: p[0]}))
			if err != nil {
				return err
			}
			if c.json {
				return c.printJSON(r.Msg.GetApiKeys())
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPREFIX\tAGENT PROFILE\tLABEL\tSTATE")
			for _, k := range r.Msg.GetApiKeys() {
				state := "active"
				if k.GetRevokeTime() != nil {
					state = "revoked " + k.GetRevokeTime().AsTime().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\n", k.GetId(), k.GetDisplayPrefix(), k.GetAgentProfileUrl(), k.GetLabel(), state)
			}
			return tw.Flush()
		})
	case "apikey revoke":
		return c.withTenant(sub, 2, func(p []string) error {
			r, err := c.client.RevokeAPIKey(ctx, connect.NewRequest(&tenantsv1.RevokeAPIKeyRequest{Tenant: p[0], ApiKeyId: p[1]}))
			if err != nil {
				return err
			}
			fmt.Fprintf(c.out, "revoked %s\n", r.Msg.GetApiKey().GetId())
			return nil
		})
	case "keys list":
		return c.keysList(ctx, sub)
	case "keys rotate":
		return c.keysRotate(ctx, sub)
	case "keys revoke":
		return c.keysRevoke(ctx, sub)
	case "auth policy":
		return c.authPolicy(ctx, sub)
	case "rate limits":
		return c.rateLimits(ctx, sub)
	case "ap2 on", "ap2 off", "ap2 status":
		return c.ap2Set(ctx, rest[1], sub)
	case "handler set":
		return c.handlerSet(ctx, sub)
	case "handler list":
		return c.handlerList(ctx, sub)
	case "handler test":
		return c.handlerTest(ctx, sub)
	case "handler remove":
		return c.withTenant(sub, 2, func(p []string) error {
			if _, err := c.client.RemovePaymentHandler(ctx, connect.NewRequest(&tenantsv1.RemovePaymentHandlerRequest{Tenant: p[0], HandlerId: p[1]})); err != nil {
				return err
			}
			fmt.Fprintf(c.out, "removed handler %s\n", p[1])
			return nil
		})
	case "catalog import":
		return c.catalogImport(ctx, sub)
	case "catalog list":
		return c.catalogList(ctx, sub)
	case "merchant export":
		return c.merchantExport(ctx, sub)
	case "merchant import":
		return c.merchantImport(ctx, sub)
	case "user invite":
		return c.userInvite(ctx, sub)
	case "user list":
		return c.userList(ctx, sub)
	}
	return usageError{"unknown command " + cmd}
}

func (c *cli) tenantCreate(ctx context.Context, args []string) error {
	fs := newFS("tenant create")
	name := fs.String("name", "", "")
	slug := fs.String("slug", "", "")
	envName := fs.String("environment", "production", "")
	var domains multi
	fs.Var(&domains, "domain", "")
	if _, err := parse(fs, args, 0, ""); err != nil {
		return err
	}
	if *name == "" || len(domains) == 0 {
		return usageError{"tenant create needs --name and at least one --domain"}
	}
	env, ok := map[string]tenantsv1.Environment{
		"production": tenantsv1.Environment_ENVIRONMENT_PRODUCTION, "sandbox": tenantsv1.Environment_ENVIRONMENT_SANDBOX,
		"development": tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}[*envName]
	if !ok {
		return usageError{"--environment must be production, sandbox or development"}
	}
	r, err := c.client.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: *name, Slug: *slug, Domains: domains, Environment: env}))
	if err != nil {
		return err
	}
	return c.printTenant(connect.NewResponse(&tenantsv1.GetTenantResponse{Tenant: r.Msg.GetTenant()}), nil)
}

func (c *cli) tenantList(ctx context.Context, args []string) error {
	if _, err := parse(newFS("tenant list"), args, 0, ""); err != nil {
		return err
	}
	var all []*tenantsv1.Tenant
	token := ""
	for {
		r, err := c.client.ListTenants(ctx, connect.NewRequest(&tenantsv1.ListTenantsRequest{PageSize: 200, PageToken: token}))
		if err != nil {
			return err
		}
		all = append(all, r.Msg.GetTenants()...)
		if token = r.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	if c.json {
		return c.printJSON(all)
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLUG\tNAME\tSTATUS\tENVIRONMENT\tDOMAINS\tID")
	for _, t := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.GetSlug(), t.GetName(), statusName(t.GetStatus()), envName(t.GetEnvironment()), strings.Join(t.GetDomains(), ","), t.GetId())
	}
	return tw.Flush()
}

func (c *cli) withTenant(args []string, n int, fn func([]string) error) error {
	p, err := parse(newFS("cmd"), args, n, "")
	if err != nil {
		return err
	}
	return fn(p)
}

func (c *cli) printTenant(r *connect.Response[tenantsv1.GetTenantResponse], err error) error {
	if err != nil {
		return err
	}
	t := r.Msg.GetTenant()
	if c.json {
		return c.printJSON(t)
	}
	fmt.Fprintf(c.out, "tenant %s (%s)\n  id           %s\n  status       %s\n  environment  %s\n  domains      %s (primary %s)\n  capabilities %s\n",
		t.GetName(), t.GetSlug(), t.GetId(), statusName(t.GetStatus()), envName(t.GetEnvironment()),
		strings.Join(t.GetDomains(), ", "), t.GetPrimaryDomain(), strings.Join(t.GetCapabilities(), ", "))
	return nil
}

func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func statusName(s tenantsv1.TenantStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "TENANT_STATUS_"))
}

func envName(e tenantsv1.Environment) string {
	return strings.ToLower(strings.TrimPrefix(e.String(), "ENVIRONMENT_"))
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func newFS(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse accepts flags before, between and after positional arguments and
// requires exactly n positional ones. A word that starts with "-" but names
// none of fs's flags is positional: signing-key ids are base64url thumbprints
// and one in 64 starts with "-", and an operator pastes them as listed.
// Everything after "--" is positional too.
func parse(fs *flag.FlagSet, args []string, n int, what string) ([]string, error) {
	var flags, pos, strays []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name, hasValue := flagName(a)
		if name == "" {
			pos = append(pos, a)
			continue
		}
		f := fs.Lookup(name)
		if f == nil && name != "h" && name != "help" {
			pos = append(pos, a)
			strays = append(strays, a)
			continue
		}
		flags = append(flags, a)
		if f != nil && !hasValue && !isBool(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, usageError{fs.Name() + ": " + err.Error()}
	}
	if len(pos) != n {
		msg := fmt.Sprintf("%s expects %d argument(s) %s, got %d", fs.Name(), n, what, len(pos))
		if len(strays) > 0 {
			msg += fmt.Sprintf(" (%s is not one of its flags)", strings.Join(strays, ", "))
		}
		return nil, usageError{msg}
	}
	return pos, nil
}

// flagName is the name in "-name", "--name" or "--name=value"; "" when a
// is not written as a flag.
func flagName(a string) (name string, hasValue bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", false
	}
	name = strings.TrimPrefix(a[1:], "-")
	if name == "" || name[0] == '-' {
		return "", false
	}
	name, _, hasValue = strings.Cut(name, "=")
	return name, hasValue
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// wantsHelp reports whether a command line asks for help (-h, -help,
// --help before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// commandUsage is the usage lines of one command (all of them for an
// unknown one).
func commandUsage(cmd string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(usage, "\n") {
		switch {
		case strings.HasPrefix(line, "  "+cmd+" "):
			in = true
		case strings.HasPrefix(line, "  ") && len(line) > 2 && line[2] != ' ':
			in = false // the next command
		case !strings.HasPrefix(line, "  "):
			in = false
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return usage
	}
	return "usage: bcpctl [--server URL] [--catalog-server URL] [--token TOKEN] [--data-dir DIR] [--json]\n\n" + b.String()
}

// devServer is the operator API of a local `bcpd dev` whose data directory
// is dir, as it recorded in dev.json, or the default internal address.
func devServer(dir string) string {
	var info struct {
		InternalURL string `json:"internal_url"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "dev.json")); err == nil && json.Unmarshal(b, &info) == nil && info.InternalURL != "" {
		return info.InternalURL
	}
	return "http://127.0.0.1:9090"
}

// devToken reads the operator token a local `bcpd dev` wrote in dir.
func devToken(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "operator-token"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
