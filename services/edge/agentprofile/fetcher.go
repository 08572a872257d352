package agentprofile

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bcpdev/bcp/internal/netguard"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// Defaults and floors (digest §2.6).
const (
	DefaultTTL = 5 * time.Minute
	// MinTTL is the cache TTL floor, applied whatever the origin's
	// Cache-Control says, and the minimum interval between two forced
	// refreshes of one URL.
	MinTTL                      = 60 * time.Second
	DefaultNegativeTTL          = 10 * time.Second
	DefaultMaxBytes             = 256 << 10
	MinMaxBytes                 = 128 << 10 // §2.6: a body limit must not be lower
	DefaultTimeout              = 3 * time.Second
	DefaultConnectTimeout       = time.Second
	DefaultMaxEntries           = 10000
	DefaultMaxConcurrentFetches = 64
	DefaultUserAgent            = "bcp-edge/1 (agent profile fetcher; +https://bcp.dev.br)"
)

// Options configure a Fetcher. The zero value is usable.
type Options struct {
	// HTTPClient supplies TLS settings (root CAs) through its Transport,
	// which must be nil or an *http.Transport: the Fetcher clones it and
	// replaces dialing, proxying and redirect handling with its own so the
	// SSRF guard cannot be bypassed. Its Timeout, Jar and CheckRedirect are
	// not used.
	HTTPClient *http.Client
	// TTL of a fetched profile (default 5 min, never below MinTTL). A
	// shorter origin max-age is honoured down to MinTTL.
	TTL time.Duration
	// NegativeTTL is how long a failed fetch is remembered (default 10 s,
	// at most TTL), so a dead profile host is not hit on every request.
	NegativeTTL time.Duration
	// MaxBytes bounds the profile body (default 256 KiB, never below
	// 128 KiB).
	MaxBytes int64
	// Timeout bounds one fetch end to end: queueing, DNS, connect, TLS,
	// headers and body (default 3 s).
	Timeout time.Duration
	// ConnectTimeout bounds the TCP connect (default 1 s, at most Timeout).
	ConnectTimeout time.Duration
	// MaxEntries bounds the cache (default 10 000).
	MaxEntries int
	// MaxConcurrentFetches bounds fetches in flight across all URLs
	// (default 64): agents choose profile URLs, so the discovery footprint
	// must be fixed (§2.6).
	MaxConcurrentFetches int
	// Now is the clock for cache lifetimes (default time.Now).
	Now func() time.Time
	// Validator checks profiles (default bcpschema.NewValidator()).
	Validator *bcpschema.Validator
	// UserAgent sent with fetches (default DefaultUserAgent).
	UserAgent string
}

// Fetcher fetches, validates and caches agent profiles. It is safe for
// concurrent use.
type Fetcher struct {
	prod, dev   *http.Client
	v           *bcpschema.Validator
	now         func() time.Time
	ttl, negTTL time.Duration
	timeout     time.Duration
	maxBytes    int64
	userAgent   string
	sem         chan struct{}

	seed     maphash.Seed
	shards   []shard
	mask     uint64
	perShard int
}

type cacheKey struct {
	url string
	dev bool
}

// entry is immutable once stored, except for the atomics.
type entry struct {
	prof    *Profile
	err     *Error
	expires int64 // unix ns
	used    atomic.Int64
	forced  atomic.Int64 // unix ns of the last forced refresh, 0 = never
}

func (e *entry) result() (*Profile, error) {
	if e.err != nil {
		return nil, e.err
	}
	return e.prof, nil
}

// flight is one fetch in progress; concurrent callers for the same key
// wait on it instead of fetching again.
type flight struct {
	done    chan struct{}
	prof    *Profile
	err     *Error
	waiters atomic.Int32 // callers sharing this fetch (tests, debugging)
}

type shard struct {
	mu      sync.RWMutex
	m       map[cacheKey]*entry
	flights map[cacheKey]*flight
}

