package agentprofile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestGetValidProfile(t *testing.T) {
	var accept, ua string
	body := fixture(t, "agent_profile.json")
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		accept, ua = r.Header.Get("Accept"), r.Header.Get("User-Agent")
		serveBytes(body)(w, r)
	})
	clock := newFakeClock()
	f := newFetcher(t, clock, nil)
	u := s.URL + "/profiles/shopping-agent.json"
	p, err := f.Get(context.Background(), u, true)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "application/json" || ua != DefaultUserAgent {
		t.Errorf("Accept %q, User-Agent %q", accept, ua)
	}
	if p.URL() != u || p.Version() != "2026-07-28" || !p.FetchedAt().Equal(clock.Now()) {
		t.Errorf("url %q version %q fetched %v", p.URL(), p.Version(), p.FetchedAt())
	}
	if got := p.OrderWebhookURL(); got != "https://agente.example.com.br/webhooks/bcp/pedidos" {
		t.Errorf("webhook %q", got)
	}
	if !p.HasCapability("br.dev.bcp.shopping.checkout") || p.HasCapability("br.dev.bcp.shopping.ap2_mandate") {
		t.Error("capabilities")
	}
	if ext := p.Capability("br.dev.bcp.shopping.discount")[0].Extends; len(ext) != 1 || ext[0] != "br.dev.bcp.shopping.checkout" {
		t.Errorf("discount extends %q", ext)
	}
	if k, ok := p.SigningKey("agente-2026-07"); !ok || !bytes.Contains(k, []byte(`"alg":"ES256"`)) {
		t.Errorf("signing key %s %v", k, ok)
	}
	if h := p.PaymentHandlers()["br.dev.bcp.pix"]; len(h) != 1 || h[0].ID != "pix_agente" {
		t.Errorf("handlers %+v", h)
	}
	if sv := p.Services()["br.dev.bcp.shopping"]; len(sv) != 1 || sv[0].Transport != "mcp" {
		t.Errorf("services %+v", sv)
	}
}

func TestGetOverHTTPS(t *testing.T) {
	s := newServerTLS(t, serveBytes(fixture(t, "agent_profile.json")))
	// The test server's certificate is trusted through HTTPClient; dev
	// lets the fetch reach 127.0.0.1.
	f := newFetcher(t, nil, func(o *Options) { o.HTTPClient = s.Client() })
	if _, err := f.Get(context.Background(), s.URL+"/p.json", true); err != nil {
		t.Fatal(err)
	}
	// Without the test CA the certificate is refused.
	g := newFetcher(t, nil, nil)
	_, err := g.Get(context.Background(), s.URL+"/p.json", true)
	if pe := wantCode(t, err, CodeProfileUnreachable); !strings.Contains(pe.Message, "TLS") {
		t.Errorf("message %q", pe.Message)
	}
}

