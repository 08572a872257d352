package tenantcache

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/pgstore"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

// Follow applies the tenant registry's change stream to targets until ctx
// ends, reconnecting with backoff. While disconnected the targets are
// unwatched (short lifetimes) and every reconnection resets them.
func Follow(ctx context.Context, client tenantsv1connect.TenantServiceClient, log *slog.Logger, targets ...Target) {
	run(ctx, log, "tenant change feed", targets, func(onReset func(), onTenant func(string)) error {
		stream, err := client.WatchChanges(ctx, connect.NewRequest(&tenantsv1.WatchChangesRequest{}))
		if err != nil {
			return err
		}
		defer stream.Close()
		for stream.Receive() {
			ev := stream.Msg()
			if ev.GetKind() == tenantsv1.WatchChangesResponse_KIND_TENANT {
				onTenant(ev.GetTenantId())
			} else {
				onReset()
			}
		}
		if err := stream.Err(); err != nil {
			return err
		}
		return errors.New("stream ended")
	})
}

// Listen applies a PostgreSQL notification channel to targets until ctx
// ends. A payload is a tenant id, or {"tenant_id": …}; anything else resets.
// Each session holds a connection of pool (pgstore.Listen).
func Listen(ctx context.Context, pool *pgxpool.Pool, channel string, log *slog.Logger, targets ...Target) {
	run(ctx, log, "change listener "+channel, targets, func(onReset func(), onTenant func(string)) error {
		// The reset once LISTEN is in place: anything may have changed
		// before it took effect.
		return pgstore.Listen(ctx, pool, channel, onReset, func(tid string) {
			if len(tid) > 0 && tid[0] == '{' {
				var p struct {
					TenantID string `json:"tenant_id"`
				}
				_ = json.Unmarshal([]byte(tid), &p)
				tid = p.TenantID
			}
			if tid == "" {
				onReset()
				return
			}
			onTenant(tid)
		})
	})
}

// run keeps one feed connected. onReset marks the targets watched: it is
// called when the feed (re)starts, after which events are not missed.
func run(ctx context.Context, log *slog.Logger, name string, targets []Target, follow func(onReset func(), onTenant func(string)) error) {
	if log == nil {
		log = slog.Default()
	}
	var connected bool
	onReset := func() {
		connected = true
		for _, t := range targets {
			t.Reset()
			t.SetWatched(true)
		}
	}
	onTenant := func(id string) {
		for _, t := range targets {
			t.Invalidate(id)
		}
	}
	const first = 100 * time.Millisecond
	backoff := first
	for ctx.Err() == nil {
		connected = false
		err := follow(onReset, onTenant)
		for _, t := range targets {
			t.SetWatched(false)
			t.Reset() // we may miss changes while away
		}
		if ctx.Err() != nil {
			return
		}
		// A feed that got going: the next break (a failover) retries from
		// the shortest wait again.
		if connected {
			backoff = first
		}
		log.Warn(name+" interrupted; caches use short lifetimes until it is back", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		// At most a second apart, as the registry's own listener
		// (tenants.Broadcaster): back on a new primary, or a restarted
		// registry, within a second.
		backoff = min(backoff*2, time.Second)
	}
}
