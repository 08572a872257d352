package stripecard_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/tracing"
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

// TestTransport: NewTransport speaks HTTP/1.1 to a server offering HTTP/2
// too, one charge after another over one connection, verifying the
// server's certificate, and the Processor sends its bodies with their
// length (Content-Length, not chunked or of unknown length), leaving the
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
		if r.proto != 1 || len(r.transferEncoding) != 0 || r.bodyLength == 0 || r.contentLength != int64(r.bodyLength) {
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

	// Without the server's CA the certificate is refused: no request.
	untrusted, err := stripecard.New(stripecard.Config{SecretKey: fakeKey, BaseURL: srv.URL,
		HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: stripecard.NewTransport(x509.NewCertPool(), nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := untrusted.Charge(context.Background(), chargeReq(ids.New("pay"), "tok_visa"))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) || ch != (card.Charge{}) {
		t.Errorf("charge with an untrusted certificate: %+v %v", ch, err)
	}
	if n := len(requests()); n != 6 {
		t.Errorf("%d requests, want still 6", n)
	}
}

// TestConnectionsDoNotGrowWithCharges: NewTransport keeps its connections
// (and so makes no TLS handshake per charge): one for any number of
// charges made one after another; and 8 at once, once the first 16
// charges have opened what they needed (net/http dials for a request
// that finds no idle connection, and keeps the connection when another
// is freed first), 160 more open at most 16 (none once more than 16 are
// open: 8 busy, 8 being freed), not one per charge.
func TestConnectionsDoNotGrowWithCharges(t *testing.T) {
	srv, roots, requests, conns := tlsStripe(t)
	var dials, handshakes atomic.Int64
	tr := stripecard.NewTransport(roots, func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1) // when net/http decides to dial: none after the charges returned
		return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
	})
	tr.TLSClientConfig.VerifyConnection = func(tls.ConnectionState) error { handshakes.Add(1); return nil }
	p, err := stripecard.New(stripecard.Config{SecretKey: fakeKey, BaseURL: srv.URL,
		HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: tracing.Transport(tr)}})
	if err != nil {
		t.Fatal(err)
	}
	charges := func(workers, each int) {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					ch, err := p.Charge(context.Background(), chargeReq(ids.New("pay"), "tok_visa"))
					if err != nil || ch.Status != card.StatusApproved {
						t.Errorf("charge: %+v %v", ch, err)
					}
				}
			})
		}
		wg.Wait()
	}
	charges(1, 2)
	charges(1, 20)
	if d, h, c := dials.Load(), handshakes.Load(), conns(); d != 1 || h != 1 || c != 1 {
		t.Fatalf("22 charges one at a time: %d dials, %d handshakes, %d connections; want 1", d, h, c)
	}
	const workers = 8
	charges(workers, 2)
	before := dials.Load()
	charges(workers, 20)
	if d := dials.Load() - before; d > 2*workers {
		t.Errorf("160 charges 8 at once dialed %d connections (%d before), want at most %d", d, before, 2*workers)
	}
	if h := handshakes.Load(); h > dials.Load() {
		t.Errorf("%d handshakes for %d connections", h, dials.Load())
	}
	if n := len(requests()); n != 2*(2+20+workers*2+workers*20) {
		t.Errorf("%d requests", n)
	}
}

// TestStaleConnectionRetrySameKey: when the server closes a reused
// connection after reading a charge, before answering (a keep-alive
// race), net/http sends the charge again on a new connection, with the
// same Idempotency-Key and the same body (Stripe then answers the first
// request's answer if it had been received after all), and the charge
// gets Stripe's answer.
func TestStaleConnectionRetrySameKey(t *testing.T) {
	var (
		mu     sync.Mutex
		got    []seen
		keys   []string
		closed bool
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		mu.Lock()
		got = append(got, seen{path: r.URL.Path, proto: r.ProtoMajor, bodyLength: len(body), form: form})
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		drop := r.URL.Path == "/v1/payment_intents" && !closed
		closed = closed || drop
		mu.Unlock()
		if drop {
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = c.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/payment_methods":
			fmt.Fprint(w, `{"id":"pm_1FromToken","object":"payment_method","type":"card"}`)
		case "/v1/payment_intents":
			fmt.Fprint(w, intent("pi_1Fake", "succeeded", 1990, form.Get("metadata[bcp_attempt_id]"), nil))
		}
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	p, err := stripecard.New(stripecard.Config{SecretKey: fakeKey, BaseURL: srv.URL,
		HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: stripecard.NewTransport(roots, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	key := ids.New("pay")
	ch, err := p.Charge(context.Background(), chargeReq(key, "tok_visa"))
	if err != nil || ch.Status != card.StatusApproved || ch.ID != "pi_1Fake" {
		t.Fatalf("charge: %+v %v", ch, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0].path != "/v1/payment_methods" || got[1].path != "/v1/payment_intents" || got[2].path != "/v1/payment_intents" {
		t.Fatalf("requests %+v", got)
	}
	if keys[0] != "pm:"+key || keys[1] != key || keys[2] != key {
		t.Errorf("Idempotency-Keys %q, want pm:%s, then %s twice", keys, key, key)
	}
	if got[1].form.Encode() != got[2].form.Encode() || got[1].bodyLength != got[2].bodyLength || got[2].form.Get("amount") != "1990" {
		t.Errorf("the charge sent again differs: %v\n%v", got[1].form, got[2].form)
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