func TestFetchFailures(t *testing.T) {
	valid := fixture(t, "agent_profile.json")
	// Valid JSON, just too big: whitespace padding past the 256 KiB limit.
	huge := append(bytes.Repeat([]byte(" "), DefaultMaxBytes), valid...)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	cases := []struct {
		name    string
		handler http.HandlerFunc
		code    string
		msg     string
	}{
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/moved" {
				http.Redirect(w, r, "/profile.json", http.StatusFound)
				return
			}
			serveBytes(valid)(w, r)
		}, CodeProfileUnreachable, "HTTP 302"},
		{"permanent redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/p.json", http.StatusPermanentRedirect)
		}, CodeProfileUnreachable, "HTTP 308"},
		{"not found", http.NotFound, CodeProfileUnreachable, "HTTP 404"},
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "secret internal stack trace", http.StatusInternalServerError)
		}, CodeProfileUnreachable, "HTTP 500"},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}, CodeProfileUnreachable, "timed out"},
		{"slow body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(valid[:10])
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}, CodeProfileUnreachable, "timed out"},
		{"oversized with length", serveBytes(huge), CodeProfileMalformed, "larger than 262144 bytes"},
		{"oversized chunked", func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i < len(huge); i += 32 << 10 {
				_, _ = w.Write(huge[i:min(i+32<<10, len(huge))])
				w.(http.Flusher).Flush()
			}
		}, CodeProfileMalformed, "larger than"},
		{"not json", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>" + strings.Repeat("agente ", 10) + "secret internal</body></html>"))
		}, CodeProfileMalformed, "not valid JSON"},
		{"empty", func(w http.ResponseWriter, r *http.Request) {}, CodeProfileMalformed, "empty"},
		{"truncated json", serveBytes(valid[:len(valid)/2]), CodeProfileMalformed, "not valid JSON"},
		{"schema invalid", serveBytes(fixture(t, "agent_profile_invalid.json")), CodeProfileMalformed, "$.ucp.version"},
		{"json array", serveBytes([]byte(`[1,2,3]`)), CodeProfileMalformed, "schema"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, c.handler)
			f := newFetcher(t, nil, func(o *Options) { o.Timeout = 300 * time.Millisecond })
			path := "/profile.json"
			if c.name == "redirect" {
				path = "/moved"
			}
			start := time.Now()
			_, err := f.Get(context.Background(), s.URL+path, true)
			pe := wantCode(t, err, c.code)
			t.Logf("%v", err)
			if !strings.Contains(pe.Message, c.msg) {
				t.Errorf("message %q, want it to contain %q", pe.Message, c.msg)
			}
			if strings.Contains(pe.Message, "secret internal") || len(pe.Message) > 600 {
				t.Errorf("message echoes the body: %q", pe.Message)
			}
			if n := s.n.Load(); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1", n)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestInvalidURLsAreNotFetched(t *testing.T) {
	s := newServer(t, serveBytes(fixture(t, "agent_profile.json")))
	f := newFetcher(t, nil, nil)
	for _, u := range []string{
		s.URL + "/p.json", // http with dev=false
		strings.Replace(s.URL, "http://", "ftp://", 1) + "/p.json",
		"/profiles/p.json",
		"p.json",
		"::garbage::",
		"https://agente.example.com/p.json#kid",
		"https://u:p@agente.example.com/p.json",
		"",
	} {
		_, err := f.Get(context.Background(), u, false)
		wantCode(t, err, CodeInvalidProfileURL)
		_, err = f.ForceRefresh(context.Background(), u, false)
		wantCode(t, err, CodeInvalidProfileURL)
	}
	if n := s.n.Load(); n != 0 {
		t.Fatalf("server saw %d requests", n)
	}
	if f.Len() != 0 {
		t.Fatalf("invalid URLs were cached: %d entries", f.Len())
	}
}

func TestCacheHitAndTTL(t *testing.T) {
	s := newServer(t, serveBytes(fixture(t, "agent_profile.json")))
	clock := newFakeClock()
	f := newFetcher(t, clock, nil)
	ctx := context.Background()
	u := s.URL + "/p.json"
	p1, err := f.Get(ctx, u, true)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := f.Get(ctx, u, true)
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 || s.n.Load() != 1 {
		t.Fatalf("second Get fetched again: %d requests", s.n.Load())
	}
	clock.Advance(DefaultTTL - time.Second)
	if _, err := f.Get(ctx, u, true); err != nil || s.n.Load() != 1 {
		t.Fatalf("refetched before the TTL: %d requests, %v", s.n.Load(), err)
	}
	clock.Advance(2 * time.Second)
	p3, err := f.Get(ctx, u, true)
	if err != nil || s.n.Load() != 2 || p3 == p1 {
		t.Fatalf("not refetched after the TTL: %d requests, %v", s.n.Load(), err)
	}
}

func TestTTLFromOrigin(t *testing.T) {
	f := newFetcher(t, nil, nil)
	cases := []struct {
		cc   []string
		want time.Duration
	}{
		{nil, DefaultTTL},
		{[]string{"public, max-age=300"}, DefaultTTL},
		{[]string{"public, max-age=120"}, 120 * time.Second},
		{[]string{"public, max-age=10"}, MinTTL},
		{[]string{"max-age=0"}, MinTTL},
		{[]string{"public, max-age=86400"}, DefaultTTL},
		{[]string{"no-store"}, MinTTL},
		{[]string{"public", "No-Cache"}, MinTTL},
		{[]string{"private, max-age=600"}, MinTTL},
		{[]string{"max-age=abc"}, DefaultTTL},
		{[]string{`max-age="90"`}, 90 * time.Second},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, v := range c.cc {
			h.Add("Cache-Control", v)
		}
		if got := f.ttlFor(h); got != c.want {
			t.Errorf("Cache-Control %q: ttl %v, want %v", c.cc, got, c.want)
		}
	}
	// Floors apply to the options too.
	g := newFetcher(t, nil, func(o *Options) { o.TTL = time.Second; o.MaxBytes = 1024 })
	if g.ttl != MinTTL || g.maxBytes != MinMaxBytes {
		t.Errorf("ttl %v maxBytes %d", g.ttl, g.maxBytes)
	}

	// End to end: an origin asking for 10 s gets the 60 s floor.
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(fixture(t, "agent_profile.json"))
	})
	clock := newFakeClock()
	h := newFetcher(t, clock, nil)
	for _, step := range []time.Duration{0, 59 * time.Second, 2 * time.Second} {
		clock.Advance(step)
		if _, err := h.Get(context.Background(), s.URL, true); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.n.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 (floor of 60 s)", n)
	}
}

