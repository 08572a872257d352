package payments_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/svcauth"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/payments/v1/paymentsv1connect"
	"github.com/bcpdev/bcp/services/payments"
)

func TestPaymentStats(t *testing.T) {
	e := newEnv(t)
	// Real attempts through the service: two Pix paid, one expired, one
	// pending, one card approved, one declined.
	paid1 := e.start(e.a, startReq(e.a, "chk_st_p1", 12345, pixInstrument))
	paid2 := e.start(e.a, startReq(e.a, "chk_st_p2", 5000, pixInstrument))
	for _, a := range []*paymentsv1.Attempt{paid1, paid2} {
		if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
			t.Fatal(err)
		}
		e.waitStatus(e.a, a.GetId(), statusSucceeded)
	}
	expired := e.start(e.a, startReq(e.a, "chk_st_e1", 7000, pixInstrument))
	e.clock.Add(31 * time.Minute)
	if n := e.sweep(e.svc.SweepResolves); n != 1 {
		t.Fatalf("sweep at expiry settled %d, want 1", n)
	}
	e.waitStatus(e.a, expired.GetId(), statusExpired)
	pending := e.start(e.a, startReq(e.a, "chk_st_n1", 3000, pixInstrument))
	approved := e.start(e.a, startReq(e.a, "chk_st_c1", 25990, cardInstrument(tokenCred("tok_visa_4242"), "visa", "4242")))
	declined := e.start(e.a, startReq(e.a, "chk_st_c2", 25990, cardInstrument(tokenCred("tok_visa_0002"), "visa", "4242")))
	if approved.GetStatus() != statusSucceeded || declined.GetStatus() != statusFailed {
		t.Fatalf("cards: %v %v", approved.GetStatus(), declined.GetStatus())
	}

	// Dated in the past (the API cannot): São Paulo is UTC-3, so 02:30Z on
	// the 10th is the 9th there.
	at := map[string]string{
		paid1.GetId(): "2026-03-10T02:30:00Z", paid2.GetId(): "2026-03-10T03:30:00Z", expired.GetId(): "2026-03-10T12:00:00Z",
		pending.GetId(): "2026-03-10T12:00:00Z", approved.GetId(): "2026-03-11T12:00:00Z", declined.GetId(): "2026-03-11T12:00:00Z",
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for id, ts := range at {
		v, _ := time.Parse(time.RFC3339, ts)
		if _, err := conn.Exec(ctx, `UPDATE payments.attempts SET created_at = $1 WHERE id = $2`, v, id); err != nil {
			t.Fatal(err)
		}
	}

	stats := func(c paymentsv1connect.PaymentsServiceClient, ctx context.Context, since, until string) *paymentsv1.GetPaymentStatsResponse {
		t.Helper()
		req := &paymentsv1.GetPaymentStatsRequest{}
		if since != "" {
			v, _ := time.Parse(time.RFC3339, since)
			req.SinceUnix = v.Unix()
		}
		if until != "" {
			v, _ := time.Parse(time.RFC3339, until)
			req.UntilUnix = v.Unix()
		}
		r, err := c.GetPaymentStats(ctx, connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg
	}
	got := stats(e.client, e.a.ctx, "", "")
	if got.GetPixPaid() != 2 || got.GetPixExpired() != 1 || got.GetPixPending() != 1 || got.GetCardApproved() != 1 || got.GetCardDeclined() != 1 {
		t.Errorf("totals: %v", got)
	}
	days := got.GetPixPerDay()
	if len(days) != 2 || days[0].GetDay() != "2026-03-09" || days[0].GetPaid() != 1 || days[0].GetExpired() != 0 ||
		days[1].GetDay() != "2026-03-10" || days[1].GetPaid() != 1 || days[1].GetExpired() != 1 {
		t.Errorf("pix per day = %v", days)
	}
	// [03:00Z on the 10th, 00:00Z on the 11th): the first Pix and the
	// cards are outside.
	w := stats(e.client, e.a.ctx, "2026-03-10T03:00:00Z", "2026-03-11T00:00:00Z")
	if w.GetPixPaid() != 1 || w.GetPixExpired() != 1 || w.GetPixPending() != 1 || w.GetCardApproved() != 0 || w.GetCardDeclined() != 0 || len(w.GetPixPerDay()) != 1 {
		t.Errorf("window: %v", w)
	}

	// The operator token with the tenant header sees the same; merchant B
	// sees nothing.
	api := httptest.NewServer(mux(paymentsv1connect.NewPaymentsServiceHandler(e.svc, connect.WithInterceptors(
		apperr.Interceptor(quietLog()), svcauth.Server(svcauth.Tokens{Internal: internalToken, Operator: operatorToken}, payments.Policy)))))
	t.Cleanup(api.Close)
	op := paymentsv1connect.NewPaymentsServiceClient(http.DefaultClient, api.URL, connect.WithInterceptors(svcauth.Client(operatorToken)))
	if o := stats(op, e.a.ctx, "", ""); o.GetPixPaid() != 2 || o.GetPixExpired() != 1 || len(o.GetPixPerDay()) != 2 {
		t.Errorf("operator: %v", o)
	}
	if _, err := op.GetPaymentStats(ctx, connect.NewRequest(&paymentsv1.GetPaymentStatsRequest{})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("no tenant header: %v", err)
	}
	b := stats(e.client, e.b.ctx, "", "")
	if b.GetPixPaid()+b.GetPixExpired()+b.GetPixPending()+b.GetCardApproved()+b.GetCardDeclined() != 0 || len(b.GetPixPerDay()) != 0 {
		t.Errorf("merchant B sees %v", b)
	}
}
