package agentprofile

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcpdev/bcp/protocol/bcpschema"
)

var (
	validatorOnce sync.Once
	validator     *bcpschema.Validator
	validatorErr  error
)

// testValidator compiles the schemas once for the whole package.
func testValidator(t testing.TB) *bcpschema.Validator {
	t.Helper()
	validatorOnce.Do(func() { validator, validatorErr = bcpschema.NewValidator() })
	if validatorErr != nil {
		t.Fatal(validatorErr)
	}
	return validator
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeClock drives cache lifetimes; network timeouts stay on real time.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// countingServer counts every request that reaches a handler.
type countingServer struct {
	*httptest.Server
	n atomic.Int32
}

func newServer(t testing.TB, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.n.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func serveBytes(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(body)
	}
}

func newFetcher(t testing.TB, clock *fakeClock, mod func(*Options)) *Fetcher {
	t.Helper()
	opts := Options{Validator: testValidator(t), Timeout: 2 * time.Second}
	if clock != nil {
		opts.Now = clock.Now
	}
	if mod != nil {
		mod(&opts)
	}
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// wantCode asserts err is an *Error with code.
func wantCode(t testing.TB, err error, code string) *Error {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want *Error %s", err, err, code)
	}
	if pe.Code != code {
		t.Fatalf("code %s (%v), want %s", pe.Code, err, code)
	}
	return pe
}

func newServerTLS(t testing.TB, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.n.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}
