package tracing

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"

	"github.com/bcpdev/bcp/internal/direct"
	"github.com/bcpdev/bcp/internal/svcauth"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1direct"
)

type pinger struct {
	tenantsv1connect.UnimplementedTenantServiceHandler
}

func (p *pinger) GetSettings(ctx context.Context, _ *connect.Request[tenantsv1.GetSettingsRequest]) (*connect.Response[tenantsv1.GetSettingsResponse], error) {
	return connect.NewResponse(&tenantsv1.GetSettingsResponse{}), nil
}

func (p *pinger) Ping(context.Context, *connect.Request[tenantsv1.PingRequest]) (*connect.Response[tenantsv1.PingResponse], error) {
	panic("boom")
}

// An in-process call between co-hosted services is a span of the caller's
// trace, named by its procedure, with the tenant and the outcome (a panic
// included); outside a recorded trace it makes none.
func TestDirectCallsAreSpans(t *testing.T) {
	p, rec := recordingProvider()
	var slot direct.Slot[tenantsv1connect.TenantServiceHandler]
	slot.Set(&pinger{})
	const token = "tok"
	chain := direct.Chain{Authorize: svcauth.Direct(svcauth.Tokens{Internal: token}, func(string) svcauth.Access { return svcauth.Tenant }, token),
		Trace: p.DirectTrace()}
	c := tenantsv1direct.NewTenantServiceClient(&slot, chain, nil)
	tid := uuid.New()
	ctx, parent := p.Tracer().Start(tenancy.With(context.Background(), tid), "handler")
	if _, err := c.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ping(ctx, connect.NewRequest(&tenantsv1.PingRequest{})); connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("panic: %v", err)
	}
	parent.End()
	if _, err := c.GetSettings(tenancy.With(context.Background(), tid), connect.NewRequest(&tenantsv1.GetSettingsRequest{})); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want the two calls' and the handler's", len(spans))
	}
	for i, want := range []struct{ name, outcome string }{{"bcp.tenants.v1.TenantService/GetSettings", "ok"}, {"bcp.tenants.v1.TenantService/Ping", "internal"}} {
		sp := spans[i]
		attrs := map[string]string{}
		for _, a := range sp.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
		}
		if sp.Name() != want.name || sp.Parent().SpanID() != parent.SpanContext().SpanID() || attrs["bcp.outcome"] != want.outcome || attrs["bcp.tenant_id"] != tid.String() {
			t.Errorf("span %q parent %v attributes %v", sp.Name(), sp.Parent().SpanID(), attrs)
		}
		if (want.outcome != "ok") != (sp.Status().Code == codes.Error) {
			t.Errorf("span %q status %v", sp.Name(), sp.Status())
		}
	}
}
