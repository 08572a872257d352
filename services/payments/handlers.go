package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/handlersecrets"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// handler is one of the merchant's configured payment handlers (the
// public part the tenant registry serves in discovery).
type handler struct {
	ID          string
	Name        string
	Environment string
	Instruments []instrumentSpec
	Config      handlerConfig
	Tenant      *tenantsv1.Tenant
}

type instrumentSpec struct {
	Type        string `json:"type"`
	Constraints struct {
		Brands []string `json:"brands"`
	} `json:"constraints"`
}

// handlerConfig holds the config members the payments service reads. The
// config is public (agents see it): never put secrets here.
type handlerConfig struct {
	// Pix: lifetime of a charge (default 1800 s), the receiver's Pix key,
	// and the BR Code's merchant name and city (default: the tenant's
	// name, "SAO PAULO").
	ExpirationSeconds int    `json:"expiration_seconds"`
	PixKey            string `json:"pix_key"`
	MerchantName      string `json:"merchant_name"`
	MerchantCity      string `json:"merchant_city"`
	// Delegated cards: keys that sign delegated tokens besides the agent
	// profile's, as a JWK Set {"keys":[...]}, and the credential types
	// accepted (default "token", "delegate_token").
	JWKS                    json.RawMessage `json:"jwks"`
	AcceptedCredentialTypes []string        `json:"accepted_credential_types"`
}

const (
	defaultPixExpiration = 1800
	maxPixExpiration     = 7 * 24 * 3600
)

func (h handler) isPix() bool { return h.Name == bcpnames.PixHandler }

// merchantHandlers is what loadHandlers reads from the registry; cached
// per tenant and shared by concurrent payments, so never modified.
type merchantHandlers struct {
	handlers []handler
	tenant   *tenantsv1.Tenant
	// secrets are the handlers' opened secret settings, by handler id.
	secrets map[string]handlersecrets.Secrets
}

// loadHandlers returns the tenant's handlers, from the cache that Run keeps
// in line with the registry's change stream (handlers and tenants NOTIFY).
// Callers must not modify the handlers (copy one before changing it).
func (s *Service) loadHandlers(ctx context.Context, tenantID string) ([]handler, *tenantsv1.Tenant, error) {
	m, err := s.merchant(ctx, tenantID)
	if err != nil {
		return nil, nil, err
	}
	return m.handlers, m.tenant, nil
}

// merchant returns the tenant's handlers and their secrets (cached).
func (s *Service) merchant(ctx context.Context, tenantID string) (merchantHandlers, error) {
	return s.handlerCache.Get(ctx, tenantID, func(ctx context.Context) (merchantHandlers, error) {
		return s.fetchHandlers(ctx, tenantID)
	})
}

// fetchHandlers asks the tenant registry for the tenant's handlers and,
// when any has secrets, their secret settings.
func (s *Service) fetchHandlers(ctx context.Context, tenantID string) (merchantHandlers, error) {
	resp, err := s.tenants.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tenantID}))
	if err != nil {
		return merchantHandlers{}, err
	}
	t := resp.Msg.GetTenant()
	var out []handler
	for _, p := range resp.Msg.GetPaymentHandlers() {
		h := handler{ID: p.GetId(), Name: p.GetName(), Environment: p.GetEnvironment(), Tenant: t}
		if h.Environment == "" {
			h.Environment = "sandbox"
		}
		// Both were validated when the handler was set; a member we
		// cannot read is treated as absent rather than failing payments.
		_ = json.Unmarshal([]byte(p.GetAvailableInstrumentsJson()), &h.Instruments)
		_ = json.Unmarshal([]byte(p.GetConfigJson()), &h.Config)
		out = append(out, h)
	}
	m := merchantHandlers{handlers: out, tenant: t}
	if !slices.ContainsFunc(resp.Msg.GetPaymentHandlers(), (*tenantsv1.PaymentHandler).GetHasSecrets) {
		return m, nil
	}
	sec, err := s.tenants.GetPaymentHandlerSecrets(ctx, connect.NewRequest(&tenantsv1.GetPaymentHandlerSecretsRequest{TenantId: tenantID}))
	if err != nil {
		return merchantHandlers{}, err
	}
	m.secrets = make(map[string]handlersecrets.Secrets, len(sec.Msg.GetSecretsJson()))
	for id, raw := range sec.Msg.GetSecretsJson() {
		parsed, err := handlersecrets.Parse([]byte(raw))
		if err != nil {
			// Validated when set; unreadable now means no settings.
			s.log.ErrorContext(ctx, "payments: unreadable handler secrets", "tenant_id", tenantID, "handler_id", id, "err", err.Error())
			continue
		}
		m.secrets[id] = parsed
	}
	return m, nil
}

