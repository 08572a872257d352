// Package loadkit is what simulated agents need to buy from seeded
// merchants: seeding development merchants through the operator APIs,
// the agent's profile, and the arguments and answers of a whole purchase
// over MCP. The load generator (cmd/bcpbench) and the fault injector
// (platform/chaos) both use it.
package loadkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	segjson "github.com/segmentio/encoding/json"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1/catalogv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1/pricingv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// Merchant is one seeded development merchant.
type Merchant struct {
	Host     string
	TenantID uuid.UUID
	Pix      string // Pix handler id
	PacRate  string // shipping rate id
	APIKey   string
}

// RemoteClients reaches a running bcpd's internal listener (base URL)
// with token (operator or internal).
func RemoteClients(base, token string) *platform.Clients {
	return RemoteClientsAt(map[string]string{platform.Tenants: base, platform.Catalog: base, platform.Pricing: base, platform.Payments: base}, token)
}

// RemoteClientsAt is RemoteClients for services in processes of their
// own: the tenants, catalog, pricing and payments base URLs by service name.
func RemoteClientsAt(urls map[string]string, token string) *platform.Clients {
	opts := connect.WithInterceptors(svcauth.Client(token))
	hc := &http.Client{Timeout: 30 * time.Second}
	return &platform.Clients{
		Tenants:  tenantsv1connect.NewTenantServiceClient(hc, urls[platform.Tenants], opts),
		Catalog:  catalogv1connect.NewCatalogServiceClient(hc, urls[platform.Catalog], opts),
		Pricing:  pricingv1connect.NewPricingServiceClient(hc, urls[platform.Pricing], opts),
		Payments: paymentsv1connect.NewPaymentsServiceClient(hc, urls[platform.Payments], opts),
	}
}

// AgentProfileJSON is the simulated agent's profile: checkout,
// fulfillment and discount (and order, with its webhook, when
// orderWebhookURL is set); Pix and card handlers; signing key jwk.
func AgentProfileJSON(jwk, orderWebhookURL string) string {
	return agentProfileJSON(jwk, orderWebhookURL, false)
}

// CatalogAgentProfileJSON is AgentProfileJSON's profile that also speaks
// catalog search and lookup (bcpbench search).
func CatalogAgentProfileJSON(jwk string) string {
	return agentProfileJSON(jwk, "", true)
}

func agentProfileJSON(jwk, orderWebhookURL string, catalog bool) string {
	cap := func(name, extends, config string) string {
		s := fmt.Sprintf(`"br.dev.bcp.shopping.%s":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/%s","schema":"https://bcp.dev.br/draft/schemas/shopping/%s.json"`, name, name, name)
		if extends != "" {
			s += `,"extends":"` + extends + `"`
		}
		if config != "" {
			s += `,"config":` + config
		}
		return s + `}]`
	}
	caps := []string{cap("checkout", "", ""), cap("fulfillment", "br.dev.bcp.shopping.checkout", ""), cap("discount", "br.dev.bcp.shopping.checkout", "")}
	if catalog {
		caps = append(caps, `"br.dev.bcp.shopping.catalog.search":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/catalog/search","schema":"https://bcp.dev.br/draft/schemas/shopping/catalog_search.json"}]`,
			`"br.dev.bcp.shopping.catalog.lookup":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/catalog/lookup","schema":"https://bcp.dev.br/draft/schemas/shopping/catalog_lookup.json"}]`)
	}
	if orderWebhookURL != "" {
		hook, _ := json.Marshal(map[string]string{"webhook_url": orderWebhookURL})
		caps = append([]string{cap("order", "", string(hook))}, caps...)
	}
	return `{"ucp":{"version":"2026-07-28",
	"services":{"br.dev.bcp.shopping":[{"version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/overview","transport":"mcp","schema":"https://bcp.dev.br/draft/services/shopping/mcp.openrpc.json"}]},
	"capabilities":{` + strings.Join(caps, ",") + `},
	"payment_handlers":{"br.dev.bcp.pix":[{"id":"agent_pix","version":"2026-07-28","spec":"https://bcp.dev.br/draft/specification/pix","schema":"https://bcp.dev.br/draft/schemas/handlers/pix.json"}],
	"com.example.vendor.delegate_payment":[{"id":"agent_card","version":"2026-07-28","spec":"https://example.vendor.com/specs/delegate-payment","schema":"https://example.vendor.com/schemas/delegate-payment-config.json"}]}},
	"signing_keys":[` + jwk + `]}`
}

// LoadRateLimits are a load merchant's rate limits: several times what one
// machine serves a merchant of a 20-merchant run, so a load run measures
// the platform (the limiter's leases included, sized from these limits)
// and not its refusals. With the defaults (an agent 100 requests/s per
// merchant), bcpbench's create_checkout-only phase at 20 merchants was
// refused 209 times once it passed 2 000 calls/s (issue 23).
var LoadRateLimits = &tenantsv1.RateLimits{MerchantRatePerSecond: 1000, MerchantBurst: 2000, AgentRatePerSecond: 1000, AgentBurst: 2000}

