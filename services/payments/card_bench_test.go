package payments_test

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// The PSP and processor connections the service opened (each one a TLS
// handshake) and the requests it sent over them, by protocol, counted
// for the benchmarks.
var (
	pspDials, pspRequests, pspHTTP2 atomic.Int64
)

func countDials(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		pspDials.Add(1)
		return dial(ctx, network, addr)
	}
}

type requestCounter struct{ next http.RoundTripper }

func (c requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if hook := pspBeforeSend.Load(); hook != nil {
		if err := (*hook)(r); err != nil {
			return nil, err
		}
	}
	res, err := c.next.RoundTrip(r)
	if err == nil {
		pspRequests.Add(1)
		if res.ProtoMajor == 2 {
			pspHTTP2.Add(1)
		}
	}
	return res, err
}

func countRequests(next http.RoundTripper) http.RoundTripper { return requestCounter{next} }

// BenchmarkCardCharge is a delegated card payment at the sandbox's card
// processor (the Stripe adapter against the card simulator over TLS),
// reporting the processor connections (TLS handshakes) and requests per
// payment besides allocations: one payment at a time, and 8 at once (as
// bcpbench's agents), where connections must be reused too.
func BenchmarkCardCharge(b *testing.B) {
	e := newEnv(b)
	var n atomic.Int64
	pay := func(b *testing.B) {
		i := n.Add(1)
		req := startReq(e.a, "chk_cardbench_"+itoa(int(i)), 12345, "")
		req.Instrument = typedInstrument(cardInstrument(tokenCred("tok_cardbench"+itoa(int(i))+"_4242"), "visa", "4242"))
		resp, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(req))
		if err != nil {
			b.Error(err)
			return
		}
		if s := resp.Msg.GetAttempt().GetStatus(); s != paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED {
			b.Errorf("status %v: %s", s, resp.Msg.GetAttempt().GetFailureMessage())
		}
	}
	// The first payment sets up the handler's sandbox account and client.
	pay(b)
	report := func(b *testing.B, run func()) {
		dials, reqs, h2 := pspDials.Load(), pspRequests.Load(), pspHTTP2.Load()
		b.ReportAllocs()
		run()
		n := float64(b.N)
		b.ReportMetric(float64(pspDials.Load()-dials)/n, "dials/op")
		b.ReportMetric(float64(pspRequests.Load()-reqs)/n, "requests/op")
		b.ReportMetric(float64(pspHTTP2.Load()-h2)/n, "h2requests/op")
	}
	b.Run("serial", func(b *testing.B) {
		report(b, func() {
			for b.Loop() {
				pay(b)
			}
		})
	})
	b.Run("parallel8", func(b *testing.B) {
		report(b, func() {
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					pay(b)
				}
			})
		})
	})
}
