package tenants

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenantcache"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// channel is the PostgreSQL notification channel the registry's triggers
// announce changes on (migration 00002).
const channel = "bcp_tenant_changes"

// Broadcaster LISTENs for registry changes and fans them out to every
// WatchChanges stream. Whenever it (re)connects it tells subscribers to
// reset, because notifications sent while it was away are lost; while it
// is disconnected it serves no stream.
type Broadcaster struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu   sync.Mutex
	subs map[chan *tenantsv1.WatchChangesResponse]struct{}
	// local are this process's caches, driven directly (no stream);
	// listening says whether LISTEN is in place (they are watched).
	local     []tenantcache.Target
	listening bool
	// ready is closed once the first LISTEN is in place.
	ready     chan struct{}
	readyOnce sync.Once
}

// NewBroadcaster returns a broadcaster; call Run to start listening.
func NewBroadcaster(pool *pgxpool.Pool, log *slog.Logger) *Broadcaster {
	return &Broadcaster{pool: pool, log: log, subs: map[chan *tenantsv1.WatchChangesResponse]struct{}{}, ready: make(chan struct{})}
}

// Ready is closed once the first LISTEN is in place.
func (b *Broadcaster) Ready() <-chan struct{} { return b.ready }

// addLocal drives t from the notifications: watched while LISTEN is in
// place, reset whenever it (re)connects or sees an unreadable payload,
// tenant entries invalidated as their changes arrive.
func (b *Broadcaster) addLocal(t tenantcache.Target) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t.SetWatched(b.listening)
	b.local = append(b.local, t)
}

func (b *Broadcaster) setLocalWatched(w bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.listening = w
	for _, t := range b.local {
		t.SetWatched(w)
		t.Reset()
	}
}

// Run listens until ctx ends, reconnecting with backoff. When it returns,
// every subscriber's stream ends.
func (b *Broadcaster) Run(ctx context.Context) {
	defer b.closeAll()
	const first = 100 * time.Millisecond
	backoff := first
	for ctx.Err() == nil {
		listened := false
		err := pgstore.Listen(ctx, b.pool, channel, func() { listened = true; b.up() }, b.notify)
		if ctx.Err() != nil {
			return
		}
		// A session that got going broke: its streams end. A session that
		// never got going ends none (they wait for the next up), and the
		// next break (the next failover) starts its retries from the
		// shortest wait again.
		if listened {
			b.down()
			backoff = first
		}
		b.log.Warn("tenant change listener disconnected; reconnecting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		// At most a second apart: a failover keeps the database away for
		// ≈ 10 s, and the sooner LISTEN is back on the new primary the
		// sooner every cache is watched again (until then they keep
		// entries 2 s); a connection attempt a second costs nothing.
		backoff = min(backoff*2, time.Second)
	}
}

// up: LISTEN is in place. Anything may have changed since the last
// notification seen (before a failover, on another primary), so every
// cache starts over, watched from now on.
func (b *Broadcaster) up() {
	b.setLocalWatched(true)
	b.readyOnce.Do(func() { close(b.ready) })
	b.publish(&tenantsv1.WatchChangesResponse{Kind: tenantsv1.WatchChangesResponse_KIND_RESET})
}

// down: nothing listens. Local caches go back to short lifetimes, and
// every stream ends, so the edges' and services' caches do the same (a
// stream's reset tells its follower it is watched); their new streams wait
// in Serve for the next up.
func (b *Broadcaster) down() {
	b.setLocalWatched(false)
	b.closeAll()
}

func (b *Broadcaster) notify(payload string) {
	var p struct {
		TenantID string `json:"tenant_id"`
	}
	if json.Unmarshal([]byte(payload), &p) != nil || p.TenantID == "" {
		b.publish(&tenantsv1.WatchChangesResponse{Kind: tenantsv1.WatchChangesResponse_KIND_RESET})
		return
	}
	b.publish(&tenantsv1.WatchChangesResponse{Kind: tenantsv1.WatchChangesResponse_KIND_TENANT, TenantId: p.TenantID})
}

func (b *Broadcaster) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}

// publish delivers ev to every subscriber. A subscriber too slow to keep up
// is dropped: its stream ends and the client reconnects and resets, which
// is always correct, whereas blocking here would stall every cache.
func (b *Broadcaster) publish(ev *tenantsv1.WatchChangesResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.local {
		if ev.GetKind() == tenantsv1.WatchChangesResponse_KIND_TENANT {
			t.Invalidate(ev.GetTenantId())
		} else {
			t.Reset()
		}
	}
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// Serve streams changes to send until ctx ends or the listener breaks. It
// starts with a reset, sent once LISTEN is in place: a follower treats a
// reset as "watched", which must not be true while nothing listens.
func (b *Broadcaster) Serve(ctx context.Context, send func(*tenantsv1.WatchChangesResponse) error) error {
	ch := make(chan *tenantsv1.WatchChangesResponse, 256)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	listening := b.listening
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
		b.mu.Unlock()
	}()
	// Not listening: the reset of the next up reaches ch.
	if listening {
		if err := send(&tenantsv1.WatchChangesResponse{Kind: tenantsv1.WatchChangesResponse_KIND_RESET}); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if err := send(ev); err != nil {
				return err
			}
		}
	}
}