func TestSingleFlight(t *testing.T) {
	body := fixture(t, "agent_profile.json")
	release := make(chan struct{})
	arrived := make(chan struct{}, 100)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		serveBytes(body)(w, r)
	})
	f := newFetcher(t, nil, nil)
	u := s.URL + "/p.json"
	const n = 50
	var wg sync.WaitGroup
	results := make([]*Profile, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = f.Get(context.Background(), u, true) })
	}
	<-arrived
	// Release only once every caller waits on the one flight.
	sh := f.shardFor(u)
	deadline := time.Now().Add(5 * time.Second)
	for {
		sh.mu.RLock()
		fl := sh.flights[cacheKey{u, true}]
		sh.mu.RUnlock()
		if fl != nil && fl.waiters.Load() == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("callers did not all join the flight")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i] != results[0] {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
	}
	if got := s.n.Load(); got != 1 {
		t.Fatalf("%d requests for %d concurrent callers, want 1", got, n)
	}
}

// A caller that gives up does not abort the fetch others are waiting for.
func TestCallerCancelDoesNotAbortSharedFetch(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		serveBytes(fixture(t, "agent_profile.json"))(w, r)
	})
	f := newFetcher(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := f.Get(ctx, s.URL, true); done <- err }()
	<-arrived
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled caller: %v", err)
	}
	second := make(chan error, 1)
	go func() { _, err := f.Get(context.Background(), s.URL, true); second <- err }()
	close(release)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := s.n.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestNegativeCache(t *testing.T) {
	var fail = true
	var mu sync.Mutex
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		serveBytes(fixture(t, "agent_profile.json"))(w, r)
	})
	clock := newFakeClock()
	f := newFetcher(t, clock, func(o *Options) { o.NegativeTTL = 10 * time.Second })
	ctx := context.Background()
	for range 5 {
		_, err := f.Get(ctx, s.URL, true)
		wantCode(t, err, CodeProfileUnreachable)
	}
	if n := s.n.Load(); n != 1 {
		t.Fatalf("%d requests while the failure is remembered, want 1", n)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	clock.Advance(9 * time.Second)
	_, err := f.Get(ctx, s.URL, true)
	wantCode(t, err, CodeProfileUnreachable)
	clock.Advance(2 * time.Second)
	if _, err := f.Get(ctx, s.URL, true); err != nil {
		t.Fatal(err)
	}
	if n := s.n.Load(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestForceRefresh(t *testing.T) {
	keyA := `{"kid":"agente-a","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`
	keyB := `{"kid":"agente-b","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`
	base := string(fixture(t, "agent_profile.json"))
	var mu sync.Mutex
	key, status := keyA, http.StatusOK
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		k, st := key, status
		mu.Unlock()
		if st != http.StatusOK {
			w.WriteHeader(st)
			return
		}
		i := strings.Index(base, `"signing_keys"`)
		_, _ = fmt.Fprintf(w, "%s\"signing_keys\": [%s]}", base[:i], k)
	})
	set := func(k string, st int) { mu.Lock(); key, status = k, st; mu.Unlock() }
	clock := newFakeClock()
	f := newFetcher(t, clock, nil)
	ctx := context.Background()
	hasKid := func(p *Profile, kid string) bool { _, ok := p.SigningKey(kid); return ok }

	p, err := f.Get(ctx, s.URL, true)
	if err != nil || !hasKid(p, "agente-a") {
		t.Fatal(err)
	}
	set(keyB, http.StatusOK) // the agent rotates its key
	clock.Advance(10 * time.Second)
	if p, _ = f.Get(ctx, s.URL, true); hasKid(p, "agente-b") {
		t.Fatal("Get refetched inside the TTL")
	}
	// Unknown kid: the first forced refresh goes out at once.
	p, err = f.ForceRefresh(ctx, s.URL, true)
	if err != nil || !hasKid(p, "agente-b") || s.n.Load() != 2 {
		t.Fatalf("forced refresh: %v, %d requests", err, s.n.Load())
	}
	if q, _ := f.Get(ctx, s.URL, true); q != p {
		t.Fatal("forced result not cached")
	}
	// A second one inside 60 s returns the cached profile, no request.
	set(keyA, http.StatusOK)
	clock.Advance(30 * time.Second)
	q, err := f.ForceRefresh(ctx, s.URL, true)
	if err != nil || q != p || s.n.Load() != 2 {
		t.Fatalf("rate limit: %v, %d requests", err, s.n.Load())
	}
	// After the floor it is allowed again.
	clock.Advance(31 * time.Second)
	q, err = f.ForceRefresh(ctx, s.URL, true)
	if err != nil || !hasKid(q, "agente-a") || s.n.Load() != 3 {
		t.Fatalf("after the floor: %v, %d requests", err, s.n.Load())
	}
	// A failed forced refresh reports the error but keeps the profile.
	set(keyA, http.StatusBadGateway)
	clock.Advance(MinTTL)
	_, err = f.ForceRefresh(ctx, s.URL, true)
	wantCode(t, err, CodeProfileUnreachable)
	if r, err := f.Get(ctx, s.URL, true); err != nil || r != q || s.n.Load() != 4 {
		t.Fatalf("after a failed forced refresh: %v, %d requests", err, s.n.Load())
	}
	// With nothing cached, ForceRefresh is a plain fetch.
	set(keyB, http.StatusOK)
	if p, err := f.ForceRefresh(ctx, s.URL+"/other", true); err != nil || !hasKid(p, "agente-b") {
		t.Fatal(err)
	}
}

