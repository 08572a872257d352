package checkout_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
)

// ListCheckouts pages through the tenant's sessions newest (highest id)
// first, filters by status, bounds the page size and refuses an unknown
// status or a malformed token.
func TestListCheckouts(t *testing.T) {
	e := newEnv(t)
	tenant := uuid.New() // only the rows below, open for a day (the sweeps leave them alone)
	ctx := tenancy.With(context.Background(), tenant)
	created := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	var ids []string // ascending
	for i := 0; i < 53; i++ {
		id := fmt.Sprintf("chk_%03d", i)
		status := "incomplete"
		if i%10 == 3 {
			status = "completed"
		}
		e.exec(`INSERT INTO checkout.sessions (tenant_id, id, status, currency, total, buyer_email, agent_profile_url, capabilities, request, state, expires_at, created_at, updated_at)
			VALUES ($1, $2, $3, 'BRL', $4, $5, 'https://agent.example/p.json', '{}', '{}', '{}', now() + interval '1 day', $6, $7)`,
			tenant, id, status, 1000+i, fmt.Sprintf("b%d@example.com", i), created, created.Add(time.Duration(i)*time.Minute))
		ids = append(ids, id)
	}
	list := func(req *checkoutv1.ListCheckoutsRequest) (*checkoutv1.ListCheckoutsResponse, error) {
		r, err := e.r.Clients.Checkout.ListCheckouts(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	idsOf := func(r *checkoutv1.ListCheckoutsResponse) []string {
		var out []string
		for _, c := range r.GetCheckouts() {
			out = append(out, c.GetId())
		}
		return out
	}
	desc := func(from, to int) []string { // ids[to..from] highest first
		var out []string
		for i := from; i >= to; i-- {
			out = append(out, ids[i])
		}
		return out
	}

	t.Run("pages of 20 with tokens", func(t *testing.T) {
		var got []string
		tok, pages := "", 0
		for {
			r, err := list(&checkoutv1.ListCheckoutsRequest{PageSize: 20, PageToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, idsOf(r)...)
			pages++
			if tok = r.GetNextPageToken(); tok == "" {
				break
			}
			if want := base64.RawURLEncoding.EncodeToString([]byte(got[len(got)-1])); tok != want {
				t.Errorf("token %q, want the last id encoded %q", tok, want)
			}
		}
		if pages != 3 || !equalStrings(got, desc(52, 0)) {
			t.Errorf("%d pages: %v", pages, got)
		}
	})
	t.Run("a summary", func(t *testing.T) {
		r, err := list(&checkoutv1.ListCheckoutsRequest{PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := &checkoutv1.CheckoutSummary{Id: "chk_052", Status: "incomplete", Currency: "BRL", Total: 1052, AgentProfileUrl: "https://agent.example/p.json",
			BuyerEmail: "b52@example.com", CreateTimeUnix: created.Unix(), UpdateTimeUnix: created.Add(52 * time.Minute).Unix()}
		if len(r.GetCheckouts()) != 1 || !proto.Equal(r.GetCheckouts()[0], want) || r.GetNextPageToken() == "" {
			t.Errorf("page of one: %v, want %v", r, want)
		}
	})
	t.Run("status filter", func(t *testing.T) {
		r, err := list(&checkoutv1.ListCheckoutsRequest{Status: "completed"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"chk_043", "chk_033", "chk_023", "chk_013", "chk_003"}; !equalStrings(idsOf(r), want) || r.GetNextPageToken() != "" {
			t.Errorf("completed: %v (token %q), want %v", idsOf(r), r.GetNextPageToken(), want)
		}
		tok := base64.RawURLEncoding.EncodeToString([]byte("chk_023"))
		r, err = list(&checkoutv1.ListCheckoutsRequest{Status: "completed", PageToken: tok})
		if err != nil || !equalStrings(idsOf(r), []string{"chk_013", "chk_003"}) {
			t.Errorf("completed after chk_023: %v %v", idsOf(r), err)
		}
		r, err = list(&checkoutv1.ListCheckoutsRequest{Status: "canceled"})
		if err != nil || len(r.GetCheckouts()) != 0 || r.GetNextPageToken() != "" {
			t.Errorf("canceled: %v %v", r, err)
		}
	})
	t.Run("page size bounds", func(t *testing.T) {
		for _, tc := range []struct {
			size int32
			want []string
		}{
			{0, desc(52, 3)},   // default 50
			{-1, desc(52, 3)},  // default 50
			{501, desc(52, 3)}, // above the maximum: the default
			{500, desc(52, 0)}, // the maximum
			{53, desc(52, 0)},  // exactly all: a token to an empty page
			{3, desc(52, 50)},  // small
		} {
			r, err := list(&checkoutv1.ListCheckoutsRequest{PageSize: tc.size})
			if err != nil {
				t.Fatal(err)
			}
			full := len(tc.want) == 50 || int(tc.size) == len(tc.want)
			if !equalStrings(idsOf(r), tc.want) || (r.GetNextPageToken() != "") != full {
				t.Errorf("size %d: %d rows %v… token %q", tc.size, len(idsOf(r)), idsOf(r)[:1], r.GetNextPageToken())
			}
		}
		r, err := list(&checkoutv1.ListCheckoutsRequest{PageSize: 53})
		if err != nil {
			t.Fatal(err)
		}
		r, err = list(&checkoutv1.ListCheckoutsRequest{PageSize: 53, PageToken: r.GetNextPageToken()})
		if err != nil || len(r.GetCheckouts()) != 0 || r.GetNextPageToken() != "" {
			t.Errorf("after the last full page: %v %v", r, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		_, err := list(&checkoutv1.ListCheckoutsRequest{Status: "open"})
		wantErr(t, err, connect.CodeInvalidArgument, "invalid_status", "status")
		_, err = list(&checkoutv1.ListCheckoutsRequest{PageToken: "not base64!"})
		wantErr(t, err, connect.CodeInvalidArgument, "invalid_page_token", "page_token")
	})
}
