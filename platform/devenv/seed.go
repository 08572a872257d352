package devenv

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
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
// platform offers, with the demo merchant's payment handler names. %s is
// its signing_keys: the demo wallet's public key (demoWallet).
const demoAgentProfile = `{"ucp":{"version":"2026-07-28",
 "services":{"br.dev.bcp.shopping":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/overview","transport":"mcp","schema":"https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
 "capabilities":{
  "br.dev.bcp.shopping.checkout":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/checkout","schema":"https://bcp.dev.br/draft/schemas/shopping/checkout.json"}],
  "br.dev.bcp.shopping.fulfillment":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/fulfillment","schema":"https://bcp.dev.br/draft/schemas/shopping/fulfillment.json","extends":"br.dev.bcp.shopping.checkout"}],
  "br.dev.bcp.shopping.discount":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/discount","schema":"https://bcp.dev.br/draft/schemas/shopping/discount.json","extends":["br.dev.bcp.shopping.checkout","br.dev.bcp.shopping.cart"]}],
  "br.dev.bcp.shopping.buyer_consent":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/buyer-consent","schema":"https://bcp.dev.br/draft/schemas/shopping/buyer_consent.json","extends":"br.dev.bcp.shopping.checkout"}],
  "br.dev.bcp.shopping.ap2_mandate":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/ap2-mandates","schema":"https://bcp.dev.br/draft/schemas/shopping/ap2_mandate.json","extends":"br.dev.bcp.shopping.checkout","config":{"vp_formats_supported":{"dc+sd-jwt":{}}}}],
  "br.dev.bcp.shopping.catalog.search":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/catalog/search","schema":"https://bcp.dev.br/draft/schemas/shopping/catalog_search.json"}],
  "br.dev.bcp.shopping.catalog.lookup":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/catalog/lookup","schema":"https://bcp.dev.br/draft/schemas/shopping/catalog_lookup.json"}],
  "br.dev.bcp.shopping.cart":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/cart","schema":"https://bcp.dev.br/draft/schemas/shopping/cart.json"}]},
 "payment_handlers":{
  "br.dev.bcp.pix":[{"id":"agent_pix","version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/pix","schema":"https://bcp.dev.br/draft/schemas/handlers/pix.json"}],
  "com.example.vendor.delegate_payment":[{"id":"agent_card","version":"2026-07-28","spec":"https://example.vendor.com/specs/delegate-payment","schema":"https://example.vendor.com/schemas/delegate-payment-config.json"}]}},
 "signing_keys":[%s]}
`

// DemoWalletFile is the demo agent's test wallet key (PEM, P-256) in the
// data directory: its public half is the demo agent profile's signing key,
// so `bcpctl agent mandate --key-file .bcp/demo-wallet.pem` makes mandates
// the demo merchant accepts once AP2 is on. A development key only.
const DemoWalletFile = "demo-wallet.pem"

// demoWallet loads the wallet key from dataDir, making it on first use.
func demoWallet(dataDir string) (*ecdsa.PrivateKey, error) {
	path := filepath.Join(dataDir, DemoWalletFile)
	if b, err := os.ReadFile(path); err == nil {
		k, err := agentclient.ParsePrivateKeyPEM(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s: not a P-256 key", path)
		}
		return ec, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k, err := agentclient.GenerateES256()
	if err != nil {
		return nil, err
	}
	pemBytes, err := agentclient.MarshalPrivateKeyPEM(k)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		return nil, err
	}
	return k, nil
}

// DemoAgentHandler serves the demo agent profile, with the demo wallet's
// key (made in dataDir on first use) as its signing key.
func DemoAgentHandler(dataDir string) (string, http.Handler, error) {
	k, err := demoWallet(dataDir)
	if err != nil {
		return "", nil, fmt.Errorf("demo wallet: %w", err)
	}
	// kid: the RFC 7638 thumbprint, what bcpctl agent mandate assumes
	// without --kid.
	jwk, err := agentclient.PublicJWK(k, "")
	if err != nil {
		return "", nil, err
	}
	doc := []byte(fmt.Sprintf(demoAgentProfile, jwk))
	return "GET " + demoAgentPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(doc)
	}), nil
}

// SeedDemo creates the demo merchant through the services' APIs when it
// does not exist yet, and returns its tenant, the demo agent API key
// (kept in dataDir so every run can print it) and whether it created it.
// demoBase is the merchant's public origin: its policy links point at the
// pages the platform serves there.
func SeedDemo(ctx context.Context, c *platform.Clients, dataDir, agentProfile, demoBase string) (*tenantsv1.Tenant, string, bool, error) {
	t, key, err := seedDemo(ctx, c, dataDir, agentProfile, demoBase)
	if errors.Is(err, errExists) {
		return t, key, false, nil
	}
	return t, key, err == nil, err
}

