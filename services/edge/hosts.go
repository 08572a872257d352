package edge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/hostname"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Cache lifetimes. While the change feed is connected, entries are dropped
// the moment their tenant changes, so they can live long; without it, they
// must expire quickly to bound staleness.
const (
	ttlWatched    = 5 * time.Minute
	ttlNegWatched = 30 * time.Second
	ttlUnwatched  = 2 * time.Second
	maxHosts      = 100_000
	// maxHot bounds the entries also kept decoded (hostCache.hot).
	maxHot = 1024
)

// hostCache resolves Host → tenant through the tenant registry, caching
// answers (negative ones too) and dropping them on registry changes.
type hostCache struct {
	client  tenantsv1connect.TenantServiceClient
	now     func() time.Time
	sf      singleflight.Group
	watched *atomic.Bool

	mu      sync.RWMutex
	entries map[string]hostEntry
	gen     uint64 // bumped on every invalidation; stale fills are discarded
	seq     uint64 // numbers the entries stored (hostEntry.seq)
	// hot are entries requested since they were stored, decoded (at most
	// maxHot: the busy merchants' hosts): a request to one of them
	// decodes nothing (≈ 20 allocations). Dropped with their entry. The
	// tenants in it are shared by the requests: read-only, as every
	// tenant handed out is.
	hot map[string]hotTenant
}

// hotTenant is entries[host] (the one numbered seq) decoded.
type hotTenant struct {
	seq    uint64
	tenant *tenantsv1.Tenant
}

// hostEntry keeps the tenant encoded: up to maxHosts decoded tenants are
// ≈ 12 objects each for the garbage collector to mark on every cycle, an
// encoded one is a single pointer-free block; decoding it per request
// costs about a microsecond (docs/performance.md, "10 000 merchants").
type hostEntry struct {
	tenantID string // "": no merchant at this host
	tenant   []byte // encoded tenantsv1.Tenant
	expires  time.Time
	seq      uint64 // set by store
}

func newHostCache(client tenantsv1connect.TenantServiceClient, watched *atomic.Bool) *hostCache {
	return &hostCache{client: client, now: time.Now, watched: watched, entries: map[string]hostEntry{}, hot: map[string]hotTenant{}}
}

// errUnknownHost is returned for hosts no tenant owns.
var errUnknownHost = errors.New("unknown host")

// resolve returns the tenant owning host (already normalised).
func (c *hostCache) resolve(ctx context.Context, host string) (*tenantsv1.Tenant, error) {
	c.mu.RLock()
	e, ok := c.entries[host]
	h := c.hot[host]
	c.mu.RUnlock()
	if ok && c.now().Before(e.expires) {
		if h.tenant != nil && h.seq == e.seq {
			return h.tenant, nil
		}
		t, err := e.decode()
		if err == nil {
			c.keepHot(host, e.seq, t)
		}
		return t, err
	}
	v, err, _ := c.sf.Do(host, func() (any, error) {
		c.mu.RLock()
		gen := c.gen
		c.mu.RUnlock()
		// Detached from the caller: a cancelled request must not fail the
		// lookup other requests are waiting on.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		resp, err := c.client.ResolveHost(lctx, connect.NewRequest(&tenantsv1.ResolveHostRequest{Host: host}))
		var t *tenantsv1.Tenant
		switch {
		case err == nil:
			t = resp.Msg.GetTenant()
		case apperr.IsKind(err, apperr.KindNotFound):
		default:
			return nil, err
		}
		e := hostEntry{tenantID: t.GetId()}
		if t != nil {
			if e.tenant, err = proto.Marshal(t); err != nil {
				return nil, err
			}
		}
		c.store(host, e, gen)
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(hostEntry).decode()
}

// keepHot keeps t as the decoded entry seq of host, while that entry is
// still the host's.
func (c *hostCache) keepHot(host string, seq uint64, t *tenantsv1.Tenant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[host]; !ok || e.seq != seq {
		return
	}
	for k := range c.hot { // arbitrary eviction
		if len(c.hot) < maxHot {
			break
		}
		delete(c.hot, k)
	}
	c.hot[host] = hotTenant{seq: seq, tenant: t}
}

// decode returns a fresh copy of the entry's tenant (callers may keep it,
// and must not modify it: hostCache.hot shares it).
func (e hostEntry) decode() (*tenantsv1.Tenant, error) {
	if e.tenantID == "" {
		return nil, errUnknownHost
	}
	t := &tenantsv1.Tenant{}
	if err := proto.Unmarshal(e.tenant, t); err != nil {
		return nil, err
	}
	return t, nil
}

func (c *hostCache) store(host string, e hostEntry, gen uint64) {
	ttl := ttlUnwatched
	if c.watched.Load() {
		ttl = ttlWatched
		if e.tenantID == "" {
			ttl = ttlNegWatched
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return // invalidated while we were asking: the answer may be stale
	}
	// Unknown hosts are attacker-chosen: bound the cache (random eviction).
	for k := range c.entries {
		if len(c.entries) < maxHosts {
			break
		}
		delete(c.entries, k)
		delete(c.hot, k)
	}
	c.seq++
	e.expires, e.seq = c.now().Add(ttl), c.seq
	c.entries[host] = e
	delete(c.hot, host)
}

// invalidate drops the tenant's hosts, and every negative entry (a new
// domain of this tenant may be one of them).
func (c *hostCache) invalidate(tenantID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.entries {
		if e.tenantID == "" || e.tenantID == tenantID {
			delete(c.entries, h)
			delete(c.hot, h)
		}
	}
}

func (c *hostCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	clear(c.hot)
}

// changeFeed follows the registry's WatchChanges stream and tells the
// caches what to drop. It reconnects forever; while disconnected, caches
// fall back to short lifetimes.
type changeFeed struct {
	client  tenantsv1connect.TenantServiceClient
	log     *slog.Logger
	watched atomic.Bool
	onReset []func()
	onEvent []func(tenantID string)
}

func (f *changeFeed) run(ctx context.Context) {
	const first = 100 * time.Millisecond
	backoff := first
	for ctx.Err() == nil {
		err := f.follow(ctx)
		// A stream that got its reset was a working registry: the next
		// break (a tenants restart, a database failover) retries from the
		// shortest wait again.
		if f.watched.Swap(false) {
			backoff = first
		}
		f.reset() // we may have missed changes while away
		if ctx.Err() != nil {
			return
		}
		f.log.Warn("tenant change feed interrupted; caches use short lifetimes until it is back", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (f *changeFeed) follow(ctx context.Context) error {
	stream, err := f.client.WatchChanges(ctx, connect.NewRequest(&tenantsv1.WatchChangesRequest{}))
	if err != nil {
		return err
	}
	defer stream.Close()
	for stream.Receive() {
		ev := stream.Msg()
		switch ev.GetKind() {
		case tenantsv1.WatchChangesResponse_KIND_TENANT:
			for _, fn := range f.onEvent {
				fn(ev.GetTenantId())
			}
		default:
			f.reset()
			f.watched.Store(true)
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	return errors.New("stream ended")
}

func (f *changeFeed) reset() {
	for _, fn := range f.onReset {
		fn()
	}
}

// normalizeHost is the edge's single Host normalisation.
func normalizeHost(h string) string { return hostname.Normalize(h) }