// SeedMerchant onboards one development merchant at host: a catalog (one
// variant, var_cam at R$ 59,90, stock large enough for any run), two
// shipping rates (SEDEX, PAC), the discount code BEMVINDO10, a sandbox Pix
// handler and a sandbox card handler ("card"), rate limits of a load
// merchant (LoadRateLimits), and an API key bound to the agent profile.
func SeedMerchant(ctx context.Context, ops *platform.Clients, host, profile string) (*Merchant, error) {
	tr, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja " + host, Domains: []string{host}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		return nil, err
	}
	slug := tr.Msg.GetTenant().GetSlug()
	m := &Merchant{Host: host, TenantID: uuid.MustParse(tr.Msg.GetTenant().GetId()), Pix: "pix_" + slug}
	tid := m.TenantID.String()
	if _, err := ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid,
		Handler: &tenantsv1.PaymentHandler{Id: m.Pix, Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}})); err != nil {
		return nil, err
	}
	if _, err := ops.Tenants.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid,
		Handler: &tenantsv1.PaymentHandler{Id: "card", Name: "com.example.vendor.delegate_payment", Position: 1,
			AvailableInstrumentsJson: `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`}})); err != nil {
		return nil, err
	}
	if _, err := ops.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tid, Settings: &tenantsv1.Settings{
		Links:      []*tenantsv1.Link{{Type: "privacy_policy", Url: "https://" + host + "/privacidade"}, {Type: "terms_of_service", Url: "https://" + host + "/termos"}},
		RateLimits: LoadRateLimits,
	}})); err != nil {
		return nil, err
	}
	tctx := tenancy.With(ctx, m.TenantID)
	if _, err := ops.Catalog.CreateProduct(tctx, connect.NewRequest(&catalogv1.CreateProductRequest{Product: &catalogv1.Product{
		Id: "prd_cam", Title: "Camiseta", Active: true,
		Variants: []*catalogv1.Variant{{Id: "var_cam", Sku: "CAM", Title: "Camiseta M", Price: 5990, Stock: 100_000_000, Active: true}},
	}})); err != nil {
		return nil, err
	}
	for _, rate := range []*pricingv1.ShippingRate{
		{Title: "SEDEX", Price: 3000, MinDays: 1, MaxDays: 3, Active: true, Carrier: "Correios"},
		{Title: "PAC", Price: 1500, MinDays: 5, MaxDays: 9, Active: true, Carrier: "Correios"},
	} {
		resp, err := ops.Pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rate}))
		if err != nil {
			return nil, err
		}
		if rate.GetTitle() == "PAC" {
			m.PacRate = resp.Msg.GetRate().GetId()
		}
	}
	if _, err := ops.Pricing.SetDiscount(tctx, connect.NewRequest(&pricingv1.SetDiscountRequest{Discount: &pricingv1.Discount{
		Code: "BEMVINDO10", Title: "10% de boas-vindas", Kind: pricingv1.Discount_KIND_PERCENT, Value: 1000, Active: true, Combinable: true, Priority: 1,
	}})); err != nil {
		return nil, err
	}
	key, err := ops.Tenants.CreateAPIKey(ctx, connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{Tenant: host, AgentProfileUrl: profile, Label: "bcpbench"}))
	if err != nil {
		return nil, err
	}
	m.APIKey = key.Msg.GetSecret()
	return m, nil
}

