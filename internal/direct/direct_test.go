package direct_test

import (
	"context"
	"log/slog"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/direct"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1direct"
)

// keeper is a handler that keeps what it answers and what it was asked,
// as a service with a cache would.
type keeper struct {
	tenantsv1connect.UnimplementedTenantServiceHandler
	settings *tenantsv1.Settings
	asked    *tenantsv1.GetSettingsRequest
	seen     context.Context
}

type marker struct{}

func (k *keeper) GetSettings(ctx context.Context, r *connect.Request[tenantsv1.GetSettingsRequest]) (*connect.Response[tenantsv1.GetSettingsResponse], error) {
	k.seen, k.asked = ctx, r.Msg
	r.Msg.TenantId = "changed by the service"
	return connect.NewResponse(&tenantsv1.GetSettingsResponse{Settings: k.settings}), nil
}

func (k *keeper) Ping(context.Context, *connect.Request[tenantsv1.PingRequest]) (*connect.Response[tenantsv1.PingResponse], error) {
	panic("boom")
}

func (k *keeper) ResolveHost(context.Context, *connect.Request[tenantsv1.ResolveHostRequest]) (*connect.Response[tenantsv1.ResolveHostResponse], error) {
	return nil, apperr.Invalid("host", "invalid_host", "host is not valid")
}

const token = "internal-token"

var quiet = slog.New(slog.DiscardHandler)

func policy(p string) svcauth.Access {
	if p == tenantsv1connect.TenantServiceGetSettingsProcedure {
		return svcauth.Tenant
	}
	if p == tenantsv1connect.TenantServiceCreateTenantProcedure {
		return svcauth.Operator
	}
	return svcauth.Internal
}

func client(t *testing.T, k *keeper, tok string) tenantsv1connect.TenantServiceClient {
	t.Helper()
	var slot direct.Slot[tenantsv1connect.TenantServiceHandler]
	slot.Set(k)
	return tenantsv1direct.NewTenantServiceClient(&slot, direct.Chain{Authorize: svcauth.Direct(svcauth.Tokens{Internal: token, Operator: "op"}, policy, tok), Logger: quiet}, nil)
}

func TestMessagesAreCopiedBothWays(t *testing.T) {
	k := &keeper{settings: &tenantsv1.Settings{ConsentPurposes: []string{"marketing"}}}
	c := client(t, k, token)
	tid := uuid.New()
	ctx := context.WithValue(tenancy.With(context.Background(), tid), marker{}, "caller's")
	req := &tenantsv1.GetSettingsRequest{TenantId: tid.String()}
	res, err := c.GetSettings(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if req.TenantId != tid.String() {
		t.Fatalf("the service changed the caller's request: %q", req.TenantId)
	}
	res.Msg.Settings.ConsentPurposes[0] = "changed by the caller"
	if got := k.settings.ConsentPurposes[0]; got != "marketing" {
		t.Fatalf("the caller changed the service's message: %q", got)
	}
	// The handler sees the tenant authorization set, nothing else of the caller's.
	if got, err := tenancy.From(k.seen); err != nil || got != tid {
		t.Fatalf("handler tenant %v, %v; want %v", got, err, tid)
	}
	if svcauth.Principal(k.seen) != "service" {
		t.Fatalf("principal %q, want service", svcauth.Principal(k.seen))
	}
	if v := k.seen.Value(marker{}); v != nil {
		t.Fatalf("a caller's context value reached the handler: %v", v)
	}
}

func TestRefusalsAndErrorsAsOverHTTP(t *testing.T) {
	k := &keeper{settings: &tenantsv1.Settings{}}
	ctx := context.Background()
	// A tenant procedure without a tenant.
	_, err := client(t, k, token).GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("no tenant: %v", err)
	}
	// An operator procedure with the internal token; an unknown token.
	if _, err := client(t, k, token).CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("internal token on an operator procedure: %v", err)
	}
	if _, err := client(t, k, "wrong").ResolveHost(ctx, connect.NewRequest(&tenantsv1.ResolveHostRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("unknown token: %v", err)
	}
	if k.seen != nil {
		t.Fatal("a refused call reached the handler")
	}
	// A domain error keeps its code and field; a panic is an internal error.
	_, err = client(t, k, token).ResolveHost(ctx, connect.NewRequest(&tenantsv1.ResolveHostRequest{}))
	if e := apperr.As(err); connect.CodeOf(err) != connect.CodeInvalidArgument || e.Code != "invalid_host" || e.Field != "host" {
		t.Fatalf("domain error: %v (%+v)", err, e)
	}
	_, err = client(t, k, token).Ping(ctx, connect.NewRequest(&tenantsv1.PingRequest{}))
	if connect.CodeOf(err) != connect.CodeInternal || apperr.As(err).Message != "internal error" {
		t.Fatalf("panic: %v", err)
	}
	// A service not built yet.
	var empty direct.Slot[tenantsv1connect.TenantServiceHandler]
	c := tenantsv1direct.NewTenantServiceClient(&empty, direct.Chain{Authorize: svcauth.Direct(svcauth.Tokens{Internal: token}, policy, token), Logger: quiet}, nil)
	if _, err := c.ResolveHost(ctx, connect.NewRequest(&tenantsv1.ResolveHostRequest{})); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("not mounted: %v", err)
	}
}
