package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/platform"
	"github.com/bcpdev/bcp/internal/tenancy"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"

	"github.com/google/uuid"
)

// Demo merchant identity.
const (
	DemoSlug   = "loja-demo"
	DemoDomain = "loja-demo.localhost"
	// DemoAgentProfile is the agent profile the demo API key is bound to.
	DemoAgentProfile = "http://agent.localhost/profiles/demo-agent.json"
)

// SeedDemo creates the demo merchant through the services' APIs when it
// does not exist yet, and returns its tenant and the demo agent API key
// (kept in dataDir so every run can print it).
func SeedDemo(ctx context.Context, c *platform.Clients, dataDir string) (*tenantsv1.Tenant, string, error) {
	keyFile := filepath.Join(dataDir, "demo-api-key")
	got, err := c.Tenants.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: DemoSlug}))
	if err == nil {
		key, _ := os.ReadFile(keyFile)
		return got.Msg.GetTenant(), strings.TrimSpace(string(key)), nil
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
	key, err := c.Tenants.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: t.GetId(), AgentProfileUrl: DemoAgentProfile, Label: "demo agent",
	}))
	if err != nil {
		return nil, "", fmt.Errorf("demo API key: %w", err)
	}
	if err := os.WriteFile(keyFile, []byte(key.Msg.GetSecret()+"\n"), 0o600); err != nil {
		return nil, "", err
	}
	return t, key.Msg.GetSecret(), nil
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