// CheckoutView is the part of a checkout the simulated agents read.
type CheckoutView struct {
	UCP struct {
		Status string `json:"status"`
	} `json:"ucp"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	LineItems []struct {
		ID string `json:"id"`
	} `json:"line_items"`
	Fulfillment struct {
		Methods []struct {
			ID                    string `json:"id"`
			SelectedDestinationID string `json:"selected_destination_id"`
			Groups                []struct {
				ID string `json:"id"`
			} `json:"groups"`
		} `json:"methods"`
	} `json:"fulfillment"`
	Messages []struct {
		Type string `json:"type"`
		Code string `json:"code"`
	} `json:"messages"`
	Payment struct {
		Instruments []struct {
			Display json.RawMessage `json:"display"`
		} `json:"instruments"`
	} `json:"payment"`
	Order *struct {
		ID string `json:"id"`
	} `json:"order"`
}

// PixAttemptID is the payment attempt of a Pix in progress ("" if none).
func (v *CheckoutView) PixAttemptID() string {
	if len(v.Payment.Instruments) != 1 {
		return ""
	}
	return bcp.PixAttemptID(v.Payment.Instruments[0].Display)
}

// Decode reads a tools/call answer: the checkout, or a failure code —
// "transport"/"cancelled" without an answer, "http_<status>[:code]",
// "rpc_<code>" or the error's data code, "tool_error", "bad_result",
// "bcp_error[:<first error message code>]".
func Decode(ctx context.Context, resp *agentclient.Response, err error) (*CheckoutView, string) {
	var view CheckoutView
	switch {
	case err != nil:
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return nil, "cancelled"
		}
		return nil, "transport"
	case resp.Status != http.StatusOK:
		code := "http_" + strconv.Itoa(resp.Status)
		if resp.Error != nil && resp.Error.DataCode() != "" {
			code += ":" + resp.Error.DataCode()
		}
		return nil, code
	case resp.Error != nil:
		if c := resp.Error.DataCode(); c != "" {
			return nil, c
		}
		return nil, "rpc_" + strconv.Itoa(resp.Error.Code)
	}
	// One pass: the result's structured content straight into the view.
	var res struct {
		IsError           bool          `json:"isError"`
		StructuredContent *CheckoutView `json:"structuredContent"`
	}
	res.StructuredContent = &view
	if segjson.Unmarshal(resp.Result, &res) != nil {
		return nil, "bad_result"
	}
	if res.IsError {
		return nil, "tool_error"
	}
	if view.UCP.Status == "error" {
		for _, m := range view.Messages {
			if m.Type == "error" {
				return &view, "bcp_error:" + m.Code
			}
		}
		return &view, "bcp_error"
	}
	return &view, ""
}

// Address is the buyer's shipping address.
var Address = map[string]any{"street_address": "Rua Augusta, 500", "address_locality": "São Paulo", "address_region": "SP",
	"postal_code": "01305-000", "address_country": "BR"}

// CreateArgs are create_checkout's arguments: one var_cam for email.
func CreateArgs(email string) map[string]any {
	return map[string]any{"checkout": map[string]any{
		"line_items": []any{map[string]any{"item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":      map[string]any{"email": email},
	}}
}

// CreateShippedArgs are create_checkout's arguments with the shipping
// address already (the README's flow: one update then chooses the
// option).
func CreateShippedArgs(email string) map[string]any {
	args := CreateArgs(email)
	args["checkout"].(map[string]any)["fulfillment"] = map[string]any{"methods": []any{map[string]any{"type": "shipping", "destinations": []any{Address}}}}
	return args
}

func lineAndBuyer(li, email string) map[string]any {
	return map[string]any{
		"line_items": []any{map[string]any{"id": li, "item": map[string]any{"id": "var_cam"}, "quantity": 1}},
		"buyer":      map[string]any{"email": email},
	}
}

// AddressArgs are the first update_checkout's: the shipping address for
// line item li.
func AddressArgs(id, li, email string) map[string]any {
	co := lineAndBuyer(li, email)
	co["fulfillment"] = map[string]any{"methods": []any{map[string]any{"type": "shipping", "line_item_ids": []any{li}, "destinations": []any{Address}}}}
	return map[string]any{"id": id, "checkout": co}
}

// OptionArgs are the last update_checkout's: the shipping option rate of
// c's first method and group, and (discount) the code BEMVINDO10. ok is
// false when c shows no shipping options.
func OptionArgs(c *CheckoutView, rate, email string, discount bool) (map[string]any, bool) {
	if len(c.LineItems) != 1 || len(c.Fulfillment.Methods) == 0 || len(c.Fulfillment.Methods[0].Groups) == 0 {
		return nil, false
	}
	li, mth := c.LineItems[0].ID, c.Fulfillment.Methods[0]
	co := lineAndBuyer(li, email)
	co["fulfillment"] = map[string]any{"methods": []any{map[string]any{"id": mth.ID, "type": "shipping", "line_item_ids": []any{li},
		"selected_destination_id": mth.SelectedDestinationID,
		"groups":                  []any{map[string]any{"id": mth.Groups[0].ID, "selected_option_id": rate}}}}}
	if discount {
		co["discounts"] = map[string]any{"codes": []any{"BEMVINDO10"}}
	}
	return map[string]any{"id": c.ID, "checkout": co}, true
}

// CardInstrument is a delegated card token; the simulated processor
// approves tokens ending in 4242. Tokens are single use: one per purchase.
func CardInstrument(token string) map[string]any {
	return map[string]any{"id": "pi_card", "handler_id": "card", "type": "card",
		"display":    map[string]any{"brand": "visa", "last_digits": "4242"},
		"credential": map[string]any{"type": "token", "token": token}}
}

// PixInstrument pays with the merchant's Pix handler.
func PixInstrument(handlerID string) map[string]any {
	return map[string]any{"id": "pi_pix", "handler_id": handlerID, "type": "pix"}
}

// CompleteArgs are complete_checkout's arguments with idempotency key key.
func CompleteArgs(id, key string, instrument map[string]any) map[string]any {
	return map[string]any{"id": id, "meta": map[string]any{"idempotency-key": key},
		"checkout": map[string]any{"payment": map[string]any{"instruments": []any{instrument}}}}
}
