package devenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/platform"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"

	"github.com/google/uuid"
)

// Demo merchant identity.
const (
	DemoSlug   = "loja-demo"
	DemoDomain = "loja-demo.localhost"
	// demoAgentPath is where bcpd dev serves the demo agent's profile on
	// its internal listener, so a newcomer can drive a checkout with curl.
	demoAgentPath = "/dev/demo-agent.json"
)

// DemoAgentProfileURL is the demo agent's profile URL for an internal
// listener address.
func DemoAgentProfileURL(internalAddr string) string { return "http://" + internalAddr + demoAgentPath }

// demoAgentProfile is a platform profile that supports everything the
// platform offers, with the demo merchant's payment handler names.
const demoAgentProfile = `{"ucp":{"version":"2026-07-28",
 "services":{"br.dev.bcp.shopping":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/overview","transport":"mcp","schema":"https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
 "capabilities":{
  "br.dev.bcp.shopping.checkout":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/checkout","schema":"https://bcp.dev.br/draft/schemas/shopping/checkout.json"}],
  "br.dev.bcp.shopping.fulfillment":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/fulfillment","schema":"https://bcp.dev.br/draft/schemas/shopping/fulfillment.json","extends":"br.dev.bcp.shopping.checkout"}],
  "br.dev.bcp.shopping.discount":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/discount","schema":"https://bcp.dev.br/draft/schemas/shopping/discount.json","extends":"br.dev.bcp.shopping.checkout"}],
  "br.dev.bcp.shopping.buyer_consent":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/buyer-consent","schema":"https://bcp.dev.br/draft/schemas/shopping/buyer_consent.json","extends":"br.dev.bcp.shopping.checkout"}]},
 "payment_handlers":{
  "br.dev.bcp.pix":[{"id":"agent_pix","version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/pix","schema":"https://bcp.dev.br/draft/schemas/handlers/pix.json"}],
  "com.example.vendor.delegate_payment":[{"id":"agent_card","version":"2026-07-28","spec":"https://example.vendor.com/specs/delegate-payment","schema":"https://example.vendor.com/schemas/delegate-payment-config.json"}]}}}
`

// DemoAgentHandler serves the demo agent profile.
func DemoAgentHandler() (string, http.Handler) {
	return "GET " + demoAgentPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write([]byte(demoAgentProfile))
	})
}

// SeedDemo creates the demo merchant through the services' APIs when it
// does not exist yet, and returns its tenant, the demo agent API key
// (kept in dataDir so every run can print it) and whether it created it.
func SeedDemo(ctx context.Context, c *platform.Clients, dataDir, agentProfile string) (*tenantsv1.Tenant, string, bool, error) {
	t, key, err := seedDemo(ctx, c, dataDir, agentProfile)
	if errors.Is(err, errExists) {
		return t, key, false, nil
	}
	return t, key, err == nil, err
}

var errExists = errors.New("devenv: demo merchant exists")