var errExists = errors.New("devenv: demo merchant exists")

func seedDemo(ctx context.Context, c *platform.Clients, dataDir, agentProfile, demoBase string) (*tenantsv1.Tenant, string, error) {
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
	// The go-live checklist wants a payment handler whose connection test
	// passed: the demo's are tested at the PSP simulator now (best effort:
	// without a simulator the admin's "Primeiros passos" says to test them).
	if c.Payments != nil {
		testCtx, cancel := context.WithTimeout(tctx, 30*time.Second)
		for _, id := range []string{"pix_demo", "cartao_demo"} {
			_, _ = c.Payments.TestHandler(testCtx, connect.NewRequest(&paymentsv1.TestHandlerRequest{HandlerId: id, BaseUrl: demoBase}))
		}
		cancel()
	}
	for _, p := range demoCatalog {
		if _, err := c.Catalog.CreateProduct(tctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: p})); err != nil {
			return nil, "", fmt.Errorf("demo product %s: %w", p.GetId(), err)
		}
	}
	if _, err := c.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: t.GetId(), Settings: &tenantsv1.Settings{
		Links: []*tenantsv1.Link{
			// Pages the platform serves on the merchant's host (web,
			// /politicas/...), at the public port bcpd dev listens on.
			{Type: "privacy_policy", Url: demoBase + "/politicas/privacidade"},
			{Type: "terms_of_service", Url: demoBase + "/politicas/termos"},
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

// demoCatalog is a small shop with categories, enough for search to mean
// something. The first four products' variant ids are the ones the README,
// the demo history and the tests use: keep them.
var demoCatalog = append([]*catalogv1.Product{
	{
		Id: "prd_camiseta", Title: "Camiseta Básica Algodão", Active: true, Category: demoCategory("Vestuário"),
		Description: "Camiseta 100% algodão, fio 30.1 penteado.",
		Variants: []*catalogv1.Variant{
			{Id: "var_camiseta_p", Sku: "CAM-P", Title: "Camiseta Básica Algodão — P", Price: 5990, Stock: 40, Active: true},
			{Id: "var_camiseta_m", Sku: "CAM-M", Title: "Camiseta Básica Algodão — M", Price: 5990, Stock: 40, Active: true},
			{Id: "var_camiseta_g", Sku: "CAM-G", Title: "Camiseta Básica Algodão — G", Price: 6490, Stock: 3, Active: true},
		},
	},
	{
		Id: "prd_caneca", Title: "Caneca de Cerâmica 350 ml", Active: true, Category: demoCategory("Cozinha"),
		Description: "Caneca de cerâmica branca, vai ao micro-ondas e à lava-louças.",
		Variants:    []*catalogv1.Variant{{Id: "var_caneca_350", Sku: "CAN-350", Title: "Caneca de Cerâmica 350 ml", Price: 3990, Stock: 100, Active: true}},
	},
	{
		Id: "prd_cafe", Title: "Café Especial Torrado 250 g", Active: true, Category: demoCategory("Mercearia"),
		Description: "Café arábica do sul de Minas, torra média, em grãos.",
		Variants:    []*catalogv1.Variant{{Id: "var_cafe_250", Sku: "CAF-250", Title: "Café Especial Torrado 250 g", Price: 4500, Stock: 25, Active: true}},
	},
	{
		Id: "prd_chinelo", Title: "Chinelo de Borracha", Active: true, Category: demoCategory("Calçados"),
		Description: "Chinelo de borracha natural, tira reforçada.",
		Variants:    []*catalogv1.Variant{{Id: "var_chinelo_40", Sku: "CHI-40", Title: "Chinelo de Borracha 39/40", Price: 2990, Stock: 0, Active: true}},
	},
},
	demoProduct("prd_camiseta_preta", "Camiseta Preta Estampada", "Vestuário", "Camiseta preta de algodão com estampa de araras.",
		demoVariant("var_camiseta_preta_m", "CAMP-M", "M", 6990, 12), demoVariant("var_camiseta_preta_g", "CAMP-G", "G", 6990, 8)),
	demoProduct("prd_camiseta_infantil", "Camiseta Infantil Dinossauro", "Vestuário", "Camiseta infantil de algodão, estampa de dinossauro.",
		demoVariant("var_camiseta_inf_4", "CAMI-4", "4 anos", 3990, 10), demoVariant("var_camiseta_inf_8", "CAMI-8", "8 anos", 3990, 6)),
	demoProduct("prd_moletom", "Moletom com Capuz Cinza", "Vestuário", "Moletom flanelado com capuz e bolso canguru.",
		demoVariant("var_moletom_m", "MOL-M", "M", 15990, 5), demoVariant("var_moletom_g", "MOL-G", "G", 15990, 2)),
	demoProduct("prd_bermuda", "Bermuda de Sarja Bege", "Vestuário", "Bermuda de sarja com elastano.",
		demoVariant("var_bermuda_40", "BER-40", "40", 8990, 7), demoVariant("var_bermuda_42", "BER-42", "42", 8990, 0)),
	demoProduct("prd_meia", "Meia Cano Médio (3 pares)", "Vestuário", "Kit com três pares de meias de algodão.",
		demoVariant("var_meia_kit", "MEIA-3", "Tamanho único", 2990, 30)),
	demoProduct("prd_bone", "Boné Aba Curva Azul-Marinho", "Acessórios", "Boné de brim com regulagem.",
		demoVariant("var_bone", "BONE-AZ", "Único", 4990, 9)),
	demoProduct("prd_mochila", "Mochila de Lona 20 L", "Acessórios", "Mochila de lona com compartimento para notebook de 14\".",
		demoVariant("var_mochila", "MOC-20", "Verde-oliva", 18990, 4)),
	demoProduct("prd_oculos", "Óculos de Sol Polarizado", "Acessórios", "Armação de acetato, lentes polarizadas com proteção UV400.",
		demoVariant("var_oculos", "OCU-POL", "Tartaruga", 12990, 6)),
	demoProduct("prd_carteira", "Carteira de Couro Legítimo", "Acessórios", "Carteira masculina de couro, seis divisórias.",
		demoVariant("var_carteira", "CART-CO", "Marrom", 9990, 11)),
	demoProduct("prd_tenis", "Tênis de Corrida Leve", "Calçados", "Tênis com amortecimento e cabedal respirável.",
		demoVariant("var_tenis_39", "TEN-39", "39", 29990, 3), demoVariant("var_tenis_41", "TEN-41", "41", 29990, 5)),
	demoProduct("prd_sandalia", "Sandália de Couro Trançada", "Calçados", "Sandália feminina de couro trançado à mão.",
		demoVariant("var_sandalia_36", "SAN-36", "36", 13990, 4)),
	demoProduct("prd_bota", "Bota de Couro Cano Curto", "Calçados", "Bota de couro com solado de borracha.",
		demoVariant("var_bota_41", "BOT-41", "41", 34990, 2)),
	demoProduct("prd_caneca_esmaltada", "Caneca Esmaltada Retrô", "Cozinha", "Caneca de ágata esmaltada, 300 ml, para acampar.",
		demoVariant("var_caneca_esmaltada", "CAN-ESM", "Branca com borda azul", 4590, 15)),
	demoProduct("prd_xicara", "Jogo de Xícaras de Porcelana (6)", "Cozinha", "Seis xícaras de café de porcelana com pires.",
		demoVariant("var_xicara_jogo", "XIC-6", "Branco", 11990, 7)),
	demoProduct("prd_prensa", "Prensa Francesa de Vidro 600 ml", "Cozinha", "Cafeteira prensa francesa de vidro borossilicato e aço inox.",
		demoVariant("var_prensa", "PREN-600", "600 ml", 13990, 5)),
	demoProduct("prd_panela", "Panela de Ferro Fundido 24 cm", "Cozinha", "Panela de ferro fundido pré-curada, com tampa.",
		demoVariant("var_panela", "PAN-FF24", "24 cm", 27990, 3)),
	demoProduct("prd_tabua", "Tábua de Corte de Bambu", "Cozinha", "Tábua de bambu com canaleta para líquidos.",
		demoVariant("var_tabua", "TAB-BAM", "40 x 28 cm", 6990, 14)),
	demoProduct("prd_garrafa", "Garrafa Térmica Inox 1 L", "Cozinha", "Mantém o café quente por 12 horas.",
		demoVariant("var_garrafa", "GAR-1L", "Preta", 8990, 10)),
	demoProduct("prd_cafe_moido", "Café Moído Tradicional 500 g", "Mercearia", "Café torrado e moído, torra escura.",
		demoVariant("var_cafe_moido", "CAF-M500", "500 g", 3290, 40)),
	demoProduct("prd_cafe_capsula", "Café em Cápsulas Intenso (10)", "Mercearia", "Dez cápsulas compatíveis, intensidade 10.",
		demoVariant("var_cafe_capsula", "CAF-CAP10", "10 cápsulas", 2490, 0)),
	demoProduct("prd_chocolate", "Chocolate 70% Cacau 100 g", "Mercearia", "Chocolate amargo de cacau baiano.",
		demoVariant("var_chocolate", "CHO-70", "100 g", 1890, 50)),
	demoProduct("prd_doce_leite", "Doce de Leite Mineiro 400 g", "Mercearia", "Doce de leite cremoso, receita de fazenda.",
		demoVariant("var_doce_leite", "DDL-400", "400 g", 2290, 20)),
	demoProduct("prd_mel", "Mel Silvestre 500 g", "Mercearia", "Mel puro de florada silvestre.",
		demoVariant("var_mel", "MEL-500", "500 g", 3490, 12)),
	demoProduct("prd_toalha", "Toalha de Banho Felpuda", "Casa", "Toalha de algodão egípcio, 70 x 140 cm.",
		demoVariant("var_toalha_branca", "TOA-BR", "Branca", 5990, 18), demoVariant("var_toalha_azul", "TOA-AZ", "Azul", 5990, 9)),
	demoProduct("prd_almofada", "Almofada de Linho 45 cm", "Casa", "Capa de linho lavado com enchimento de fibra.",
		demoVariant("var_almofada", "ALM-45", "Cru", 7990, 8)),
	demoProduct("prd_vela", "Vela Aromática de Lavanda", "Casa", "Vela de cera de soja, 40 horas de queima.",
		demoVariant("var_vela", "VEL-LAV", "Lavanda", 4990, 16)),
	demoProduct("prd_luminaria", "Luminária de Mesa Articulada", "Casa", "Luminária de metal com lâmpada LED inclusa.",
		demoVariant("var_luminaria", "LUM-ART", "Preta", 15990, 4)),
	demoProduct("prd_rede", "Rede de Descanso Nordestina", "Casa", "Rede de algodão tecida no Ceará, com varandas.",
		demoVariant("var_rede", "REDE-CE", "Casal", 18990, 2)),
	demoProduct("prd_caderno", "Caderno Pautado Capa Dura", "Papelaria", "Caderno A5 de 160 folhas pautadas.",
		demoVariant("var_caderno", "CAD-A5", "A5", 3490, 25)),
	demoProduct("prd_caneta", "Caneta Tinteiro Clássica", "Papelaria", "Caneta tinteiro com pena de aço e conversor.",
		demoVariant("var_caneta", "CAN-TIN", "Azul", 8990, 6)),
	demoProduct("prd_agenda", "Agenda Semanal 2027", "Papelaria", "Agenda semanal com capa de tecido.",
		demoVariant("var_agenda", "AGE-2027", "Verde", 5490, 10)),
	demoProduct("prd_sabonete", "Sabonete Artesanal de Erva-Doce", "Banho", "Sabonete vegetal feito à mão, 120 g.",
		demoVariant("var_sabonete", "SAB-ERV", "120 g", 1590, 35)),
	demoProduct("prd_shampoo", "Shampoo Sólido de Alecrim", "Banho", "Shampoo em barra para cabelos oleosos.",
		demoVariant("var_shampoo", "SHA-ALE", "90 g", 3990, 14)),
)

func demoCategory(c string) *string { return &c }

func demoProduct(id, title, category, description string, vs ...*catalogv1.Variant) *catalogv1.Product {
	for _, v := range vs {
		v.Title = title + " — " + v.Title
	}
	return &catalogv1.Product{Id: id, Title: title, Category: demoCategory(category), Description: description, Active: true, Variants: vs}
}

func demoVariant(id, sku, title string, price, stock int64) *catalogv1.Variant {
	return &catalogv1.Variant{Id: id, Sku: sku, Title: title, Price: price, Stock: stock, Active: true}
}

// DemoAdminEmail is the demo merchant's admin user.
const DemoAdminEmail = "admin@" + DemoDomain

// SeedDemoAdmin invites the demo merchant's admin user once and returns
// its e-mail and initial password (kept in dataDir/demo-admin-password so
// every run can print it; the database holds only its argon2id hash).
// Unlike the invitations of real merchants' users (bcpctl user invite,
// the admin's Equipe: a one-time link to choose the password), the demo
// admin gets a password, so a developer signs in as soon as make run is
// up.
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
