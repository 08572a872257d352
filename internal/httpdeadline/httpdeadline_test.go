package httpdeadline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/httpdeadline"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/internal/wirecount"
)

// roundTripFunc is a transport net/http does not know (as any wrapper of
// an *http.Transport).
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestNoGoroutinePerRequest: a client whose Transport bounds its requests
// starts no goroutine per request, where http.Client.Timeout over the same
// (unknown) transport starts one; the request still has the deadline.
func TestNoGoroutinePerRequest(t *testing.T) {
	var during int
	var deadline time.Time
	fake := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		during = runtime.NumGoroutine()
		deadline, _ = r.Context().Deadline()
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	})
	baseline := runtime.NumGoroutine()
	started := func(hc *http.Client) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
		// The previous client's timer goroutine may still be ending: one
		// that ends during the measurement would hide one that starts.
		for wait := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > baseline && time.Now().Before(wait); {
			time.Sleep(time.Millisecond)
		}
		before := runtime.NumGoroutine()
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if deadline.Before(start.Add(time.Minute)) || deadline.After(time.Now().Add(time.Minute)) {
			t.Errorf("deadline %v, want a minute after %v", deadline, start)
		}
		return during - before
	}
	old := started(&http.Client{Timeout: time.Minute, Transport: fake})
	if n := started(&http.Client{Transport: &httpdeadline.Transport{Next: fake, Timeout: time.Minute}}); n > 0 {
		t.Errorf("%d goroutines started per request, want 0 (http.Client.Timeout: %d)", n, old)
	}
	t.Logf("goroutines started per request: http.Client.Timeout %d, Transport 0", old)
}

// stalling is a server that answers after release is closed; with body,
// it sends the headers and part of the body first.
func stalling(t *testing.T, withBody bool) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if withBody {
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"id":`)
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close
	return srv.URL
}

// fetch GETs url and reads the answer's body.
func fetch(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

// TestTimeout: the Timeout bounds the wait for the answer and the reading
// of its body, with the errors http.Client.Timeout gives over the same
// transport: a net.Error that timed out, context.DeadlineExceeded for
// errors.Is, in the same words; a sooner deadline of the caller's is the
// caller's error, as with http.Client.
func TestTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	for _, c := range []struct {
		name     string
		withBody bool
		words    string
	}{
		{"no answer", false, "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"},
		{"the body stalls", true, "context deadline exceeded (Client.Timeout or context cancellation while reading body)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := stalling(t, c.withBody)
			base := tracing.Transport(&http.Transport{})
			hc := &http.Client{Transport: &httpdeadline.Transport{Next: base, Timeout: timeout}}
			err := fetch(context.Background(), hc, url)
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%v (%T): want a timeout", err, err)
			}
			if !strings.HasSuffix(err.Error(), c.words) {
				t.Errorf("%q, want it to end %q", err, c.words)
			}
			// http.Client.Timeout's own error over an *http.Transport, for
			// comparison: the same. (Over a wrapper, its words are a
			// race between its timer and the context's: "context
			// deadline exceeded" alone, or "net/http: request canceled
			// (Client.Timeout exceeded while awaiting headers)".)
			if old := fetch(context.Background(), &http.Client{Timeout: timeout, Transport: &http.Transport{}}, url); old == nil || old.Error() != err.Error() {
				t.Errorf("http.Client.Timeout: %q, Transport: %q", old, err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			hc = &http.Client{Transport: &httpdeadline.Transport{Next: base, Timeout: time.Hour}}
			if err := fetch(ctx, hc, url); !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout") {
				t.Errorf("the caller's deadline: %v", err)
			}
		})
	}
}

// TestAnswerInTime: an answer read within the Timeout is the server's,
// the deadline ends when the body is closed (the connection is reused),
// and neither the request nor Prepare's change reaches the caller's
// request.
func TestAnswerInTime(t *testing.T) {
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %d %s", r.Header.Get("X-Prepared"), r.ContentLength, b)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns++
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr := &httpdeadline.Transport{Next: tracing.Transport(&http.Transport{}), Timeout: time.Minute, Prepare: func(r *http.Request) error {
		r.Header = r.Header.Clone()
		r.Header.Set("X-Prepared", "yes")
		return nil
	}}
	hc := &http.Client{Transport: tr}
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("body"))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "yes 4 body" {
			t.Fatalf("%q %v", b, err)
		}
		if req.Header.Get("X-Prepared") != "" || req.Context() != context.Background() {
			t.Errorf("the caller's request changed: %v", req.Header)
		}
	}
	if conns != 1 {
		t.Errorf("%d connections for 3 requests, want 1", conns)
	}
}

// BenchmarkClient: one GET over loopback through tracing's transport,
// bounded by http.Client.Timeout (before) and by Transport (after); see
// allocs/op and goroutines/op (created per request, the server's
// included).
func BenchmarkClient(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"ok":true}`) }))
	defer srv.Close()
	for _, c := range []struct {
		name string
		hc   func(http.RoundTripper) *http.Client
	}{
		{"Client.Timeout", func(rt http.RoundTripper) *http.Client { return &http.Client{Timeout: time.Minute, Transport: rt} }},
		{"Transport", func(rt http.RoundTripper) *http.Client {
			return &http.Client{Transport: &httpdeadline.Transport{Next: rt, Timeout: time.Minute}}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			hc := c.hc(tracing.Transport(tr))
			ctx := context.Background()
			if err := fetch(ctx, hc, srv.URL); err != nil {
				b.Fatal(err)
			}
			before := wirecount.GoroutinesCreated()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := fetch(ctx, hc, srv.URL); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(wirecount.GoroutinesCreated()-before)/float64(b.N), "goroutines/op")
		})
	}
}
