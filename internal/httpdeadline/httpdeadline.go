// Package httpdeadline bounds an HTTP client's requests the way
// http.Client.Timeout does, with a context deadline set by the transport.
//
// http.Client enforces its Timeout over a transport it does not know (any
// wrapper of an *http.Transport, such as tracing.Transport's) with a
// goroutine, a timer and channels per request (net/http's
// setRequestCancel), and the Request.Cancel channel it sets makes the
// *http.Transport start a second goroutine to watch it: 2 goroutines and
// 13 allocations per request (BenchmarkClient). A Transport sets the same
// deadline in the request's context instead, which the wrapped
// *http.Transport honours by itself, and ends it when the answer's body
// is closed: the same bound, from the start of the request until its body
// is read and closed, with the same errors (Timeout() true, errors.Is
// context.DeadlineExceeded, in the words http.Client.Timeout uses over an
// *http.Transport; over a wrapper its words were a race between its timer
// and the context's), and nothing started per request.
//
// The bound is per round trip: a client that follows redirects gets it
// for each hop (http.Client.Timeout spans them all). The platform's
// clients do not follow redirects, or talk to servers that do not send
// them (Stripe, the PSP simulator's control API).
package httpdeadline

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Transport sends each request through Next (nil: http.DefaultTransport)
// bounded by Timeout (≤ 0: by its context only), from the call until its
// answer's body is closed, as http.Client.Timeout bounds Client.Do. A
// context deadline sooner than Timeout is left as it is. Use it as the
// transport of an http.Client without a Timeout of its own.
type Transport struct {
	Next    http.RoundTripper
	Timeout time.Duration
	// Prepare, when set, may change the copy of each request that goes to
	// Next (the caller's request is never changed), for instance give its
	// body a length.
	Prepare func(*http.Request) error
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	var deadline time.Time
	if t.Timeout > 0 {
		deadline = time.Now().Add(t.Timeout)
		if d, ok := r.Context().Deadline(); ok && !deadline.Before(d) {
			deadline = time.Time{} // the caller's own deadline comes first (as net/http)
		}
	}
	if deadline.IsZero() {
		if t.Prepare == nil {
			return next.RoundTrip(r)
		}
		// A RoundTripper does not change its request: r2 is a copy.
		r2 := r.WithContext(r.Context())
		if err := t.Prepare(r2); err != nil {
			closeBody(r)
			return nil, err
		}
		return next.RoundTrip(r2)
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	r2 := r.WithContext(ctx)
	if t.Prepare != nil {
		if err := t.Prepare(r2); err != nil {
			cancel()
			closeBody(r)
			return nil, err
		}
	}
	res, err := next.RoundTrip(r2)
	if err != nil {
		cancel()
		if time.Now().After(deadline) {
			// As http.Client words its own timeout.
			err = &timeoutError{err.Error() + " (Client.Timeout exceeded while awaiting headers)"}
		}
		return nil, err
	}
	if res.Body == nil {
		// Nothing to read: http.Client makes it empty (or rejects it).
		cancel()
		return res, nil
	}
	res.Body = &body{rc: res.Body, cancel: cancel, deadline: deadline}
	return res, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach Next.
func (t *Transport) CloseIdleConnections() {
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	if c, ok := next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Unwrap is Next (for checks of the *http.Transport's settings).
func (t *Transport) Unwrap() http.RoundTripper { return t.Next }

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// body ends its request's deadline when it is closed, and words a read
// cut by the deadline as http.Client does.
type body struct {
	rc       io.ReadCloser
	cancel   context.CancelFunc
	deadline time.Time
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && time.Now().After(b.deadline) {
		err = &timeoutError{err.Error() + " (Client.Timeout or context cancellation while reading body)"}
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

// timeoutError is net/http's error of a Client.Timeout: a net.Error whose
// Timeout is true and which is context.DeadlineExceeded for errors.Is.
type timeoutError struct{ err string }

func (e *timeoutError) Error() string     { return e.err }
func (e *timeoutError) Timeout() bool     { return true }
func (e *timeoutError) Temporary() bool   { return true }
func (e *timeoutError) Is(err error) bool { return err == context.DeadlineExceeded }
