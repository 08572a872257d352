package e2e

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// Direct calls between co-hosted services (bcpd all) and calls over the
// internal connect handlers (HTTPInProcess, the path one role per
// process takes) give the same answers: the same refusals for a missing
// tenant and a token without the right, the same domain error codes and
// fields, the same messages. (internal/direct's tests check that caller
// and service never share a message.)
func TestDirectCallsMatchHTTP(t *testing.T) {
	d := testdb.New(t)
	direct := startPlatformWith(t, platform.AllServices, d.AppURL, nil, nil)
	viaHTTP := startPlatformWith(t, platform.AllServices, d.AppURL, nil, func(c *platform.Config) { c.HTTPInProcess = true })
	m := setupMerchant(t, direct, "Loja Direta", "direta.localhost", 0)
	ctx := context.Background()
	tctx := tenancy.With(ctx, m.tenantID)

	type outcome struct {
		code   connect.Code
		domain string // apperr code
		field  string
		msg    proto.Message
	}
	call := func(r *platform.Running, token string, f func(*platform.Clients) (proto.Message, error)) outcome {
		msg, err := f(r.ClientsWithToken(token))
		if err != nil {
			e := apperr.As(err)
			return outcome{code: connect.CodeOf(err), domain: e.Code, field: e.Field}
		}
		return outcome{msg: msg}
	}
	cases := []struct {
		name      string
		token     string
		f         func(*platform.Clients) (proto.Message, error)
		wantCode  connect.Code // 0: a success
		wantField string
	}{
		{"tenant procedure without a tenant", internalToken, func(c *platform.Clients) (proto.Message, error) {
			r, err := c.Payments.GetPayment(ctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: "pay_01"}))
			return msgOf(r, err)
		}, connect.CodeInvalidArgument, ""},
		{"operator procedure with the internal token", internalToken, func(c *platform.Clients) (proto.Message, error) {
			r, err := c.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "X", Domains: []string{"x.localhost"}}))
			return msgOf(r, err)
		}, connect.CodePermissionDenied, ""},
		{"unknown token", "not-a-token", func(c *platform.Clients) (proto.Message, error) {
			r, err := c.Tenants.Ping(ctx, connect.NewRequest(&tenantsv1.PingRequest{}))
			return msgOf(r, err)
		}, connect.CodeUnauthenticated, ""},
		{"a domain error", internalToken, func(c *platform.Clients) (proto.Message, error) {
			r, err := c.Payments.GetPayment(tctx, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: "pay_0000000000000000000000000a"}))
			return msgOf(r, err)
		}, connect.CodeNotFound, ""},
		{"an invalid argument with its field", operatorToken, func(c *platform.Clients) (proto.Message, error) {
			r, err := c.Tenants.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: m.tenantID.String(),
				Settings: &tenantsv1.Settings{Links: []*tenantsv1.Link{{Type: "privacy_policy", Url: "ftp://nope"}}}}))
			return msgOf(r, err)
		}, connect.CodeInvalidArgument, "*"},
		{"a success", internalToken, func(c *platform.Clients) (proto.Message, error) {
			r, err := c.Tenants.GetSettings(tctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: m.tenantID.String()}))
			return msgOf(r, err)
		}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := call(direct, tc.token, tc.f), call(viaHTTP, tc.token, tc.f)
			if got.code != want.code || got.domain != want.domain || got.field != want.field {
				t.Fatalf("direct: %v %q field %q; over HTTP: %v %q field %q", got.code, got.domain, got.field, want.code, want.domain, want.field)
			}
			if tc.wantCode != 0 && got.code != tc.wantCode {
				t.Fatalf("code %v, want %v", got.code, tc.wantCode)
			}
			if tc.wantField == "*" && got.field == "" {
				t.Fatalf("no field on %v %q", got.code, got.domain)
			}
			if tc.wantCode == 0 && (got.msg == nil || !proto.Equal(got.msg, want.msg)) {
				t.Fatalf("direct answer %v, over HTTP %v", got.msg, want.msg)
			}
		})
	}
}

func msgOf[T any](r *connect.Response[T], err error) (proto.Message, error) {
	if err != nil {
		return nil, err
	}
	return any(r.Msg).(proto.Message), nil
}
