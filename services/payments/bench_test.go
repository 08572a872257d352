package payments_test

import (
	"testing"

	"connectrpc.com/connect"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// BenchmarkStartPayment measures a delegated card payment end to end over
// connect: the handler lookup at the tenant registry, token checks, the
// attempt's transaction (with its resolve job) and the simulated
// processor's charge, and the result's transaction. Pix adds the
// simulated PSP's charge and BR Code instead of the processor.
func BenchmarkStartPayment(b *testing.B) {
	e := newEnv(b)
	for _, c := range []struct{ name, instrument string }{
		{"card", cardInstrument(tokenCred("tok_bench_4242"), "visa", "4242")},
		{"pix", pixInstrument},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req := startReq(e.a, "chk_bench_"+c.name+"_"+itoa(i), 12345, c.instrument)
				if c.name == "card" {
					req.Instrument = typedInstrument(cardInstrument(tokenCred("tok_bench"+itoa(i)+"_4242"), "visa", "4242"))
				}
				resp, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(req))
				if err != nil {
					b.Fatal(err)
				}
				if s := resp.Msg.GetAttempt().GetStatus(); s != paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED && s != paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING {
					b.Fatalf("status %v: %s", s, resp.Msg.GetAttempt().GetFailureMessage())
				}
			}
		})
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
