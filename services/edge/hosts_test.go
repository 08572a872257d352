package edge

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// resolveCounter is a registry answering ResolveHost with the current
// tenant and counting the calls.
type resolveCounter struct {
	tenantsv1connect.TenantServiceClient
	calls  atomic.Int32
	tenant atomic.Pointer[tenantsv1.Tenant]
}

func (r *resolveCounter) ResolveHost(context.Context, *connect.Request[tenantsv1.ResolveHostRequest]) (*connect.Response[tenantsv1.ResolveHostResponse], error) {
	r.calls.Add(1)
	return connect.NewResponse(&tenantsv1.ResolveHostResponse{Tenant: r.tenant.Load()}), nil
}

// A host's tenant is decoded once while its entry lives (hostCache.hot),
// and never outlives the entry: after an invalidation, a reset or the
// entry's expiry the registry's new answer is served.
func TestHostCacheKeepsBusyTenantsDecoded(t *testing.T) {
	reg := &resolveCounter{}
	reg.tenant.Store(&tenantsv1.Tenant{Id: "t1", Capabilities: []string{"a"}})
	var watched atomic.Bool
	watched.Store(true)
	c := newHostCache(reg, &watched)
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	resolve := func() *tenantsv1.Tenant {
		t.Helper()
		got, err := c.resolve(ctx, "loja.example")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := resolve()  // registry call, decoded
	second := resolve() // decoded, kept hot
	if third := resolve(); third != second || first == second || reg.calls.Load() != 1 {
		t.Fatalf("hot entry: %p %p %p after %d registry calls, want the second and third the same, one call", first, second, third, reg.calls.Load())
	}
	check := func(what string, wantCalls int32, wantCap string) {
		t.Helper()
		if got := resolve(); got.GetCapabilities()[0] != wantCap || reg.calls.Load() != wantCalls {
			t.Fatalf("%s: capabilities %v after %d registry calls, want [%s] after %d", what, got.GetCapabilities(), reg.calls.Load(), wantCap, wantCalls)
		}
		resolve() // hot again
	}
	reg.tenant.Store(&tenantsv1.Tenant{Id: "t1", Capabilities: []string{"b"}})
	c.invalidate("t1")
	check("after invalidate", 2, "b")
	reg.tenant.Store(&tenantsv1.Tenant{Id: "t1", Capabilities: []string{"c"}})
	c.reset()
	check("after reset", 3, "c")
	reg.tenant.Store(&tenantsv1.Tenant{Id: "t1", Capabilities: []string{"d"}})
	now = now.Add(ttlWatched + time.Second)
	check("after expiry", 4, "d")
	if len(c.hot) != 1 {
		t.Fatalf("%d hot entries, want 1", len(c.hot))
	}
}
