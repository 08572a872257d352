package edge

import (
	"context"
	"sync"

	"connectrpc.com/connect"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// tenantData caches each tenant's discovery data (capabilities, payment
// handlers, public keys), from which the rendered profile and the
// negotiation offer are built; those have caches of their own, so this one
// is read only when they miss. Entries live until the change feed drops
// them, at most maxTenantData of them.
//
// Entries are kept encoded: a decoded response is ≈ 20 separate strings
// the garbage collector marks on every cycle, an encoded one a single
// pointer-free block it skips. With thousands of merchants that was the
// largest share of the live heap's objects and slowed every request
// (docs/performance.md, "10 000 merchants"); decoding on a miss costs
// microseconds.
type tenantData struct {
	client tenantsv1connect.TenantServiceClient
	sf     singleflight.Group

	mu      sync.RWMutex
	entries map[string][]byte // tenant id → encoded GetDiscoveryResponse
	gen     uint64
}

const maxTenantData = 4096

func newTenantData(c tenantsv1connect.TenantServiceClient) *tenantData {
	return &tenantData{client: c, entries: map[string][]byte{}}
}

// get returns a fresh copy of the tenant's discovery data (the caller may
// keep or change it).
func (d *tenantData) get(ctx context.Context, tenantID string) (*tenantsv1.GetDiscoveryResponse, error) {
	d.mu.RLock()
	b, ok := d.entries[tenantID]
	gen := d.gen
	d.mu.RUnlock()
	if !ok {
		v, err, _ := d.sf.Do(tenantID, func() (any, error) {
			resp, err := d.client.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tenantID}))
			if err != nil {
				return nil, err
			}
			b, err := proto.Marshal(resp.Msg)
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
				d.entries[tenantID] = b
			}
			d.mu.Unlock()
			return b, nil
		})
		if err != nil {
			return nil, err
		}
		b = v.([]byte)
	}
	var msg tenantsv1.GetDiscoveryResponse
	if err := proto.Unmarshal(b, &msg); err != nil {
		return nil, err
	}
	return &msg, nil
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
