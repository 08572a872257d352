package apipix_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/internal/wirecount"
	"github.com/bcpdev/bcp/services/payments/pix/apipix"
	"github.com/bcpdev/bcp/sim/pspsim/psptest"
)

// BenchmarkCreateCharge is a Pix purchase's call to the PSP (PUT
// /cob/{txid}) at the PSP simulator over a real mTLS listener, reporting
// besides allocations the connections dialed, reads and writes on them
// and goroutines started per call: the client's and the simulator's
// together (one process, as in bcpd's dev and all roles), one call at a
// time and 8 at once.
func BenchmarkCreateCharge(b *testing.B) {
	db := testdb.New(b)
	sim := psptest.Start(b, db.Pool)
	acc := sim.Provision("loja-bench", nil)
	cert, err := pki.ParseCredentials([]byte(acc.CertificatePEM), []byte(acc.PrivateKeyPEM))
	if err != nil {
		b.Fatal(err)
	}
	tc := cert.TLS()
	var dials, reads, writes atomic.Int64
	cl, err := apipix.New(apipix.Config{
		BaseURL: acc.APIURL, TokenURL: acc.TokenURL, ClientID: acc.ClientID, ClientSecret: acc.ClientSecret,
		Certificate: &tc, RootCAs: sim.DevCA.Pool(), Webhook: apipix.WebhookAuth{Scheme: apipix.SchemeMTLS, CAs: sim.DevCA.Pool()},
		Timeout: 10 * time.Second,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			dials.Add(1)
			return wirecount.Conn{Conn: c, Reads: &reads, Writes: &writes}, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	create := func(b *testing.B) {
		txid := fmt.Sprintf("bench%027d", n.Add(1))
		if _, err := cl.CreateCharge(context.Background(), txid, cobReq("12.34", acc.Chave)); err != nil {
			b.Error(err)
		}
	}
	run := func(b *testing.B, loop func()) {
		var wg sync.WaitGroup
		for range 8 { // the token, and a connection per call at once
			wg.Go(func() { create(b) })
		}
		wg.Wait()
		d, rd, wr, g := dials.Load(), reads.Load(), writes.Load(), wirecount.GoroutinesCreated()
		b.ReportAllocs()
		b.ResetTimer()
		loop()
		b.StopTimer()
		n := float64(b.N)
		b.ReportMetric(float64(dials.Load()-d)/n, "dials/op")
		b.ReportMetric(float64(reads.Load()-rd)/n, "reads/op")
		b.ReportMetric(float64(writes.Load()-wr)/n, "writes/op")
		b.ReportMetric(float64(wirecount.GoroutinesCreated()-g)/n, "goroutines/op")
	}
	b.Run("serial", func(b *testing.B) {
		run(b, func() {
			for range b.N {
				create(b)
			}
		})
	})
	b.Run("parallel8", func(b *testing.B) {
		run(b, func() {
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					create(b)
				}
			})
		})
	})
}
