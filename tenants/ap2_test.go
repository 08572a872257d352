package tenants_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/svcauth"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/protocol/ap2"
	"github.com/bcpdev/bcp/tenants"
)

// SetAP2Mandates adds the capability once and removes it; the published
// discovery data follows. SignCheckoutAuthorization signs canonical
// checkouts only, with the current key, verifiable with the published
// keys — also after a rotation, until the old key is revoked.
func TestAP2OptInAndAuthorizations(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	tn := mustTenant(t, s, "Loja AP2", "ap2.localhost")
	caps := func() []string {
		d, err := s.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tn.GetId()}))
		if err != nil {
			t.Fatal(err)
		}
		return d.Msg.GetTenant().GetCapabilities()
	}
	for _, on := range []bool{true, true, false, false} {
		r, err := s.SetAP2Mandates(ctx, connect.NewRequest(&tenantsv1.SetAP2MandatesRequest{Tenant: "ap2.localhost", Enabled: on}))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range caps() {
			if c == bcpnames.AP2Mandate {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[on]; n != want || slices.Contains(r.Msg.GetTenant().GetCapabilities(), bcpnames.AP2Mandate) != on {
			t.Fatalf("enabled=%v: %d entries, want %d", on, n, want)
		}
	}
	if !slices.Contains(caps(), bcpnames.Checkout) {
		t.Fatal("switching AP2 off removed other capabilities")
	}
	_, err := s.SetAP2Mandates(ctx, connect.NewRequest(&tenantsv1.SetAP2MandatesRequest{Tenant: "nope.localhost", Enabled: true}))
	wantCode(t, err, apperr.KindNotFound, "tenant_not_found")

	sign := func(payload string) (*tenantsv1.SignCheckoutAuthorizationResponse, error) {
		r, err := s.SignCheckoutAuthorization(ctx, connect.NewRequest(&tenantsv1.SignCheckoutAuthorizationRequest{TenantId: tn.GetId(), Payload: []byte(payload)}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	for _, bad := range []string{"", `"@status": 200` + "\n", `{"b":1,"a":2}`, `{ "a":1}`, `[1]`, `{"a":1.50}`} {
		_, err := sign(bad)
		wantCode(t, err, apperr.KindInvalidArgument, "invalid_payload")
	}
	published := func() []json.RawMessage {
		d, err := s.GetDiscovery(ctx, connect.NewRequest(&tenantsv1.GetDiscoveryRequest{TenantId: tn.GetId()}))
		if err != nil {
			t.Fatal(err)
		}
		var out []json.RawMessage
		for _, k := range d.Msg.GetSigningKeysJson() {
			out = append(out, json.RawMessage(k))
		}
		return out
	}
	checkout := `{"currency":"BRL","id":"chk_1","totals":[{"amount":7490,"type":"total"}]}`
	old, err := sign(checkout)
	if err != nil {
		t.Fatal(err)
	}
	if kid, err := ap2.VerifyAuthorization([]byte(checkout), old.GetMerchantAuthorization(), published()); err != nil || kid != old.GetKid() {
		t.Fatalf("verify: %q %v", kid, err)
	}
	if _, err := s.RotateSigningKey(ctx, connect.NewRequest(&tenantsv1.RotateSigningKeyRequest{Tenant: tn.GetId(), Delay: durationpb.New(0)})); err != nil {
		t.Fatal(err)
	}
	cur, err := sign(checkout)
	if err != nil || cur.GetKid() == old.GetKid() {
		t.Fatalf("after rotation: %v %v", cur, err)
	}
	if _, err := ap2.VerifyAuthorization([]byte(checkout), old.GetMerchantAuthorization(), published()); err != nil {
		t.Fatalf("the old key's authorization after rotation: %v", err)
	}
	if _, err := s.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: tn.GetId(), Kid: old.GetKid()})); err != nil {
		t.Fatal(err)
	}
	if _, err := ap2.VerifyAuthorization([]byte(checkout), old.GetMerchantAuthorization(), published()); err == nil {
		t.Fatal("the revoked key's authorization still verifies")
	}
	if _, err := ap2.VerifyAuthorization([]byte(checkout), cur.GetMerchantAuthorization(), published()); err != nil {
		t.Fatalf("the current key's authorization: %v", err)
	}
	for _, p := range []string{tenantsv1connect.TenantServiceSignCheckoutAuthorizationProcedure, tenantsv1connect.TenantServiceSetAP2MandatesProcedure} {
		if tenants.Policy(p) != svcauth.Internal {
			t.Errorf("%s: want internal", p)
		}
	}
}