// instrument is the selected payment instrument as the agent sent it.
type instrument struct {
	ID         string          `json:"id"`
	HandlerID  string          `json:"handler_id"`
	Type       string          `json:"type"`
	Display    json.RawMessage `json:"display"`
	Credential json.RawMessage `json:"credential"`
	raw        []byte
}

type cardDisplay struct {
	Brand      string `json:"brand"`
	LastDigits string `json:"last_digits"`
}

// failure is a payment_failed outcome: the attempt is stored as FAILED
// with this message (Portuguese: agents show it to buyers).
type failure struct {
	code string
	msg  string
}

func (f *failure) Error() string { return f.code + ": " + f.msg }

func failed(format string, args ...any) *failure {
	return &failure{code: codePaymentFailed, msg: fmt.Sprintf(format, args...)}
}

const codePaymentFailed = "payment_failed"

// instrumentOf is the request's instrument and the text its request hash
// binds. The credential stays as the agent sent it: this service alone
// reads it (cardflow.go).
func instrumentOf(m *paymentsv1.StartPaymentRequest) (instrument, string, *failure) {
	p := m.GetInstrument()
	if p == nil {
		return instrument{}, "", failed("Envie exatamente um meio de pagamento (recebidos 0).")
	}
	in := instrument{ID: p.GetId(), HandlerID: p.GetHandlerId(), Type: p.GetType()}
	if c := p.GetCredential(); len(c) > 0 {
		in.Credential = c
	}
	if p.GetBrand() != "" || p.GetLastDigits() != "" {
		in.Display, _ = json.Marshal(cardDisplay{Brand: p.GetBrand(), LastDigits: p.GetLastDigits()})
	}
	// The instrument as one object, as the raw card check reads it (and
	// the request hash binds it).
	raw, err := json.Marshal(in)
	if err != nil {
		return instrument{}, string(p.GetCredential()), failed("O meio de pagamento enviado não é um objeto JSON válido.")
	}
	in.raw = raw
	if in.HandlerID == "" {
		return instrument{}, string(raw), failed("O meio de pagamento precisa de handler_id.")
	}
	if in.Type == "" {
		return instrument{}, string(raw), failed("O meio de pagamento precisa de type.")
	}
	return in, string(raw), nil
}

// resolveHandler finds the instrument's handler among the merchant's and
// checks that the handler allows the instrument type and card brand.
func resolveHandler(handlers []handler, in instrument) (handler, *failure) {
	i := slices.IndexFunc(handlers, func(h handler) bool { return h.ID == in.HandlerID })
	if i < 0 {
		return handler{}, failed("O handler de pagamento %q não está disponível nesta loja.", in.HandlerID)
	}
	h := handlers[i]
	if len(h.Instruments) > 0 {
		j := slices.IndexFunc(h.Instruments, func(s instrumentSpec) bool { return s.Type == in.Type })
		if j < 0 {
			return h, failed("O handler %q não aceita meios de pagamento do tipo %q.", h.ID, in.Type)
		}
		if brands := h.Instruments[j].Constraints.Brands; len(brands) > 0 && len(in.Display) > 0 {
			var d cardDisplay
			if json.Unmarshal(in.Display, &d) == nil && d.Brand != "" && !brandAllowed(brands, d.Brand) {
				return h, failed("A bandeira %q não é aceita por esta loja (aceitas: %s).", d.Brand, strings.Join(brands, ", "))
			}
		}
	}
	return h, nil
}

func brandAllowed(brands []string, brand string) bool {
	return slices.ContainsFunc(brands, func(b string) bool { return strings.EqualFold(b, brand) })
}

// brandsFor returns the brand constraint of the handler's instrument type.
func (h handler) brandsFor(typ string) []string {
	for _, s := range h.Instruments {
		if s.Type == typ {
			return s.Constraints.Brands
		}
	}
	return nil
}
