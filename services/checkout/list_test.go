package checkout_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
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

// The idempotency keys through the connect API: a first claim executes, a
// retry while it runs is in flight, another request under the key is a
// conflict, a released key executes again, a finished one replays its
// response (and is never released or taken over), an abandoned claim is
// taken over after the lease; keys are per tenant.
func TestIdempotencyKeysAPI(t *testing.T) {
	e := newEnv(t)
	cl := e.r.Clients.Checkout
	const scope = "mcp agent complete_checkout"
	hash := sha256.Sum256([]byte("complete_checkout\n{a}"))
	other := sha256.Sum256([]byte("complete_checkout\n{b}"))
	const (
		execute  = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_EXECUTE
		inFlight = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_IN_FLIGHT
		conflict = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_CONFLICT
		replay   = checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_REPLAY
	)
	claimIn := func(ctx context.Context, key string, h [32]byte) *checkoutv1.ClaimIdempotencyKeyResponse {
		t.Helper()
		r, err := cl.ClaimIdempotencyKey(ctx, connect.NewRequest(&checkoutv1.ClaimIdempotencyKeyRequest{Scope: scope, Key: key, RequestHash: h[:]}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg
	}
	claim := func(key string, h [32]byte) checkoutv1.ClaimIdempotencyKeyResponse_Outcome {
		return claimIn(e.ctx, key, h).GetOutcome()
	}
	finish := func(key string, resp []byte) error {
		_, err := cl.FinishIdempotencyKey(e.ctx, connect.NewRequest(&checkoutv1.FinishIdempotencyKeyRequest{Scope: scope, Key: key, Response: resp}))
		return err
	}
	release := func(key string) {
		t.Helper()
		if _, err := cl.ReleaseIdempotencyKey(e.ctx, connect.NewRequest(&checkoutv1.ReleaseIdempotencyKeyRequest{Scope: scope, Key: key})); err != nil {
			t.Fatal(err)
		}
	}

	if got := claim("k1", hash); got != execute {
		t.Fatalf("first claim: %v", got)
	}
	if got := claim("k1", hash); got != inFlight {
		t.Errorf("retry while in flight: %v", got)
	}
	if got := claim("k1", other); got != conflict {
		t.Errorf("another request under the key: %v", got)
	}
	// Released (the request failed without an outcome): the retry executes.
	release("k1")
	if n := e.sql(`SELECT count(*) FROM checkout.idempotency_keys WHERE tenant_id = $1 AND key = 'k1'`, e.m.TenantID); n != 0 {
		t.Errorf("%d rows after release", n)
	}
	if got := claim("k1", other); got != execute {
		t.Errorf("after release, any request executes: %v", got)
	}
	if err := finish("k1", []byte(`{"status":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	r := claimIn(e.ctx, "k1", other)
	if r.GetOutcome() != replay || string(r.GetResponse()) != `{"status":"completed"}` {
		t.Errorf("after finish: %v %s", r.GetOutcome(), r.GetResponse())
	}
	if got := claim("k1", hash); got != conflict {
		t.Errorf("another request under a finished key: %v", got)
	}
	// A finished key is neither released, finished again nor taken over.
	release("k1")
	wantErr(t, finish("k1", []byte(`{}`)), connect.CodeFailedPrecondition, "not_claimed", "")
	e.exec(`UPDATE checkout.idempotency_keys SET created_at = now() - interval '1 hour' WHERE tenant_id = $1 AND key = 'k1'`, e.m.TenantID)
	if r := claimIn(e.ctx, "k1", other); r.GetOutcome() != replay || string(r.GetResponse()) != `{"status":"completed"}` {
		t.Errorf("an old finished key: %v %s", r.GetOutcome(), r.GetResponse())
	}
	// Finishing a key nobody claimed.
	wantErr(t, finish("never", []byte(`{}`)), connect.CodeFailedPrecondition, "not_claimed", "")

	// An abandoned claim: in flight within the lease, taken over after it.
	if got := claim("k2", hash); got != execute {
		t.Fatalf("k2: %v", got)
	}
	e.exec(`UPDATE checkout.idempotency_keys SET created_at = now() - interval '90 seconds' WHERE tenant_id = $1 AND key = 'k2'`, e.m.TenantID)
	if got := claim("k2", hash); got != inFlight {
		t.Errorf("within the lease: %v", got)
	}
	e.exec(`UPDATE checkout.idempotency_keys SET created_at = now() - interval '3 minutes' WHERE tenant_id = $1 AND key = 'k2'`, e.m.TenantID)
	if got := claim("k2", other); got != conflict {
		t.Errorf("another request after the lease: %v", got)
	}
	if got := claim("k2", hash); got != execute {
		t.Errorf("the same request after the lease: %v", got)
	}
	if got := claim("k2", hash); got != inFlight {
		t.Errorf("right after the takeover: %v", got)
	}

	// Keys are the tenant's: another tenant's k1 is its own.
	if got := claimIn(tenancy.With(context.Background(), uuid.New()), "k1", hash).GetOutcome(); got != execute {
		t.Errorf("another tenant's k1: %v", got)
	}

	// Arguments.
	long := strings.Repeat("k", 256)
	for _, tc := range []struct {
		scope, key  string
		hash        []byte
		code, field string
	}{
		{"", "k", hash[:], "invalid_scope", "scope"},
		{strings.Repeat("s", 2301), "k", hash[:], "invalid_scope", "scope"},
		{scope, "", hash[:], "invalid_idempotency_key", "key"},
		{scope, long, hash[:], "invalid_idempotency_key", "key"},
		{scope, "k", hash[:31], "invalid_hash", "request_hash"},
		{scope, "k", nil, "invalid_hash", "request_hash"},
	} {
		_, err := cl.ClaimIdempotencyKey(e.ctx, connect.NewRequest(&checkoutv1.ClaimIdempotencyKeyRequest{Scope: tc.scope, Key: tc.key, RequestHash: tc.hash}))
		wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
		if tc.code == "invalid_hash" {
			continue
		}
		_, err = cl.FinishIdempotencyKey(e.ctx, connect.NewRequest(&checkoutv1.FinishIdempotencyKeyRequest{Scope: tc.scope, Key: tc.key}))
		wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
		_, err = cl.ReleaseIdempotencyKey(e.ctx, connect.NewRequest(&checkoutv1.ReleaseIdempotencyKeyRequest{Scope: tc.scope, Key: tc.key}))
		wantErr(t, err, connect.CodeInvalidArgument, tc.code, tc.field)
	}
	if _, err := cl.ClaimIdempotencyKey(e.ctx, connect.NewRequest(&checkoutv1.ClaimIdempotencyKeyRequest{Scope: scope, Key: strings.Repeat("k", 255), RequestHash: hash[:]})); err != nil {
		t.Errorf("a 255-character key: %v", err)
	}
	if n := e.sql(`SELECT count(*) FROM checkout.idempotency_keys WHERE tenant_id = $1`, e.m.TenantID); n != 3 {
		t.Errorf("%d keys stored, want 3 (k1, k2, the 255-character one)", n)
	}
}

// Concurrent claims of one new key: exactly one executes, every other is
// told the request is in flight.
func TestConcurrentClaimsOneExecutes(t *testing.T) {
	e := newEnv(t)
	hash := sha256.Sum256([]byte("complete_checkout\n{a}"))
	for k := 0; k < 5; k++ {
		key := fmt.Sprintf("race-%d", k)
		const n = 8
		outcomes := make(chan checkoutv1.ClaimIdempotencyKeyResponse_Outcome, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			go func() {
				<-start
				r, err := e.r.Clients.Checkout.ClaimIdempotencyKey(e.ctx, connect.NewRequest(&checkoutv1.ClaimIdempotencyKeyRequest{Scope: "s", Key: key, RequestHash: hash[:]}))
				if err != nil {
					t.Errorf("claim: %v", err)
					outcomes <- checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_UNSPECIFIED
					return
				}
				outcomes <- r.Msg.GetOutcome()
			}()
		}
		close(start)
		got := map[checkoutv1.ClaimIdempotencyKeyResponse_Outcome]int{}
		for i := 0; i < n; i++ {
			got[<-outcomes]++
		}
		if got[checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_EXECUTE] != 1 || got[checkoutv1.ClaimIdempotencyKeyResponse_OUTCOME_IN_FLIGHT] != n-1 {
			t.Errorf("%s: %v", key, got)
		}
	}
}