func TestEvictionBound(t *testing.T) {
	s := newServer(t, serveBytes(fixture(t, "agent_profile.json")))
	clock := newFakeClock()
	f := newFetcher(t, clock, func(o *Options) { o.MaxEntries = 4 })
	ctx := context.Background()
	hot := s.URL + "/hot"
	for i := range 20 {
		clock.Advance(2 * time.Second)
		if _, err := f.Get(ctx, hot, true); err != nil { // keeps "hot" recently used
			t.Fatal(err)
		}
		if _, err := f.Get(ctx, fmt.Sprintf("%s/p%d", s.URL, i), true); err != nil {
			t.Fatal(err)
		}
		if f.Len() > 4 {
			t.Fatalf("cache holds %d entries, bound 4", f.Len())
		}
	}
	// The recently used entry survived every eviction.
	if n := s.n.Load(); n != 21 {
		t.Errorf("%d requests, want 21 (hot fetched once)", n)
	}
	big := newFetcher(t, nil, nil)
	if len(big.shards) != 16 || big.perShard*len(big.shards) > DefaultMaxEntries {
		t.Errorf("%d shards of %d", len(big.shards), big.perShard)
	}
}

// The fetch-slot bound fails within the timeout and is not remembered:
// the URL is fetched normally once a slot is free.
func TestConcurrencyBound(t *testing.T) {
	s := newServer(t, serveBytes(fixture(t, "agent_profile.json")))
	f := newFetcher(t, nil, func(o *Options) { o.MaxConcurrentFetches = 1; o.Timeout = 100 * time.Millisecond })
	f.sem <- struct{}{} // another fetch holds the only slot
	_, err := f.Get(context.Background(), s.URL, true)
	if pe := wantCode(t, err, CodeProfileUnreachable); !strings.Contains(pe.Message, "too many") {
		t.Fatalf("message %q", pe.Message)
	}
	if s.n.Load() != 0 || f.Len() != 0 {
		t.Fatalf("%d requests, %d cached", s.n.Load(), f.Len())
	}
	<-f.sem
	if _, err := f.Get(context.Background(), s.URL, true); err != nil {
		t.Fatal(err)
	}
}

func TestNewRejectsOpaqueTransport(t *testing.T) {
	_, err := New(Options{Validator: testValidator(t), HTTPClient: &http.Client{Transport: roundTripFunc(nil)}})
	if err == nil {
		t.Fatal("a RoundTripper that bypasses the dial guard was accepted")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