// New builds a Fetcher.
func New(opts Options) (*Fetcher, error) {
	f := &Fetcher{
		v:         opts.Validator,
		now:       opts.Now,
		ttl:       opts.TTL,
		negTTL:    opts.NegativeTTL,
		timeout:   opts.Timeout,
		maxBytes:  opts.MaxBytes,
		userAgent: opts.UserAgent,
		seed:      maphash.MakeSeed(),
	}
	if f.v == nil {
		v, err := bcpschema.NewValidator()
		if err != nil {
			return nil, fmt.Errorf("agentprofile: building the profile validator: %w", err)
		}
		f.v = v
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.ttl <= 0 {
		f.ttl = DefaultTTL
	}
	f.ttl = max(f.ttl, MinTTL)
	if f.negTTL <= 0 {
		f.negTTL = DefaultNegativeTTL
	}
	f.negTTL = min(f.negTTL, f.ttl)
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.maxBytes <= 0 {
		f.maxBytes = DefaultMaxBytes
	}
	f.maxBytes = max(f.maxBytes, MinMaxBytes)
	if f.userAgent == "" {
		f.userAgent = DefaultUserAgent
	}
	connect := opts.ConnectTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	connect = min(connect, f.timeout)
	conc := opts.MaxConcurrentFetches
	if conc <= 0 {
		conc = DefaultMaxConcurrentFetches
	}
	f.sem = make(chan struct{}, conc)

	var base *http.Transport
	if opts.HTTPClient != nil && opts.HTTPClient.Transport != nil {
		t, ok := opts.HTTPClient.Transport.(*http.Transport)
		if !ok {
			return nil, errors.New("agentprofile: Options.HTTPClient.Transport must be an *http.Transport so the address guard can be installed")
		}
		base = t
	}
	// Two clients, two connection pools: a connection a development tenant
	// opened to a private address must never be reused by a production
	// fetch, which would skip the dial-time check.
	f.prod = newClient(base, false, connect, f.timeout)
	f.dev = newClient(base, true, connect, f.timeout)

	maxEntries := opts.MaxEntries
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	// Shards spread lock traffic on the hit path; keep each one big enough
	// for sampled eviction to be meaningful and the total within bounds.
	n := 1
	for n < 16 && maxEntries/(n*2) >= 64 {
		n *= 2
	}
	f.shards = make([]shard, n)
	for i := range f.shards {
		f.shards[i].m = map[cacheKey]*entry{}
		f.shards[i].flights = map[cacheKey]*flight{}
	}
	f.mask = uint64(n - 1)
	f.perShard = maxEntries / n
	return f, nil
}

func newClient(base *http.Transport, allowPrivate bool, connect, timeout time.Duration) *http.Client {
	var t *http.Transport
	if base != nil {
		t = base.Clone()
	} else {
		t = &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	}
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second, Control: netguard.DialControl(allowPrivate)}
	// A proxy would be dialed instead of the target, so the guard would
	// check the proxy's address; custom dial hooks would skip the guard.
	t.Proxy = nil
	t.OnProxyConnectResponse = nil
	t.GetProxyConnectHeader = nil
	t.DialContext = d.DialContext
	t.DialTLSContext = nil
	// The deprecated hooks a cloned base may carry: they would win.
	t.Dial = nil    //nolint:staticcheck // SA1019: cleared, not used
	t.DialTLS = nil //nolint:staticcheck // SA1019: cleared, not used
	t.TLSHandshakeTimeout = timeout
	t.ResponseHeaderTimeout = timeout
	t.MaxResponseHeaderBytes = 64 << 10
	t.ForceAttemptHTTP2 = true
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 2
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{
		Transport: t,
		// Profile endpoints MUST NOT redirect and fetchers MUST NOT follow
		// 3xx (§2.6): hand the 3xx back, it becomes profile_unreachable.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (f *Fetcher) shardFor(url string) *shard {
	return &f.shards[maphash.String(f.seed, url)&f.mask]
}

// Get returns the validated profile at profileURL, from cache when fresh.
// dev marks a development tenant: http and private/loopback addresses are
// then allowed. Failures are *Error (invalid_profile_url,
// profile_unreachable, profile_malformed); a failed fetch is remembered for
// NegativeTTL.
//
// The cache-hit path takes a shard read lock and does not allocate.
func (f *Fetcher) Get(ctx context.Context, profileURL string, dev bool) (*Profile, error) {
	k := cacheKey{url: profileURL, dev: dev}
	sh := f.shardFor(profileURL)
	now := f.now().UnixNano()
	sh.mu.RLock()
	e := sh.m[k]
	sh.mu.RUnlock()
	if e != nil && now < e.expires {
		// Recency for eviction, at 1 s granularity so a hot entry's cache
		// line is not written by every request.
		if now-e.used.Load() > int64(time.Second) {
			e.used.Store(now)
		}
		return e.result()
	}
	return f.miss(ctx, k, sh, false)
}

// ForceRefresh refetches profileURL, for a signature whose kid is not in
// the cached profile (the agent may have rotated keys). A URL is force-
// refreshed at most once per MinTTL (§2.6); within that interval the cached
// profile is returned (or the refresh in flight is joined). A failed forced
// refresh returns its error but keeps a still-fresh cached profile.
func (f *Fetcher) ForceRefresh(ctx context.Context, profileURL string, dev bool) (*Profile, error) {
	return f.miss(ctx, cacheKey{url: profileURL, dev: dev}, f.shardFor(profileURL), true)
}

func (f *Fetcher) miss(ctx context.Context, k cacheKey, sh *shard, force bool) (*Profile, error) {
	// Only URLs that passed this check are ever cached, so the hit path
	// can skip it.
	if err := checkURL(k.url, k.dev); err != nil {
		return nil, err
	}
	now := f.now().UnixNano()
	sh.mu.Lock()
	if fl := sh.flights[k]; fl != nil {
		sh.mu.Unlock()
		return f.wait(ctx, fl)
	}
	e := sh.m[k]
	var forcedAt int64
	if e != nil {
		forcedAt = e.forced.Load()
	}
	if e != nil && now < e.expires {
		// Fresh: filled meanwhile, remembered failure, or a forced
		// refresh inside the rate limit.
		if !force || e.err != nil || (forcedAt != 0 && now-forcedAt < int64(MinTTL)) {
			sh.mu.Unlock()
			return e.result()
		}
		forcedAt = now
		e.forced.Store(now)
	}
	fl := &flight{done: make(chan struct{})}
	sh.flights[k] = fl
	sh.mu.Unlock()
	// The fetch runs detached from the caller: other callers share it, and
	// it has its own deadline. The caller waits only as long as its ctx.
	go f.run(context.WithoutCancel(ctx), k, sh, fl, forcedAt, force)
	return f.wait(ctx, fl)
}

func (f *Fetcher) wait(ctx context.Context, fl *flight) (*Profile, error) {
	fl.waiters.Add(1)
	select {
	case <-fl.done:
		if fl.err != nil {
			return nil, fl.err
		}
		return fl.prof, nil
	case <-ctx.Done():
		return nil, &Error{Code: CodeProfileUnreachable, Message: "the request ended while the profile was being fetched", Err: ctx.Err()}
	}
}

func (f *Fetcher) run(ctx context.Context, k cacheKey, sh *shard, fl *flight, forcedAt int64, force bool) {
	var (
		prof      *Profile
		ttl       time.Duration
		ferr      *Error
		cacheable = true
	)
	defer func() {
		if r := recover(); r != nil {
			ferr, cacheable = &Error{Code: CodeProfileMalformed, Message: "profile could not be processed", Err: fmt.Errorf("panic: %v", r)}, true
		}
		now := f.now().UnixNano()
		sh.mu.Lock()
		delete(sh.flights, k)
		if ferr == nil {
			ne := &entry{prof: prof, expires: now + int64(ttl)}
			ne.used.Store(now)
			ne.forced.Store(forcedAt)
			f.store(sh, k, ne, now)
			fl.prof = prof
		} else {
			fl.err = ferr
			old := sh.m[k]
			keepOld := force && old != nil && old.err == nil && now < old.expires
			if cacheable && !keepOld {
				ne := &entry{err: ferr, expires: now + int64(f.negTTL)}
				ne.used.Store(now)
				ne.forced.Store(forcedAt)
				f.store(sh, k, ne, now)
			}
		}
		sh.mu.Unlock()
		close(fl.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	prof, ttl, ferr, cacheable = f.fetch(ctx, k)
}

// store inserts under sh.mu, evicting when the shard is full.
func (f *Fetcher) store(sh *shard, k cacheKey, e *entry, now int64) {
	if _, ok := sh.m[k]; !ok && len(sh.m) >= f.perShard {
		// Sampled LRU: map iteration starts at a random position, so the
		// first few entries are a random sample; drop an expired one, else
		// the least recently used of the sample. O(1), no list to
		// maintain on the hit path.
		var victim cacheKey
		oldest := int64(math.MaxInt64)
		n := 0
		for kk, ee := range sh.m {
			if now >= ee.expires {
				victim = kk
				break
			}
			if u := ee.used.Load(); u < oldest {
				oldest, victim = u, kk
			}
			if n++; n == 8 {
				break
			}
		}
		delete(sh.m, victim)
	}
	sh.m[k] = e
}

// Len is the number of cached entries (profiles and remembered failures).
func (f *Fetcher) Len() int {
	n := 0
	for i := range f.shards {
		sh := &f.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// fetch performs one GET. cacheable is false for failures caused by our
// own load (the concurrency bound), which say nothing about the profile.
func (f *Fetcher) fetch(ctx context.Context, k cacheKey) (_ *Profile, _ time.Duration, _ *Error, cacheable bool) {
	unreachable := func(msg string, err error) (*Profile, time.Duration, *Error, bool) {
		return nil, 0, &Error{Code: CodeProfileUnreachable, Message: msg, Err: err}, true
	}
	select {
	case f.sem <- struct{}{}:
		defer func() { <-f.sem }()
	case <-ctx.Done():
		return nil, 0, &Error{Code: CodeProfileUnreachable, Message: "too many agent profile fetches in progress; retry later", Err: ctx.Err()}, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, 0, &Error{Code: CodeInvalidProfileURL, Message: "profile URL cannot be requested", Err: err}, true
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", f.userAgent)
	client := f.prod
	if k.dev {
		client = f.dev
	}
	resp, err := client.Do(req)
	if err != nil {
		return unreachable(describeFetchError(ctx, err, f.timeout), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused; never read the
		// error body into the message.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return unreachable(fmt.Sprintf("profile URL answered HTTP %d; profile redirects are not followed", resp.StatusCode), nil)
		}
		return unreachable(fmt.Sprintf("profile URL answered HTTP %d", resp.StatusCode), nil)
	}
	tooBig := func() (*Profile, time.Duration, *Error, bool) {
		return nil, 0, &Error{Code: CodeProfileMalformed, Message: fmt.Sprintf("profile is larger than %d bytes", f.maxBytes)}, true
	}
	if resp.ContentLength > f.maxBytes {
		return tooBig()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return unreachable("reading the profile failed: "+describeFetchError(ctx, err, f.timeout), err)
	}
	if int64(len(body)) > f.maxBytes {
		return tooBig()
	}
	prof, err := Parse(k.url, body, f.v, f.now())
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			return nil, 0, pe, true
		}
		return nil, 0, &Error{Code: CodeProfileMalformed, Message: "profile could not be parsed", Err: err}, true
	}
	return prof, f.ttlFor(resp.Header), nil, true
}

// describeFetchError says what went wrong without our network's details
// (addresses, resolver, proxy): the message goes back to the agent.
func describeFetchError(ctx context.Context, err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.Is(err, netguard.ErrForbiddenAddress):
		return "profile host resolves to a special-use (private, loopback, link-local, ...) address"
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("profile fetch timed out after %s", timeout)
	case errors.As(err, &dnsErr):
		return "profile host name does not resolve"
	case errors.As(err, &certErr):
		return "profile host's TLS certificate is not valid"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("profile fetch timed out after %s", timeout)
	}
	return "connection to the profile host failed"
}

// ttlFor clamps the origin's freshness into [MinTTL, TTL]: a shorter
// max-age is honoured (faster key rotation), never below the floor, and
// no-store/no-cache/private (which profile hosts must not send) mean the
// floor.
func (f *Fetcher) ttlFor(h http.Header) time.Duration {
	ttl := f.ttl
	for _, line := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(line, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			switch {
			case d == "no-store" || d == "no-cache" || d == "private":
				return MinTTL
			case strings.HasPrefix(d, "max-age="):
				secs, err := strconv.ParseInt(strings.Trim(d[len("max-age="):], `"`), 10, 64)
				if err != nil || secs < 0 {
					continue
				}
				if secs < int64(ttl/time.Second) {
					ttl = max(time.Duration(secs)*time.Second, MinTTL)
				}
			}
		}
	}
	return ttl
}
