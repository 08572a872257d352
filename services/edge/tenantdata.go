package edge

import (
	"context"
	"sync"

	"connectrpc.com/connect"
	"golang.org/x/sync/singleflight"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// tenantData caches each tenant's discovery data (capabilities, payment
// handlers, public keys): the profile and the negotiation both read it on
// every request. Entries live until the change feed drops them, at most
// maxTenantData of them.
type tenantData struct {
	client tenantsv1connect.TenantServiceClient
	sf     singleflight.Group

	mu      sync.RWMutex
	entries map[string]*tenantsv1.GetDiscoveryResponse
	gen     uint64
}

const maxTenantData = 4096

func newTenantData(c tenantsv1connect.TenantServiceClient) *tenantData {
	return &tenantData{client: c, entries: map[string]*tenantsv1.GetDiscoveryResponse{}}
}

func (d *tenantData) get(ctx context.Context, tenantID string) (*tenantsv1.GetDiscoveryResponse, error) {
	d.mu.RLock()
	e, ok := d.entries[tenantID]
	gen := d.gen
	d.mu.RUnlock()
	if ok {
		return e, nil
	}
	v, err, _ := d.sf.Do(tenantID, func() (any, error) {
		resp, err := d.client.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tenantID}))
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		if d.gen == gen { // not invalidated while we asked
			// Bounded (≈ 1.5 KB each; a miss is one registry call):
			// arbitrary eviction.
			for k := range d.entries {
				if len(d.entries) < maxTenantData {
					break
				}
				delete(d.entries, k)
			}
			d.entries[tenantID] = resp.Msg
		}
		d.mu.Unlock()
		return resp.Msg, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*tenantsv1.GetDiscoveryResponse), nil
}

func (d *tenantData) invalidate(tenantID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	delete(d.entries, tenantID)
}

func (d *tenantData) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	clear(d.entries)
}
