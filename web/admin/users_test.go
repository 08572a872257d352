package admin

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// The team list's invitation states: pending while the link works,
// expired after (and with no link at all), none once signed in or set.
func TestUserRows(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ts := timestamppb.New
	rows := userRows([]*tenantsv1.MerchantUser{
		{Id: "usr_a", Email: "a@x.com.br", Role: "admin", LastLoginTime: ts(now.Add(-time.Hour))},
		{Id: "usr_b", Email: "b@x.com.br", Role: "staff", InvitationPending: true, InvitationExpireTime: ts(now.Add(time.Minute))},
		{Id: "usr_c", Email: "c@x.com.br", Role: "staff", InvitationPending: true, InvitationExpireTime: ts(now)},
		{Id: "usr_d", Email: "d@x.com.br", Role: "staff", InvitationPending: true},
		{Id: "usr_e", Email: "e@x.com.br", Role: "staff", LockedUntil: ts(now.Add(time.Minute))},
	}, now)
	type state struct {
		pending, expired, signedIn, locked bool
		expires                            time.Time
	}
	want := []state{
		{signedIn: true},
		{pending: true, expires: now.Add(time.Minute)},
		{pending: true, expired: true, expires: now},
		{pending: true, expired: true},
		{locked: true},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		got := state{pending: r.Pending, expired: r.Expired, signedIn: r.LastLogin != nil, locked: r.Locked, expires: r.Expires}
		if !got.expires.Equal(want[i].expires) {
			t.Errorf("%s expires %v, want %v", r.Email, got.expires, want[i].expires)
		}
		got.expires = want[i].expires
		if got != want[i] {
			t.Errorf("%s: %+v, want %+v", r.Email, got, want[i])
		}
	}
}
