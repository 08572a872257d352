package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1/tenantsv1connect"
	"github.com/bcpdev/bcp/services/edge/agentauth"
)

// Rate limits (issue 21): token buckets per merchant and per agent of a
// merchant, correct across any number of edge processes. The edge has no
// database, so the one bucket of each (tenant, key) is a row of the tenants
// service, which also holds the limits (the merchant's settings). An edge
// keeps a small local allowance per bucket and, when it is spent, leases a
// batch from the row (LeaseRateTokens): a tenth of a second's worth, or up
// to a quarter of a second's when the last allowance was spent in full
// before it expired, so a busy bucket costs a few leases a second per edge,
// not one per request. Leased tokens not used within leaseTTL (5 s) are
// dropped, so an edge cannot keep them: a quiet bucket leases once per
// leaseTTL per edge, not once a second (at 20 merchants with 16 agents,
// 0.6 leases per purchase with a 1-s TTL). An edge holds at most one
// allowance per bucket, a quarter of a second's worth, and every token
// granted came from the row, so across N edges at most burst + rate·t
// requests pass in any window t.
//
// When the bucket is empty the tenants service says when its next token
// is due; until then this edge answers 429 locally without asking again.
// When the tenants service cannot be reached the limiter fails open for
// failOpenFor (logged once per failLogEvery, counted): a registry outage
// already fails the checkout calls themselves, and refusing every agent
// request because of the limiter would only add to it.

const (
	leaseTTL     = 5 * time.Second
	leaseTimeout = 2 * time.Second
	failOpenFor  = time.Second
	failLogEvery = 10 * time.Second
	// maxLocalBuckets bounds the allowances kept (one per active tenant
	// and agent); beyond it arbitrary ones are dropped, which costs a
	// lease, never a wrong answer.
	maxLocalBuckets = 100_000
	// leaseAttempts bounds how often one request waits for a lease that
	// concurrent requests then spend before it.
	leaseAttempts = 4
)

type rateLimiter struct {
	client tenantsv1connect.TenantServiceClient
	log    *slog.Logger
	now    func() time.Time
	sf     singleflight.Group

	mu      sync.Mutex
	buckets map[bucketKey]*localBucket

	limited  *prometheus.CounterVec // requests refused, by tenant and scope
	leases   *prometheus.CounterVec // lease calls by result
	failOpen prometheus.Counter     // requests let through unchecked
	lastLog  atomic.Int64           // unix nanos of the last fail-open log line
}

// localBucket is this edge's view of one shared bucket.
type localBucket struct {
	tokens   int64     // leased and not yet spent
	expires  time.Time // tokens are void after this
	blocked  time.Time // the shared bucket is empty until then
	failOpen time.Time // the tenants service failed: let requests through until then
	waiting  int64     // requests waiting for a lease (sizes the next one)
	rate     float64   // the bucket's limits as of the last lease (0: none yet)
	burst    int64
	granted  int64 // the last lease's size
}

// want is the size of the next lease: a tenth of a second's worth, or
// twice what the last allowance served when that was more (up to a
// quarter of a second's worth: a busy bucket leases less often, an edge
// holds little its other requests or the other edges could use), at least
// one and at most half the burst (so two edges can share a small bucket),
// and at least the requests already waiting for it. Called before the
// allowance is replaced, so tokens is what is left of the last one
// (expired or not).
func (b *localBucket) want() int64 {
	n := int64(1)
	if b.rate > 0 {
		used := b.granted - max(b.tokens, 0)
		n = max(int64(math.Ceil(b.rate/10)), min(2*used, int64(math.Ceil(b.rate/4))))
		n = min(n, max(1, b.burst/2))
	}
	return max(n, 1, min(b.waiting, max(1, b.burst)))
}

func newRateLimiter(c tenantsv1connect.TenantServiceClient, reg prometheus.Registerer, log *slog.Logger) *rateLimiter {
	l := &rateLimiter{client: c, log: log, now: time.Now, buckets: map[bucketKey]*localBucket{},
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_rate_limited_total",
			Help: "Agent requests refused with 429 rate_limited, by tenant id and limit (merchant, agent).",
		}, []string{"tenant", "scope"}),
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bcp_rate_limit_leases_total",
			Help: "LeaseRateTokens calls by result: granted (some tokens), empty (none), error (the tenants service failed; the limiter failed open).",
		}, []string{"result"}),
		failOpen: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bcp_rate_limit_fail_open_total",
			Help: "Agent requests let through without a rate limit check because the tenants service could not be reached.",
		}),
	}
	if reg != nil {
		reg.MustRegister(l.limited, l.leases, l.failOpen)
	}
	return l
}

// check takes one token from the agent's bucket, then one from the
// merchant's. The agent's goes first: an agent over its own limit is
// refused without spending the merchant's tokens, so it cannot starve the
// merchant's other agents. A request without an authenticated agent (none
// reach the tools today) counts against the merchant only.
func (l *rateLimiter) check(ctx context.Context) *protoError {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil //nolint:nilerr // not behind Host routing: nothing to limit by
	}
	tenant := tid.String()
	unchecked := false
	if p, ok := agentauth.PrincipalFrom(ctx); ok && p.AgentProfileURL != "" {
		r := l.take(ctx, tenant, agentBucketKey(p.AgentProfileURL))
		if !r.ok {
			l.limited.WithLabelValues(tenant, "agent").Inc()
			return rateLimited(r.wait, "this agent")
		}
		unchecked = r.unchecked
	}
	r := l.take(ctx, tenant, "merchant")
	if !r.ok {
		l.limited.WithLabelValues(tenant, "merchant").Inc()
		return rateLimited(r.wait, "agents of this merchant")
	}
	if unchecked || r.unchecked {
		l.failOpen.Inc()
	}
	return nil
}

