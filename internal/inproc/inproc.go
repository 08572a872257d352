// Package inproc is an http.RoundTripper that serves requests with an
// http.Handler in the same process. In `bcpd all` the connect clients use
// it to reach the services: the same generated clients, interceptors and
// handlers as across processes, without a socket in between.
package inproc

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Transport serves every request with Handler.
type Transport struct {
	Handler http.Handler
}

// Client returns an *http.Client over t.
func Client(h http.Handler) *http.Client { return &http.Client{Transport: &Transport{Handler: h}} }

// RoundTrip implements http.RoundTripper. A connect unary call is served
// in the caller's goroutine into a buffer: its answer is one message, and
// on 2-vCPU machines under a hypervisor a goroutine and pipe hand-offs per
// call cost more than the call (bcpbench: ~25 calls per purchase). Any
// other request — a stream — gets its response as soon as the handler has
// written its header, with the body streaming through a pipe.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	in := serverRequest(req)
	if connectUnary(req) {
		return t.serveBuffered(req, in)
	}
	ctx := req.Context()
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
	return response(req, w.status, w.sent, pr, -1), nil
}

// serverRequest is req as a server's handler sees it.
func serverRequest(req *http.Request) *http.Request {
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	if in.Body == nil {
		in.Body = http.NoBody
	}
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	return in
}

// connectUnary reports a connect-protocol unary request (streams use the
// application/connect+<codec> content types).
func connectUnary(req *http.Request) bool {
	return req.Header.Get("Connect-Protocol-Version") != "" &&
		!strings.HasPrefix(req.Header.Get("Content-Type"), "application/connect+")
}

// serveBuffered runs the handler to the end and answers with what it
// wrote. A handler that panics fails the call like a server that drops
// the connection.
func (t *Transport) serveBuffered(req, in *http.Request) (res *http.Response, err error) {
	w := &bufferWriter{header: http.Header{}}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("inproc: handler panic: %v", r)
		}
	}()
	t.Handler.ServeHTTP(w, in)
	w.WriteHeader(http.StatusOK) // no-op if already written
	return response(req, w.status, w.sent, io.NopCloser(bytes.NewReader(w.body.Bytes())), int64(w.body.Len())), nil
}

// response is what the client gets: an HTTP/1.1 answer to req.
func response(req *http.Request, status int, header http.Header, body io.ReadCloser, length int64) *http.Response {
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          body,
		ContentLength: length,
		Request:       req,
	}
}

// bufferWriter is the ResponseWriter of a buffered call: like a server,
// it sends the header as it was when first written.
type bufferWriter struct {
	header http.Header
	sent   http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferWriter) Header() http.Header { return w.header }

func (w *bufferWriter) WriteHeader(code int) {
	if w.sent == nil {
		w.status, w.sent = code, w.header.Clone()
	}
}

func (w *bufferWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush is a no-op: the caller gets the body when the handler returns.
func (w *bufferWriter) Flush() { w.WriteHeader(http.StatusOK) }

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