func seedDemo(ctx context.Context, c *platform.Clients, dataDir, agentProfile string) (*tenantsv1.Tenant, string, error) {
	keyFile := filepath.Join(dataDir, "demo-api-key")
	got, err := c.Tenants.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: DemoSlug}))
	if err == nil {
		key, _ := os.ReadFile(keyFile)
		return got.Msg.GetTenant(), strings.TrimSpace(string(key)), errExists
	}
	if !apperr.IsKind(err, apperr.KindNotFound) {
		return nil, "", err
	}
	created, err := c.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja Demo", Slug: DemoSlug, Domains: []string{DemoDomain},
		Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		return nil, "", fmt.Errorf("create demo tenant: %w", err)
	}
	t := created.Msg.GetTenant()
	for _, h := range []*tenantsv1.PaymentHandler{
		{
			Id: "pix_demo", Name: bcpnames.PixHandler, Spec: bcpnames.PixSpec, Schema: bcpnames.PixSchema,
			AvailableInstrumentsJson: `[{"type":"pix"}]`, ConfigJson: `{"environment":"sandbox"}`, Environment: "sandbox",
		},
		{
			Id: "cartao_demo", Name: "com.example.vendor.delegate_payment", Position: 1,
			Spec: "https://example.vendor.com/specs/delegate-payment", Schema: "https://example.vendor.com/schemas/delegate-payment-config.json",
			AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`, ConfigJson: `{}`, Environment: "sandbox",
		},
	} {
		if _, err := c.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: t.GetId(), Handler: h})); err != nil {
			return nil, "", fmt.Errorf("demo payment handler %s: %w", h.GetId(), err)
		}
	}
	tctx := tenancy.With(ctx, uuid.MustParse(t.GetId()))
	for _, p := range demoCatalog {
		if _, err := c.Catalog.CreateProduct(tctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: p})); err != nil {
			return nil, "", fmt.Errorf("demo product %s: %w", p.GetId(), err)
		}
	}
	if _, err := c.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: t.GetId(), Settings: &tenantsv1.Settings{
		Links: []*tenantsv1.Link{
			{Type: "privacy_policy", Url: "http://" + DemoDomain + "/privacidade"},
			{Type: "terms_of_service", Url: "http://" + DemoDomain + "/termos"},
		},
		ConsentPurposes: []string{"marketing"},
	}})); err != nil {
		return nil, "", fmt.Errorf("demo settings: %w", err)
	}
	for _, r := range demoRates {
		if _, err := c.Pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: r})); err != nil {
			return nil, "", fmt.Errorf("demo shipping rate %s: %w", r.GetTitle(), err)
		}
	}
	if _, err := c.Pricing.SetPickupLocation(tctx, connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: &pricingv1.PickupLocation{
		Name: "Loja Demo — Pinheiros", StreetAddress: "Rua dos Pinheiros, 500", AddressLocality: "São Paulo", AddressRegion: "SP",
		PostalCode: "05422000", AddressCountry: "BR", Description: "Retire em até 2 horas após a confirmação do pagamento", Active: true,
	}})); err != nil {
		return nil, "", fmt.Errorf("demo pickup point: %w", err)
	}
	if _, err := c.Pricing.SetDiscount(tctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "BEMVINDO10", Title: "10% de desconto de boas-vindas", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000,
		Active: true, Combinable: true, Priority: 1, UsageLimitPerBuyer: 1,
	}})); err != nil {
		return nil, "", fmt.Errorf("demo discount: %w", err)
	}
	key, err := c.Tenants.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: t.GetId(), AgentProfileUrl: agentProfile, Label: "demo agent",
	}))
	if err != nil {
		return nil, "", fmt.Errorf("demo API key: %w", err)
	}
	if err := os.WriteFile(keyFile, []byte(key.Msg.GetSecret()+"\n"), 0o600); err != nil {
		return nil, "", err
	}
	return t, key.Msg.GetSecret(), nil
}

// Two shipping rates: PAC everywhere (free from R$ 199,00) and SEDEX in
// the Southeast.
var demoRates = []*pricingv1.ShippingRate{
	{Title: "PAC", Description: "Entrega econômica dos Correios", Carrier: "Correios", Price: 1890, FreeAbove: 19900, MinDays: 5, MaxDays: 9, Active: true},
	{Title: "SEDEX", Description: "Entrega expressa dos Correios", Carrier: "Correios", Price: 3490, MinDays: 1, MaxDays: 3, Regions: []string{"SP", "RJ", "MG", "ES"}, Active: true, Position: 1},
}

var demoCatalog = []*catalogv1.Product{
	{
		Id: "prd_camiseta", Title: "Camiseta Básica Algodão", Active: true,
		Description: "Camiseta 100% algodão, fio 30.1 penteado.",
		Variants: []*catalogv1.Variant{
			{Id: "var_camiseta_p", Sku: "CAM-P", Title: "Camiseta Básica Algodão — P", Price: 5990, Stock: 40, Active: true},
			{Id: "var_camiseta_m", Sku: "CAM-M", Title: "Camiseta Básica Algodão — M", Price: 5990, Stock: 40, Active: true},
			{Id: "var_camiseta_g", Sku: "CAM-G", Title: "Camiseta Básica Algodão — G", Price: 6490, Stock: 3, Active: true},
		},
	},
	{
		Id: "prd_caneca", Title: "Caneca de Cerâmica 350 ml", Active: true,
		Variants: []*catalogv1.Variant{{Id: "var_caneca_350", Sku: "CAN-350", Title: "Caneca de Cerâmica 350 ml", Price: 3990, Stock: 100, Active: true}},
	},
	{
		Id: "prd_cafe", Title: "Café Especial Torrado 250 g", Active: true,
		Variants: []*catalogv1.Variant{{Id: "var_cafe_250", Sku: "CAF-250", Title: "Café Especial Torrado 250 g", Price: 4500, Stock: 25, Active: true}},
	},
	{
		Id: "prd_chinelo", Title: "Chinelo de Borracha", Active: true,
		Variants: []*catalogv1.Variant{{Id: "var_chinelo_40", Sku: "CHI-40", Title: "Chinelo de Borracha 39/40", Price: 2990, Stock: 0, Active: true}},
	},
}

var errNoData = errors.New("devenv: no data")

// DemoAdminEmail is the demo merchant's admin user.
const DemoAdminEmail = "admin@" + DemoDomain

// SeedDemoAdmin invites the demo merchant's admin user once and returns
// its e-mail and initial password (kept in dataDir/demo-admin-password so
// every run can print it; the database holds only its argon2id hash).
func SeedDemoAdmin(ctx context.Context, c *platform.Clients, tenantID, dataDir string) (string, string, error) {
	file := filepath.Join(dataDir, "demo-admin-password")
	if b, err := os.ReadFile(file); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return DemoAdminEmail, strings.TrimSpace(string(b)), nil
	}
	resp, err := c.Tenants.InviteMerchantUser(ctx, connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{
		Tenant: tenantID, Email: DemoAdminEmail, Role: "admin",
	}))
	if apperr.IsKind(err, apperr.KindAlreadyExists) {
		return DemoAdminEmail, "(unknown: " + file + " is missing)", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("demo admin user: %w", err)
	}
	if err := os.WriteFile(file, []byte(resp.Msg.GetInitialPassword()+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return DemoAdminEmail, resp.Msg.GetInitialPassword(), nil
}
