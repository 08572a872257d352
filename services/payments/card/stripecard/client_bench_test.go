package stripecard_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/tracing"
	"github.com/bcpdev/bcp/internal/wirecount"
	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/card/stripecard"
)

// standInEnv makes the test binary a Stripe stand-in (TestStandIn).
const standInEnv = "STRIPECARD_STAND_IN"

// TestStandIn is, only in a process started by startStandIn, a stand-in
// for Stripe on a TLS listener offering HTTP/2 and HTTP/1.1, answering a
// charge's two requests (the token's PaymentMethod and a succeeded
// intent) with the simulator's headers, until its standard input closes.
// It runs in a process of its own so that what a benchmark counts
// (allocations, goroutines) is the client's alone.
func TestStandIn(t *testing.T) {
	if os.Getenv(standInEnv) != "1" {
		t.Skip("only as startStandIn's server process")
	}
	pm := `{"id":"pm_1FromToken","object":"payment_method","allow_redisplay":"unspecified","billing_details":{"address":null,"email":null,"name":null,"phone":null},` +
		`"card":{"brand":"visa","checks":{"address_line1_check":null,"address_postal_code_check":null,"cvc_check":"unchecked"},"country":"BR","display_brand":"visa",` +
		`"exp_month":12,"exp_year":2031,"fingerprint":"fAkEfInGeRpRiNt","funding":"credit","last4":"4242","networks":{"available":["visa"],"preferred":null},` +
		`"three_d_secure_usage":{"supported":true},"wallet":null},"created":1767225600,"customer":null,"livemode":false,"metadata":{},"type":"card"}`
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-cache, no-store")
		h.Set("Request-Id", "req_"+strconv.FormatInt(n.Add(1), 36))
		h.Set("Stripe-Version", r.Header.Get("Stripe-Version"))
		h.Set("Idempotency-Key", r.Header.Get("Idempotency-Key"))
		if r.Header.Get("Authorization") != "Bearer "+fakeKey {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/payment_methods":
			fmt.Fprint(w, pm)
		case "/v1/payment_intents":
			fmt.Fprint(w, intent("pi_1Fake", "succeeded", 12345, r.Header.Get("Idempotency-Key"), nil))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	fmt.Printf("URL %s\n", srv.URL)
	_ = pem.Encode(os.Stdout, &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	fmt.Println("END")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startStandIn runs TestStandIn in a process of its own and returns its
// URL and the roots that verify its certificate.
func startStandIn(tb testing.TB) (string, *x509.CertPool) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStandIn$", "-test.count=1")
	cmd.Env = append(os.Environ(), standInEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var base, certPEM string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "END" {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			base = u
		} else {
			certPEM += sc.Text() + "\n"
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	roots := x509.NewCertPool()
	if base == "" || !roots.AppendCertsFromPEM([]byte(certPEM)) {
		tb.Fatalf("the stand-in did not start: %q %q", base, certPEM)
	}
	return base, roots
}

// clientCounts counts what a Processor's transport does on its
// connections.
type clientCounts struct {
	dials, handshakes, reads, writes atomic.Int64
}

func (c *clientCounts) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.dials.Add(1)
	return wirecount.Conn{Conn: conn, Reads: &c.reads, Writes: &c.writes}, nil
}

func (c *clientCounts) transport(tr *http.Transport) *http.Transport {
	tr.TLSClientConfig.VerifyConnection = func(tls.ConnectionState) error {
		c.handshakes.Add(1)
		return nil
	}
	return tr
}

// BenchmarkClientCharge is the client's side of a charge of a card token
// (two requests: the PaymentMethod, then the confirmed PaymentIntent),
// against a stand-in for Stripe in another process over a real TLS
// listener, so that allocations, bytes and goroutines started are the
// client's alone: the production transport (NewTransport, HTTP/1.1) and
// the same offering HTTP/2 ("h2", what it was before), with the
// payments service's client (a 30 s timeout, tracing's transport). It
// reports the connections dialed, TLS handshakes, reads and writes on
// the connections and goroutines started per charge; one charge at a
// time and 8 at once.
func BenchmarkClientCharge(b *testing.B) {
	base, roots := startStandIn(b)
	for _, c := range []struct {
		name string
		tr   func(dial func(context.Context, string, string) (net.Conn, error)) *http.Transport
	}{
		{"h1", func(dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
			return stripecard.NewTransport(roots, dial)
		}},
		{"h2", func(dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
			tr := stripecard.NewTransport(roots, dial)
			tr.Protocols = new(http.Protocols)
			tr.Protocols.SetHTTP1(true)
			tr.Protocols.SetHTTP2(true)
			tr.ForceAttemptHTTP2 = true
			return tr
		}},
	} {
		var counts clientCounts
		tr := counts.transport(c.tr(counts.dial))
		p, err := stripecard.New(stripecard.Config{SecretKey: fakeKey, BaseURL: base,
			HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: tracing.Transport(tr)}})
		if err != nil {
			b.Fatal(err)
		}
		var n atomic.Int64
		charge := func(b *testing.B) {
			i := strconv.FormatInt(n.Add(1), 10)
			ch, err := p.Charge(context.Background(), card.ChargeRequest{
				IdempotencyKey: ids.New("pay"), Token: "tok_bench" + i + "_4242", Amount: 12345, Currency: "BRL",
				ReturnURL: "https://loja.example/checkout/chk_1", CheckoutID: "chk_" + i,
			})
			if err != nil || ch.Status != card.StatusApproved {
				b.Errorf("charge: %+v %v", ch, err)
			}
		}
		run := func(b *testing.B, loop func()) {
			// The connections: as many as charges run at once.
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() { charge(b) })
			}
			wg.Wait()
			d, hs, rd, wr, g := counts.dials.Load(), counts.handshakes.Load(), counts.reads.Load(), counts.writes.Load(), wirecount.GoroutinesCreated()
			b.ReportAllocs()
			b.ResetTimer()
			loop()
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(counts.dials.Load()-d)/n, "dials/op")
			b.ReportMetric(float64(counts.handshakes.Load()-hs)/n, "handshakes/op")
			b.ReportMetric(float64(counts.reads.Load()-rd)/n, "reads/op")
			b.ReportMetric(float64(counts.writes.Load()-wr)/n, "writes/op")
			b.ReportMetric(float64(wirecount.GoroutinesCreated()-g)/n, "goroutines/op")
		}
		b.Run(c.name+"/serial", func(b *testing.B) {
			run(b, func() {
				for range b.N {
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
