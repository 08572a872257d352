// Package inproc is an http.RoundTripper that serves requests with an
// http.Handler in the same process. In `bcpd all` the connect clients use
// it to reach the services: the same generated clients, interceptors and
// handlers as across processes, without a socket in between.
package inproc

import (
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Transport serves every request with Handler.
type Transport struct {
	Handler http.Handler
}

// Client returns an *http.Client over t.
func Client(h http.Handler) *http.Client { return &http.Client{Transport: &Transport{Handler: h}} }

// RoundTrip implements http.RoundTripper. The response is returned as soon
// as the handler has written its header; the body streams through a pipe.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	in := req.Clone(ctx)
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	if in.Body == nil {
		in.Body = http.NoBody
	}
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	pr, pw := io.Pipe()
	w := &writer{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if r := recover(); r != nil {
				w.WriteHeader(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("inproc: handler panic: %v", r))
				return
			}
			w.WriteHeader(http.StatusOK) // no-op if already written
			pw.Close()
		}()
		t.Handler.ServeHTTP(w, in)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          pr,
		ContentLength: -1,
		Request:       req,
	}, nil
}

type writer struct {
	header http.Header
	sent   http.Header
	body   *io.PipeWriter
	status int
	once   sync.Once
	ready  chan struct{}
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	w.once.Do(func() {
		w.status = code
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *writer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush is a no-op: the pipe hands every write to the reader directly.
func (w *writer) Flush() { w.WriteHeader(http.StatusOK) }
