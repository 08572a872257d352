package cardsim_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/wirecount"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
)

// BenchmarkCharge is the Stripe adapter's Charge of a card token (a
// PaymentMethod from the token, then the confirmed PaymentIntent) at the
// simulator behind a real TLS listener that speaks HTTP/2 and HTTP/1.1,
// through the transport production uses (stripecard.NewTransport,
// HTTP/1.1: "http1"), the same offering HTTP/2 ("http2", what it used
// before) and net/http's default one ("default", HTTP/2 too). The
// counts are the client's and the simulator's together (one process, as
// in bcpd's dev and all roles); BenchmarkClientCharge in stripecard
// counts the client's alone. It reports the connections, TLS handshakes
// (and those resumed), requests, reads and writes on the connections and
// goroutines started per charge besides allocations, one charge at a
// time and 8 at once.
func BenchmarkCharge(b *testing.B) {
	e := newEnv(b)
	srv := httptest.NewUnstartedServer(e.srv.Config.Handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	b.Cleanup(srv.Close)
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	var dials, handshakes, resumed, requests, h2, reads, writes atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wirecount.Conn{Conn: c, Reads: &reads, Writes: &writes}, nil
	}
	transports := []struct {
		name string
		tr   func() *http.Transport
	}{
		{"http1", func() *http.Transport { return stripecard.NewTransport(roots, dial) }},
		{"http2", func() *http.Transport {
			tr := stripecard.NewTransport(roots, dial)
			tr.Protocols = new(http.Protocols)
			tr.Protocols.SetHTTP1(true)
			tr.Protocols.SetHTTP2(true)
			tr.ForceAttemptHTTP2 = true
			return tr
		}},
		{"default", func() *http.Transport {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = dial
			tr.TLSClientConfig.RootCAs = roots
			return tr
		}},
	}
	var n atomic.Int64
	for _, c := range transports {
		tr := c.tr()
		tr.TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
			handshakes.Add(1)
			if cs.DidResume {
				resumed.Add(1)
			}
			return nil
		}
		proc, err := stripecard.New(stripecard.Config{SecretKey: e.key, BaseURL: srv.URL, HTTPClient: &http.Client{
			Timeout: 30 * time.Second, Transport: counter{tr, &requests, &h2}}})
		if err != nil {
			b.Fatal(err)
		}
		charge := func(b *testing.B) {
			i := strconv.FormatInt(n.Add(1), 10)
			ch, err := proc.Charge(context.Background(), card.ChargeRequest{
				IdempotencyKey: ids.New("pay"), Token: "tok_bench" + i + "_4242", Amount: 12345, Currency: "BRL",
				ReturnURL: returnURL, CheckoutID: "chk_" + i,
			})
			if err != nil || ch.Status != card.StatusApproved {
				b.Errorf("charge: %+v %v", ch, err)
			}
		}
		charge(b) // the first connection
		run := func(b *testing.B, loop func()) {
			d, hs, rs, r, r2, rd, wr, g := dials.Load(), handshakes.Load(), resumed.Load(), requests.Load(), h2.Load(), reads.Load(), writes.Load(), wirecount.GoroutinesCreated()
			b.ReportAllocs()
			loop()
			n := float64(b.N)
			b.ReportMetric(float64(dials.Load()-d)/n, "dials/op")
			b.ReportMetric(float64(handshakes.Load()-hs)/n, "handshakes/op")
			b.ReportMetric(float64(resumed.Load()-rs)/n, "resumed/op")
			b.ReportMetric(float64(requests.Load()-r)/n, "requests/op")
			b.ReportMetric(float64(h2.Load()-r2)/n, "h2requests/op")
			b.ReportMetric(float64(reads.Load()-rd)/n, "reads/op")
			b.ReportMetric(float64(writes.Load()-wr)/n, "writes/op")
			b.ReportMetric(float64(wirecount.GoroutinesCreated()-g)/n, "goroutines/op")
		}
		b.Run(c.name+"/serial", func(b *testing.B) {
			run(b, func() {
				for b.Loop() {
					charge(b)
				}
			})
		})
		b.Run(c.name+"/parallel8", func(b *testing.B) {
			run(b, func() {
				b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						charge(b)
					}
				})
			})
		})
		tr.CloseIdleConnections()
	}
}

// counter counts the requests a transport answered, and those in HTTP/2.
type counter struct {
	next          http.RoundTripper
	requests, h2s *atomic.Int64
}

func (c counter) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(r)
	if err == nil {
		c.requests.Add(1)
		if res.ProtoMajor == 2 {
			c.h2s.Add(1)
		}
	}
	return res, err
}
