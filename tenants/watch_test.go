package tenants_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgstore"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants"
)

// The change stream tells a follower "watched" (a reset) only while the
// registry's LISTEN is in place: a stream opened before it waits for it,
// a broken LISTEN (what a database failover does to it) ends every stream,
// and the stream opened afterwards gets its reset once LISTEN is back —
// on whichever server the pool reaches then — and the changes after it.
func TestChangeStreamFollowsTheListener(t *testing.T) {
	svc, d := newService(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := tenants.NewBroadcaster(d.Pool, slog.New(slog.DiscardHandler))
	type stream struct {
		events chan *tenantsv1.WatchChangesResponse
		done   chan error
	}
	open := func() stream {
		s := stream{events: make(chan *tenantsv1.WatchChangesResponse, 16), done: make(chan error, 1)}
		go func() {
			s.done <- b.Serve(ctx, func(ev *tenantsv1.WatchChangesResponse) error { s.events <- ev; return nil })
		}()
		return s
	}
	next := func(s stream, what string) *tenantsv1.WatchChangesResponse {
		t.Helper()
		select {
		case ev := <-s.events:
			return ev
		case err := <-s.done:
			t.Fatalf("%s: the stream ended (%v)", what, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing after 10 s", what)
		}
		return nil
	}

	early := open()
	select {
	case ev := <-early.events:
		t.Fatalf("a stream opened before LISTEN got %v", ev)
	case <-time.After(200 * time.Millisecond):
	}
	go b.Run(ctx)
	if ev := next(early, "the stream opened before LISTEN"); ev.GetKind() != tenantsv1.WatchChangesResponse_KIND_RESET {
		t.Fatalf("first event %v, want a reset", ev)
	}
	tn := mustTenant(t, svc, "Loja Escuta", "escuta.localhost")
	if ev := next(early, "a new tenant"); ev.GetKind() != tenantsv1.WatchChangesResponse_KIND_TENANT || ev.GetTenantId() != tn.GetId() {
		t.Fatalf("event %v, want tenant %s", ev, tn.GetId())
	}

	// The listening connection dies, as on the old primary in a failover.
	su, err := pgx.Connect(context.Background(), d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(context.Background())
	var killed int
	if err := su.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, pgstore.ListenerName("bcp_tenant_changes")).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listening backends (%v), want 1", killed, err)
	}
	select {
	case err := <-early.done:
		if err != nil {
			t.Fatalf("the stream ended with %v, want a clean end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its listener")
	}
	late := open()
	if ev := next(late, "the stream opened after the break"); ev.GetKind() != tenantsv1.WatchChangesResponse_KIND_RESET {
		t.Fatalf("first event %v, want a reset", ev)
	}
	tn2 := mustTenant(t, svc, "Loja Depois", "depois.localhost")
	if ev := next(late, "a tenant created after the break"); ev.GetKind() != tenantsv1.WatchChangesResponse_KIND_TENANT || ev.GetTenantId() != tn2.GetId() {
		t.Fatalf("event %v, want tenant %s", ev, tn2.GetId())
	}
}
