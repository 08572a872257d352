package tenants_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/sealer"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants"
)

// A service whose process runs the change broadcaster keeps live signing
// keys in memory. Its own rotations and revocations apply at once; those
// made by another process (another tenants service on the same database)
// reach it through the registry's notifications. Without the
// invalidation, the cached key would sign for its whole lifetime (5 min)
// and the eventually loops below would time out.
func TestSigningKeyCache(t *testing.T) {
	other, d := newService(t) // no broadcaster: never caches
	seal, err := sealer.NewAESGCM(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	b := tenants.NewBroadcaster(d.Pool, log)
	go b.Run(ctx)
	<-b.Ready()
	s := tenants.New(d.Pool, seal, b, log)

	tn := mustTenant(t, other, "Loja Cache", "cache.localhost")
	body := []byte(`{"ok":true}`)
	kidNow := func() string {
		t.Helper()
		_, kid, err := signResponse(t, s, tn.GetId(), body)
		if err != nil {
			t.Fatal(err)
		}
		return kid
	}
	eventually := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for kidNow() != want {
			if time.Now().After(deadline) {
				t.Fatalf("still signing with a stale key; want %s", want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	k1 := kidNow() // the creation key, now cached
	h, kid, err := signResponse(t, s, tn.GetId(), body)
	if err != nil || kid != k1 {
		t.Fatalf("second signature: %s %v", kid, err)
	}
	if err := verifyWith(t, published(t, other, tn.GetId()), h, body); err != nil {
		t.Fatalf("signature with the cached key does not verify: %v", err)
	}

	// Another process rotates (no delay): the notification drops the entry.
	r, err := other.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(0)}))
	if err != nil {
		t.Fatal(err)
	}
	k2 := r.Msg.GetKey().GetKid()
	eventually(k2)

	// Another process revokes it: back to k1.
	if _, err := other.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: k2})); err != nil {
		t.Fatal(err)
	}
	eventually(k1)

	// This process's own writes apply to its very next signature.
	r, err = s.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(0)}))
	if err != nil {
		t.Fatal(err)
	}
	k3 := r.Msg.GetKey().GetKid()
	if got := kidNow(); got != k3 {
		t.Fatalf("after its own rotation: signed with %s, want %s", got, k3)
	}
	for _, k := range []string{k3, k1} {
		if _, err := s.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: k, Force: true})); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = signResponse(t, s, tn.GetId(), body)
	wantCode(t, err, apperr.KindFailedPrecondition, "no_signing_key")
}
