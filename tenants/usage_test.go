package tenants_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// GetUsage's window picks São Paulo calendar days (what the edges count
// in): 02:30 UTC on the 30th is still the 29th there, 03:00 UTC is the 30th.
func TestGetUsageDaysAreSaoPaulos(t *testing.T) {
	s, d := newService(t)
	tn := mustTenant(t, s, "Loja Dias", "dias.localhost")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.SuperURL) // set-up only: the rows an edge would have flushed
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO tenants.request_usage (tenant_id, day, requests, errors)
		VALUES ($1, '2026-11-28', 100, 0), ($1, '2026-11-29', 5, 1), ($1, '2026-11-30', 7, 0)`, tn.GetId()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		since, until string
		days         []string
		requests     int64
		errors       int64
	}{
		// 00:00 to 23:30 on the 29th in São Paulo (UTC days: 29 and 30).
		{"2026-11-29T03:00:00Z", "2026-11-30T02:30:00Z", []string{"2026-11-29"}, 5, 1},
		// 23:59:59 on the 28th to 00:00 on the 30th.
		{"2026-11-29T02:59:59Z", "2026-11-30T03:00:00Z", []string{"2026-11-28", "2026-11-29", "2026-11-30"}, 112, 1},
		// 00:30 UTC on the 29th is 21:30 on the 28th.
		{"2026-11-29T00:30:00Z", "2026-11-29T00:30:00Z", []string{"2026-11-28"}, 100, 0},
	} {
		since, _ := time.Parse(time.RFC3339, tc.since)
		until, _ := time.Parse(time.RFC3339, tc.until)
		r, err := s.GetUsage(ctx, connect.NewRequest(&tenantsv1.GetUsageRequest{Tenant: tn.GetId(), SinceUnix: since.Unix(), UntilUnix: until.Unix()}))
		if err != nil {
			t.Fatal(err)
		}
		var days []string
		for _, d := range r.Msg.GetDays() {
			days = append(days, d.GetDay())
		}
		if len(days) != len(tc.days) || r.Msg.GetRequests() != tc.requests || r.Msg.GetErrors() != tc.errors {
			t.Fatalf("%s..%s: days %v, %d requests, %d errors; want %v, %d, %d", tc.since, tc.until, days, r.Msg.GetRequests(), r.Msg.GetErrors(), tc.days, tc.requests, tc.errors)
		}
		for i := range days {
			if days[i] != tc.days[i] {
				t.Fatalf("%s..%s: days %v, want %v", tc.since, tc.until, days, tc.days)
			}
		}
	}
}
