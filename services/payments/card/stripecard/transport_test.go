package stripecard_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
)

// seen is what the server saw of one request.
type seen struct {
	path             string
	proto            int
	contentLength    int64
	bodyLength       int
	transferEncoding []string
	form             url.Values
}

// tlsStripe is a stand-in for Stripe on a TLS listener that speaks HTTP/2
// and HTTP/1.1, answering the token's PaymentMethod and a succeeded
// intent, and counting its connections.
func tlsStripe(t *testing.T) (srv *httptest.Server, roots *x509.CertPool, requests func() []seen, conns func() int) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []seen
		n   int
	)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
		}
		form, _ := url.ParseQuery(string(body))
		mu.Lock()
		got = append(got, seen{r.URL.Path, r.ProtoMajor, r.ContentLength, len(body), r.TransferEncoding, form})
		mu.Unlock()
		r.PostForm = form
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/payment_methods":
			fmt.Fprint(w, `{"id":"pm_1FromToken","object":"payment_method","type":"card"}`)
		case "/v1/payment_intents":
			fmt.Fprint(w, intent("pi_1Fake", "succeeded", 1990, r.PostForm.Get("metadata[bcp_attempt_id]"), nil))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			n++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots = x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots,
		func() []seen { mu.Lock(); defer mu.Unlock(); return append([]seen(nil), got...) },
		func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestTransport: NewTransport speaks HTTP/2 to a server offering it, over
// one connection, and the Processor sends its bodies with their length
// (Content-Length, not chunked or of unknown length), leaving the
// caller's client as it was.
func TestTransport(t *testing.T) {
	srv, roots, requests, conns := tlsStripe(t)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: stripecard.NewTransport(roots, nil)}
	p, err := stripecard.New(stripecard.Config{SecretKey: fakeKey, BaseURL: srv.URL, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ch, err := p.Charge(context.Background(), chargeReq(ids.New("pay"), "tok_visa"))
		if err != nil || ch.Status != card.StatusApproved || ch.ID != "pi_1Fake" {
			t.Fatalf("charge: %+v %v", ch, err)
		}
	}
	got := requests()
	if len(got) != 6 {
		t.Fatalf("%d requests, want 6", len(got))
	}
	for _, r := range got {
		if r.proto != 2 || len(r.transferEncoding) != 0 || r.bodyLength == 0 || r.contentLength != int64(r.bodyLength) {
			t.Errorf("%s: HTTP/%d, Transfer-Encoding %v, Content-Length %d for %d bytes", r.path, r.proto, r.transferEncoding, r.contentLength, r.bodyLength)
		}
	}
	if r := got[1]; r.path != "/v1/payment_intents" || r.form.Get("payment_method") != "pm_1FromToken" || r.form.Get("amount") != "1990" {
		t.Errorf("charge request %s %v", r.path, r.form)
	}
	if n := conns(); n != 1 {
		t.Errorf("%d connections for 6 requests, want 1", n)
	}
	if tr, ok := hc.Transport.(*http.Transport); !ok || hc.Timeout != 30*time.Second {
		t.Errorf("the caller's client changed: %T %v", hc.Transport, hc.Timeout)
	} else if tr.MaxIdleConnsPerHost != stripecard.MaxIdleConnsPerHost {
		t.Errorf("MaxIdleConnsPerHost %d", tr.MaxIdleConnsPerHost)
	}
}

// TestTimeout: the client's Timeout bounds each request, its answer's
// body included (as http.Client.Timeout does), and a timed-out charge is
// an error (its outcome unknown), never an outcome.
func TestTimeout(t *testing.T) {
	for _, c := range []struct {
		name       string
		stallsBody bool
	}{{"no answer", false}, {"answer's body stalls", true}} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if c.stallsBody {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Content-Length", "1000")
					fmt.Fprint(w, `{"id":"pi_1Fake",`)
					w.(http.Flusher).Flush()
				}
				<-release
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) }) // before srv.Close
			p, err := stripecard.New(stripecard.Config{SecretKey: fakeKey, BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			ch, err := p.Charge(context.Background(), chargeReq(ids.New("pay"), "pm_card_visa"))
			if !errors.Is(err, context.DeadlineExceeded) || ch != (card.Charge{}) {
				t.Fatalf("charge: %+v %v, want a deadline error and no outcome", ch, err)
			}
		})
	}
}
