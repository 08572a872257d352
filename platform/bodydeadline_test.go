package platform

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// A request whose body stalls is answered when its body limit passes and
// its connection is closed right after the answer, not kept for the idle
// limit (issue 32: a stalled body held its socket for 30 s + 120 s). The
// public listener as Start builds it (listen, bodyDeadline), with an idle
// limit far beyond the test's bound, and 300 stalled connections: half to
// a handler that reads the body and answers 400 when the read fails (as
// authentication and the REST binding do), half to one that never reads
// it.
func TestStalledBodiesCloseTheirConnections(t *testing.T) {
	const (
		bodyLimit = 300 * time.Millisecond
		idle      = 10 * time.Minute // a connection kept alive outlives the bound
		bound     = 60 * time.Second // generous: only a regression reaches it
		stalled   = 300
	)
	h := http.NewServeMux()
	h.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(io.LimitReader(r.Body, 1<<20)); err != nil {
			_ = r.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"code":"invalid_request","content":"the request body could not be read"}`)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	h.HandleFunc("/ignore", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, errc: make(chan error, 4)}
	t.Cleanup(func() {
		cancel()
		for _, s := range r.srvs {
			_ = s.Close()
		}
		r.wg.Wait()
	})
	addr, err := r.listen(ctx, "127.0.0.1:0", bodyDeadline(bodyLimit, h), idle, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	type conn struct {
		c    net.Conn
		path string
	}
	conns := make([]conn, 0, stalled)
	for i := range stalled {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		path := "/read"
		if i%2 == 1 {
			path = "/ignore"
		}
		// Content-Length 1000, 17 bytes sent, then nothing.
		if _, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: loja.localhost\r\nContent-Type: application/json\r\n"+
			"Content-Length: 1000\r\n\r\n"+`{"jsonrpc":"2.0",`); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		conns = append(conns, conn{c, path})
	}

	deadline := time.Now().Add(bound)
	var mu sync.Mutex
	var failures []string // one per failing connection
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			failed := false
			fail := func(msg string) {
				if failed {
					return
				}
				failed = true
				mu.Lock()
				failures = append(failures, c.path+": "+msg)
				mu.Unlock()
			}
			_ = c.c.SetReadDeadline(deadline)
			br := bufio.NewReader(c.c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				fail("no answer: " + err.Error())
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			want := http.StatusBadRequest
			if c.path == "/ignore" {
				want = http.StatusAccepted
			}
			if resp.StatusCode != want || !resp.Close {
				fail("answered " + resp.Status + " with Connection " + resp.Header.Get("Connection") + ", want " + http.StatusText(want) + " and close")
			}
			// Then the server closes: EOF (or a reset), not our deadline.
			_, err = io.Copy(io.Discard, br)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				fail("still open after the answer")
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("%d of %d stalled connections (body limit %s, idle limit %s), e.g. %s", len(failures), stalled, bodyLimit, idle, failures[0])
	}

	// The listener still serves a complete request afterwards, and keeps
	// that connection alive.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for range 2 {
		if _, err := io.WriteString(c, "POST /read HTTP/1.1\r\nHost: loja.localhost\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("a complete request: %v %v", resp, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}
