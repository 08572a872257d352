package tenants_test

import (
	"context"
	"slices"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

func violationFields(t *testing.T, vs []*tenantsv1.Violation) []string {
	t.Helper()
	out := []string{}
	for _, v := range vs {
		if v.GetCode() == "" || v.GetMessage() == "" {
			t.Errorf("violation without code or message: %v", v)
		}
		out = append(out, v.GetField()+" "+v.GetCode())
	}
	return out
}

// validate_only answers every rule settings and handlers break, in the
// order a set checks them (a set answers the first), and stores nothing.
func TestValidateOnly(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja Regras", "regras.localhost")

	bad := &tenantsv1.Settings{Links: []*tenantsv1.Link{{Type: "privacy_policy", Url: "ftp://x"}, {Type: "blog", Url: "https://x.example"}},
		ConsentPurposes: []string{"marketing", "spam"}, CheckoutTtlSeconds: 10, RateLimits: &tenantsv1.RateLimits{AgentBurst: -1}}
	r, err := s.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tn.GetId(), Settings: bad, ValidateOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"settings.links[0].url invalid_link", "settings.links[1].title invalid_link", "settings.consent_purposes[1] invalid_consent_purpose",
		"settings.checkout_ttl_seconds invalid_ttl", "settings.rate_limits.agent_burst invalid_rate_limit"}
	if got := violationFields(t, r.Msg.GetViolations()); !slices.Equal(got, want) || r.Msg.GetSettings() != nil {
		t.Fatalf("settings violations %q, want %q (settings %v)", got, want, r.Msg.GetSettings())
	}
	_, err = s.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tn.GetId(), Settings: bad}))
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_link")
	for _, ttl := range []int64{299, 30*24*3600 + 1} {
		r, err := s.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tn.GetId(), Settings: &tenantsv1.Settings{CheckoutTtlSeconds: ttl}, ValidateOnly: true}))
		if got := violationFields(t, r.Msg.GetViolations()); err != nil || !slices.Equal(got, []string{"settings.checkout_ttl_seconds invalid_ttl"}) {
			t.Fatalf("ttl %d: %v %q", ttl, err, got)
		}
	}
	if r, err := s.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: tn.GetId(), Settings: &tenantsv1.Settings{CheckoutTtlSeconds: 300}, ValidateOnly: true})); err != nil || len(r.Msg.GetViolations()) != 0 {
		t.Fatalf("5 minutes: %v %v", err, r.Msg.GetViolations())
	}

	h, err := s.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tn.GetId(), ValidateOnly: true, SecretsJson: "[]",
		Handler: &tenantsv1.PaymentHandler{Id: "cartão x", Name: "Cartão X", Spec: "http://x.example", AvailableInstrumentsJson: `[{"type":"card"}]`}}))
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"handler.id invalid_handler_id", "handler.name invalid_handler_name", "handler.spec invalid_url", "secrets_json invalid_secrets"}
	if got := violationFields(t, h.Msg.GetViolations()); !slices.Equal(got, want) || h.Msg.GetHandler() != nil {
		t.Fatalf("handler violations %q, want %q", got, want)
	}

	good := &tenantsv1.PaymentHandler{Id: "cartao_x", Name: "com.example.vendor.delegate_payment", AvailableInstrumentsJson: `[{"type":"card"}]`}
	if h, err := s.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tn.GetId(), ValidateOnly: true, Handler: good})); err != nil || len(h.Msg.GetViolations()) != 0 {
		t.Fatalf("a valid handler: %v %v", err, h.Msg.GetViolations())
	}

	// Nothing was stored.
	cur, err := s.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: tn.GetId()}))
	if err != nil || len(cur.Msg.GetSettings().GetLinks()) != 0 || cur.Msg.GetSettings().GetCheckoutTtlSeconds() != 6*3600 {
		t.Fatalf("settings after validate_only: %v %v", cur.Msg.GetSettings(), err)
	}
	d, err := s.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tn.GetId()}))
	if err != nil || slices.ContainsFunc(d.Msg.GetPaymentHandlers(), func(h *tenantsv1.PaymentHandler) bool { return h.GetId() == "cartao_x" }) {
		t.Fatalf("handlers after validate_only: %v %v", d.Msg.GetPaymentHandlers(), err)
	}
}
