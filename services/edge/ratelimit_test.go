package edge

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
)

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

// leaseServer is a tenants service that only leases, as told by answer,
// over a real listener.
type leaseServer struct {
	tenantsv1connect.UnimplementedTenantServiceHandler
	calls  atomic.Int64
	mu     sync.Mutex
	wants  []int64
	answer func(want int64) (*tenantsv1.LeaseRateTokensResponse, error)
}

func (s *leaseServer) LeaseRateTokens(_ context.Context, req *connect.Request[tenantsv1.LeaseRateTokensRequest]) (*connect.Response[tenantsv1.LeaseRateTokensResponse], error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.wants = append(s.wants, req.Msg.GetWant())
	answer := s.answer
	s.mu.Unlock()
	r, err := answer(req.Msg.GetWant())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(r), nil
}

// testLimiter is a limiter over s with a clock the test moves.
func testLimiter(t *testing.T, s *leaseServer) (*rateLimiter, *time.Time, context.Context) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(tenantsv1connect.NewTenantServiceHandler(s))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l := newRateLimiter(tenantsv1connect.NewTenantServiceClient(srv.Client(), srv.URL), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	return l, &now, tenancy.With(context.Background(), uuid.New())
}

// Leases are sized from the limits the last one reported (a tenth of a
// second's worth, twice the last allowance when it was spent in full, up
// to a quarter of a second's worth, at most half the burst), and leased
// tokens not spent within leaseTTL are void.
func TestRateLimiterLeaseSizeAndExpiry(t *testing.T) {
	s := &leaseServer{answer: func(want int64) (*tenantsv1.LeaseRateTokensResponse, error) {
		return &tenantsv1.LeaseRateTokensResponse{Granted: want, RatePerSecond: 100, Burst: 200}, nil
	}}
	l, now, ctx := testLimiter(t, s)
	tenant := "t"
	for i := range 11 { // 1 (limits unknown yet) + 10
		if !l.take(ctx, tenant, "merchant").ok {
			t.Fatalf("take %d refused", i)
		}
	}
	if s.calls.Load() != 2 || s.wants[0] != 1 || s.wants[1] != 10 {
		t.Fatalf("%d leases wanting %v, want 2 wanting [1 10]", s.calls.Load(), s.wants)
	}
	// The 10 were spent in full: the next lease is twice that.
	if !l.take(ctx, tenant, "merchant").ok || s.calls.Load() != 3 || s.wants[2] != 20 {
		t.Fatalf("after the batch: %d leases wanting %v, want 3, the last 20", s.calls.Load(), s.wants)
	}
	for range 19 {
		l.take(ctx, tenant, "merchant")
	}
	// ...and then a quarter of a second's worth at most (25, not 40).
	if !l.take(ctx, tenant, "merchant").ok || s.calls.Load() != 4 || s.wants[3] != 25 {
		t.Fatalf("after the second batch: %d leases wanting %v, want 4, the last 25", s.calls.Load(), s.wants)
	}
	*now = now.Add(leaseTTL + time.Millisecond) // 24 tokens left, now void
	// One of 25 served: back to a tenth of a second's worth.
	if !l.take(ctx, tenant, "merchant").ok || s.calls.Load() != 5 || s.wants[4] != 10 {
		t.Fatalf("after the lease expired: %d leases wanting %v, want 5, the last 10", s.calls.Load(), s.wants)
	}
	// Half the burst bounds a lease: rate 100, burst 6 → 3.
	s.mu.Lock()
	s.answer = func(want int64) (*tenantsv1.LeaseRateTokensResponse, error) {
		return &tenantsv1.LeaseRateTokensResponse{Granted: want, RatePerSecond: 100, Burst: 6}, nil
	}
	s.mu.Unlock()
	*now = now.Add(2 * leaseTTL)
	l.take(ctx, tenant, "merchant")
	*now = now.Add(2 * leaseTTL)
	l.take(ctx, tenant, "merchant")
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.wants[len(s.wants)-1]; w != 3 {
		t.Fatalf("lease with burst 6 wanted %d, want 3", w)
	}
}

