// Package tenantcache caches per-tenant configuration that services read
// on every request but that changes rarely (merchant settings, pricing
// configuration), with invalidation driven by change notifications:
//
//   - Follow consumes the tenant registry's WatchChanges stream (tenants,
//     domains, keys, handlers, settings);
//   - Listen consumes a PostgreSQL LISTEN channel whose payload is a tenant
//     id (services that notify their own changes, e.g. pricing).
//
// While a feed is connected entries live long (TTL) and are dropped the
// moment their tenant changes; while it is not, they expire after
// UnwatchedTTL, which bounds staleness. A fill that started before an
// invalidation is never stored. The cache holds at most Max tenants and
// evicts the least recently used one (default 4096), so 10 000 merchants
// cost a bounded amount of memory. Never put stock, usage counters or anything else that
// changes per purchase in it.
package tenantcache

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// Options size a cache.
type Options struct {
	Max          int           // tenants kept at most (default 4096)
	TTL          time.Duration // lifetime while the change feed is connected (default 5 min)
	UnwatchedTTL time.Duration // lifetime while it is not (default 2 s)
	LoadTimeout  time.Duration // a fill's deadline, detached from the caller (default 5 s)
}

// Cache maps tenant id → V.
type Cache[V any] struct {
	opts    Options
	now     func() time.Time
	sf      singleflight.Group
	watched atomic.Bool

	mu      sync.Mutex
	entries map[string]*list.Element // of *entry[V]
	lru     *list.List               // front: most recently used
	gen     uint64                   // bumped on every invalidation

	hits, misses atomic.Int64
}

type entry[V any] struct {
	key     string
	val     V
	expires time.Time
}

// New returns an empty cache; it is unwatched until a feed says otherwise.
func New[V any](opts Options) *Cache[V] {
	if opts.Max <= 0 {
		opts.Max = 4096
	}
	if opts.TTL <= 0 {
		opts.TTL = 5 * time.Minute
	}
	if opts.UnwatchedTTL <= 0 {
		opts.UnwatchedTTL = 2 * time.Second
	}
	if opts.LoadTimeout <= 0 {
		opts.LoadTimeout = 5 * time.Second
	}
	return &Cache[V]{opts: opts, now: time.Now, entries: map[string]*list.Element{}, lru: list.New()}
}

// Get returns the tenant's value, loading it on a miss (once for
// concurrent callers). load runs detached from the caller's cancellation,
// so one cancelled request does not fail the others waiting on it.
func (c *Cache[V]) Get(ctx context.Context, tenantID string, load func(context.Context) (V, error)) (V, error) {
	c.mu.Lock()
	if el, ok := c.entries[tenantID]; ok {
		e := el.Value.(*entry[V])
		if c.now().Before(e.expires) {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			c.hits.Add(1)
			return e.val, nil
		}
	}
	c.mu.Unlock()
	c.misses.Add(1)
	v, err, _ := c.sf.Do(tenantID, func() (any, error) {
		c.mu.Lock()
		gen := c.gen
		c.mu.Unlock()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.LoadTimeout)
		defer cancel()
		val, err := load(lctx)
		if err != nil {
			return nil, err
		}
		c.store(tenantID, val, gen)
		return val, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

func (c *Cache[V]) store(key string, val V, gen uint64) {
	ttl := c.opts.UnwatchedTTL
	if c.watched.Load() {
		ttl = c.opts.TTL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return // invalidated while loading: the value may be stale
	}
	if el, ok := c.entries[key]; ok {
		el.Value = &entry[V]{key: key, val: val, expires: c.now().Add(ttl)}
		c.lru.MoveToFront(el)
		return
	}
	for c.lru.Len() >= c.opts.Max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*entry[V]).key)
	}
	c.entries[key] = c.lru.PushFront(&entry[V]{key: key, val: val, expires: c.now().Add(ttl)})
}

// Invalidate drops the tenant's entry (and any fill in flight).
func (c *Cache[V]) Invalidate(tenantID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if el, ok := c.entries[tenantID]; ok {
		c.lru.Remove(el)
		delete(c.entries, tenantID)
	}
}

// Reset drops everything (a feed (re)connected: changes may have been missed).
func (c *Cache[V]) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	c.lru.Init()
}

// SetWatched says whether a change feed is connected (long lifetimes) or
// not (short ones).
func (c *Cache[V]) SetWatched(w bool) { c.watched.Store(w) }

// Stats are the cache's size and counters.
type Stats struct {
	Len          int
	Hits, Misses int64
	Watched      bool
}

// Stats reports the size and hit counters.
func (c *Cache[V]) Stats() Stats {
	c.mu.Lock()
	n := c.lru.Len()
	c.mu.Unlock()
	return Stats{Len: n, Hits: c.hits.Load(), Misses: c.misses.Load(), Watched: c.watched.Load()}
}

// Target is what a feed drives: any Cache.
type Target interface {
	Invalidate(tenantID string)
	Reset()
	SetWatched(bool)
}