// takeResult is one bucket's answer: ok (a token was spent, or the check
// failed open: unchecked), or how long to wait.
type takeResult struct {
	ok, unchecked bool
	wait          time.Duration
}

// agentBucketKey names an agent's bucket: the profile URL hashed, which
// bounds the key's size whatever the URL. An agent sends every request
// with the same profile: the names of up to maxAgentKeys profiles (short
// enough) are kept.
func agentBucketKey(profileURL string) string {
	if len(profileURL) > maxKeptProfileURL {
		return hashAgentKey(profileURL)
	}
	agentKeys.RLock()
	k, ok := agentKeys.m[profileURL]
	agentKeys.RUnlock()
	if ok {
		return k
	}
	k = hashAgentKey(profileURL)
	agentKeys.Lock()
	if len(agentKeys.m) >= maxAgentKeys {
		clear(agentKeys.m) // a flood of distinct profiles: start over, bounded
	}
	agentKeys.m[profileURL] = k
	agentKeys.Unlock()
	return k
}

func hashAgentKey(profileURL string) string {
	h := sha256.Sum256([]byte(profileURL))
	return "agent:" + hex.EncodeToString(h[:])
}

// agentKeys are agentBucketKey's kept answers (≈ 3 MB at most).
var agentKeys = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

const (
	maxKeptProfileURL = 512
	maxAgentKeys      = 4096
)

func rateLimited(wait time.Duration, who string) *protoError {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	pe := newProtoError(http.StatusTooManyRequests, codeProtocol, "rate_limited",
		"too many requests from "+who+"; retry after "+strconv.Itoa(secs)+" s")
	pe.retryAfter = secs
	return pe
}

// take spends one token of the bucket, leasing more when the allowance is
// spent, or says how long to wait when the bucket is empty.
func (l *rateLimiter) take(ctx context.Context, tenant, key string) takeResult {
	bk := bucketKey{tenant: tenant, key: key}
	for range leaseAttempts {
		now := l.now()
		l.mu.Lock()
		b := l.bucket(bk)
		switch {
		case b.tokens > 0 && now.Before(b.expires):
			b.tokens--
			l.mu.Unlock()
			return takeResult{ok: true}
		case now.Before(b.failOpen):
			l.mu.Unlock()
			return takeResult{ok: true, unchecked: true}
		case now.Before(b.blocked):
			wait := b.blocked.Sub(now)
			l.mu.Unlock()
			return takeResult{wait: wait}
		}
		b.waiting++
		l.mu.Unlock()
		// Concurrent requests for one bucket share one lease call.
		_, _, _ = l.sf.Do(tenant+" "+key, func() (any, error) {
			l.lease(ctx, bk)
			return nil, nil
		})
		l.mu.Lock()
		if b := l.buckets[bk]; b != nil && b.waiting > 0 {
			b.waiting--
		}
		l.mu.Unlock()
	}
	// Every lease this request waited for was spent by others first: the
	// bucket is being drained as fast as it refills.
	return takeResult{wait: time.Second}
}

// bucketKey names a local bucket: the tenant's id and the bucket's key
// ("merchant" or agentBucketKey's).
type bucketKey struct{ tenant, key string }

// bucket returns bk's local bucket, creating it. Called with l.mu held.
func (l *rateLimiter) bucket(bk bucketKey) *localBucket {
	b, ok := l.buckets[bk]
	if !ok {
		for k := range l.buckets {
			if len(l.buckets) < maxLocalBuckets {
				break
			}
			delete(l.buckets, k)
		}
		b = &localBucket{}
		l.buckets[bk] = b
	}
	return b
}

// lease asks the tenants service for a batch of bk's tokens and records
// the answer. The call outlives the request that happens to make it (its
// waiters share it) but not leaseTimeout; the tenant travels in ctx.
func (l *rateLimiter) lease(ctx context.Context, bk bucketKey) {
	l.mu.Lock()
	want := l.bucket(bk).want()
	l.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	resp, err := l.client.LeaseRateTokens(cctx, connect.NewRequest(&tenantsv1.LeaseRateTokensRequest{Key: bk.key, Want: want}))
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(bk) // the same one, or a fresh one after an invalidation
	if err != nil {
		l.leases.WithLabelValues("error").Inc()
		b.failOpen = now.Add(failOpenFor)
		if last := l.lastLog.Load(); now.UnixNano()-last >= int64(failLogEvery) && l.lastLog.CompareAndSwap(last, now.UnixNano()) {
			l.log.WarnContext(ctx, "edge: rate limits cannot be checked (tenants service failed); letting requests through", "err", err)
		}
		return
	}
	m := resp.Msg
	b.rate, b.burst = m.GetRatePerSecond(), m.GetBurst()
	b.tokens, b.granted, b.expires = m.GetGranted(), m.GetGranted(), now.Add(leaseTTL)
	if m.GetGranted() == 0 {
		l.leases.WithLabelValues("empty").Inc()
		b.blocked = now.Add(time.Duration(m.GetRetryAfterSeconds() * float64(time.Second)))
		return
	}
	l.leases.WithLabelValues("granted").Inc()
}

// invalidate drops a tenant's allowances when its registry data changes
// (its limits may have): the next request leases with the new limits.
func (l *rateLimiter) invalidate(tenantID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.buckets {
		if k.tenant == tenantID {
			delete(l.buckets, k)
		}
	}
}

func (l *rateLimiter) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.buckets)
}