// An empty bucket refuses with the service's retry hint, rounded up, and
// is not asked again before it.
func TestRateLimiterEmptyBucket(t *testing.T) {
	s := &leaseServer{answer: func(int64) (*tenantsv1.LeaseRateTokensResponse, error) {
		return &tenantsv1.LeaseRateTokensResponse{Granted: 0, RetryAfterSeconds: 42.25, RatePerSecond: 0.02, Burst: 1}, nil
	}}
	l, now, ctx := testLimiter(t, s)
	pe := l.check(ctx)
	if pe == nil || pe.status != http.StatusTooManyRequests || pe.code != "rate_limited" || pe.retryAfterHeader() != "43" {
		t.Fatalf("empty bucket: %+v, want 429 rate_limited, Retry-After 43", pe)
	}
	*now = now.Add(40 * time.Second)
	if pe := l.check(ctx); pe == nil || pe.retryAfterHeader() != "3" || s.calls.Load() != 1 {
		t.Fatalf("40 s later: %+v after %d leases, want Retry-After 3 without a new lease", pe, s.calls.Load())
	}
	*now = now.Add(3 * time.Second)
	l.check(ctx)
	if s.calls.Load() != 2 {
		t.Fatalf("after the hint: %d leases, want 2", s.calls.Load())
	}
	tid, _ := tenancy.From(ctx)
	if v := counterValue(l.limited.WithLabelValues(tid.String(), "merchant")); v != 3 {
		t.Fatalf("bcp_rate_limited_total = %g, want 3", v)
	}
}

// Concurrent requests for one bucket share lease calls: those arriving
// while one is in flight wait for it, and the next is sized for all that
// still wait, so 20 concurrent requests cost a couple of calls, not 20
// (typically two; scheduling can make it three).
func TestRateLimiterSharesLeases(t *testing.T) {
	// The lease blocks until every request waits for it; it grants what
	// it was asked for.
	release := make(chan struct{})
	s := &leaseServer{answer: func(want int64) (*tenantsv1.LeaseRateTokensResponse, error) {
		<-release
		return &tenantsv1.LeaseRateTokensResponse{Granted: want, RatePerSecond: 1000, Burst: 1000}, nil
	}}
	l, _, ctx := testLimiter(t, s)
	const n = 20
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !l.take(ctx, "t", "merchant").ok {
				refused.Add(1)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		w := int64(0)
		if b := l.buckets[bucketKey{"t", "merchant"}]; b != nil {
			w = b.waiting
		}
		l.mu.Unlock()
		if w == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waiting, want %d", w, n)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calls.Load(); c > 4 || refused.Load() != 0 {
		t.Fatalf("%d lease calls (wanting %v), %d refused; want a few serving all %d", c, s.wants, refused.Load(), n)
	}
}

// When the tenants service fails, requests pass (fail open) for
// failOpenFor without further calls, and the failure is counted.
func TestRateLimiterFailsOpen(t *testing.T) {
	s := &leaseServer{answer: func(int64) (*tenantsv1.LeaseRateTokensResponse, error) {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("down"))
	}}
	l, now, ctx := testLimiter(t, s)
	for i := range 5 {
		if pe := l.check(ctx); pe != nil {
			t.Fatalf("request %d refused while the tenants service is down: %v", i, pe)
		}
	}
	if c := s.calls.Load(); c != 1 {
		t.Fatalf("%d lease calls within failOpenFor, want 1", c)
	}
	*now = now.Add(failOpenFor + time.Millisecond)
	l.check(ctx)
	if c := s.calls.Load(); c != 2 {
		t.Fatalf("%d lease calls after failOpenFor, want 2", c)
	}
	if v := counterValue(l.leases.WithLabelValues("error")); v != 2 {
		t.Fatalf("lease errors = %g, want 2", v)
	}
	if v := counterValue(l.failOpen); v != 6 {
		t.Fatalf("bcp_rate_limit_fail_open_total = %g, want 6", v)
	}
}

// agentBucketKey's kept names are the hashed ones, and their number is
// bounded.
func TestAgentBucketKeyKept(t *testing.T) {
	for _, p := range []string{"https://a.example/p.json", "https://b.example/p.json", strings.Repeat("x", maxKeptProfileURL+1)} {
		for range 2 {
			if got, want := agentBucketKey(p), hashAgentKey(p); got != want || len(want) != len("agent:")+64 {
				t.Fatalf("%.30q: %q, want %q", p, got, want)
			}
		}
	}
	for i := range maxAgentKeys + 10 {
		agentBucketKey("https://a.example/" + strconv.Itoa(i))
	}
	agentKeys.RLock()
	n := len(agentKeys.m)
	agentKeys.RUnlock()
	if n > maxAgentKeys {
		t.Fatalf("%d names kept, want at most %d", n, maxAgentKeys)
	}
}
