package payments_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/internal/tenancy"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/brcode"
	"github.com/bcpdev/bcp/services/payments/paymentsdb"
	"github.com/bcpdev/bcp/services/payments/paymentshttp"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/sim/pspsim"
)

const (
	statusPending   = paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING
	statusSucceeded = paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED
	statusFailed    = paymentsv1.AttemptStatus_ATTEMPT_STATUS_FAILED
	statusExpired   = paymentsv1.AttemptStatus_ATTEMPT_STATUS_EXPIRED
	statusCanceled  = paymentsv1.AttemptStatus_ATTEMPT_STATUS_CANCELED
)

func TestPixStartIsPendingWithAValidBRCode(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now().Truncate(time.Second)
	req := startReq(e.a, "chk_pix_1", 12345, pixInstrument)
	a := e.start(e.a, req)

	if a.GetStatus() != statusPending || a.GetAmount() != 12345 || a.GetCurrency() != "BRL" || a.GetHandlerName() != "br.dev.bcp.pix" ||
		a.GetHandlerId() != "pix" || a.GetInstrumentId() != "pi_1" || a.GetInstrumentType() != "pix" {
		t.Fatalf("attempt = %v", a)
	}
	if got, want := a.GetExpiresAt().AsTime(), now.Add(1800*time.Second); !got.Equal(want) {
		t.Errorf("expires_at = %v, want now + 1800 s = %v", got, want)
	}
	d := pixDisplayOf(t, a)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(d.Txid) {
		t.Errorf("txid %q is not 32 lowercase hex", d.Txid)
	}
	if d.Amount != "123.45" || d.ExpiresAt != now.Add(1800*time.Second).Format(time.RFC3339) || d.AttemptID != a.GetId() || d.Environment != "sandbox" {
		t.Errorf("display amount %q expires_at %q", d.Amount, d.ExpiresAt)
	}
	if d.QRPngURL != e.a.baseURL+"/pix/qr/"+a.GetId()+".png" || d.QRSvgURL != e.a.baseURL+"/pix/qr/"+a.GetId()+".svg" {
		t.Errorf("QR urls %q %q", d.QRPngURL, d.QRSvgURL)
	}
	p, err := brcode.Parse(d.CopiaECola)
	if err != nil {
		t.Fatalf("brcode.Parse(%q): %v", d.CopiaECola, err)
	}
	body, crc := d.CopiaECola[:len(d.CopiaECola)-4], d.CopiaECola[len(d.CopiaECola)-4:]
	if brcode.Checksum(body) != crc {
		t.Errorf("CRC %s, want %s", crc, brcode.Checksum(body))
	}
	if !p.IsDynamic() || p.Initiation != brcode.InitiationSingleUse || p.Amount != 12345 || p.MerchantName != "LOJA ARVORE" || p.MerchantCity != "FLORIANOPOLIS" {
		t.Errorf("payload = %+v", p)
	}
	if !regexp.MustCompile(`^pix\.sandbox\.bcp\.dev\.br/qr/v2/[0-9a-f]{32}$`).MatchString(p.URL) {
		t.Errorf("location %q", p.URL)
	}
	// The PSP holds the same charge, for the account's own Pix key.
	c := e.simCharge(e.a, d.Txid)
	if c.Status != pix.StatusAtiva || c.Valor.Original != "123.45" || c.PixCopiaECola != d.CopiaECola || c.Calendario.Expiracao != 1800 ||
		c.Chave != e.ledger(e.a).Account.Chave {
		t.Errorf("PSP charge = %+v", c)
	}
	// The resolve sweep first polls the PSP two minutes after the start;
	// no job was inserted with the attempt.
	if got, want := e.resolveAfter(e.a, a.GetId()), e.clock.Now().Add(2*time.Minute); got == nil || got.Sub(want).Abs() > time.Microsecond {
		t.Errorf("resolve_after = %v, want %v", got, want)
	}
	if n := e.jobsFor(a.GetId()); n != 0 {
		t.Errorf("%d jobs for the attempt, want none", n)
	}

	// The QR images, through the public routes.
	for _, c := range []struct{ url, ctype, prefix string }{{d.QRPngURL, "image/png", "\x89PNG"}, {d.QRSvgURL, "image/svg+xml", "<svg"}} {
		resp, err := web.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.ctype || resp.Header.Get("Cache-Control") != "private, max-age=60" || !bytes.HasPrefix(b, []byte(c.prefix)) {
			t.Errorf("GET %s: %d %q %q %.10q", c.url, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), b)
		}
	}
	// Another merchant's host does not serve it.
	resp, err := web.Get(strings.Replace(d.QRPngURL, "loja-a", "loja-b", 1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("QR on tenant B's host: %d, want 404", resp.StatusCode)
	}
}

func TestStartPaymentIsIdempotentByAttemptID(t *testing.T) {
	e := newEnv(t)
	req := startReq(e.a, "chk_idem", 5000, pixInstrument)
	var wg sync.WaitGroup
	out := make([]*paymentsv1.Attempt, 6)
	for i := range out {
		wg.Go(func() {
			resp, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(req))
			if err != nil {
				t.Errorf("StartPayment #%d: %v", i, err)
				return
			}
			out[i] = resp.Msg.GetAttempt()
		})
	}
	wg.Wait()
	for _, a := range out[1:] {
		if a.GetId() != out[0].GetId() || a.GetDisplayJson() != out[0].GetDisplayJson() || a.GetStatus() != statusPending {
			t.Fatalf("retries differ:\n%v\n%v", a, out[0])
		}
	}
	if n := e.simCharges(e.a); n != 1 {
		t.Errorf("sim PSP has %d charges, want 1", n)
	}
	if n := e.jobsFor(req.GetAttemptId()); n != 0 {
		t.Errorf("%d jobs for the attempt, want none", n)
	}
	// Same id, different request.
	other := proto.Clone(req).(*paymentsv1.StartPaymentRequest)
	other.Amount = 5001
	_, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(other))
	if got := codeOf(err); got != "failed_precondition/attempt_conflict" {
		t.Errorf("different request under the same id: %s", got)
	}
}

func TestSecondAttemptWhilePendingIsRefused(t *testing.T) {
	e := newEnv(t)
	first := e.start(e.a, startReq(e.a, "chk_two", 5000, pixInstrument))
	_, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(startReq(e.a, "chk_two", 5000, pixInstrument)))
	if got := codeOf(err); got != "failed_precondition/payment_in_progress" {
		t.Fatalf("second attempt: %s", got)
	}
	if n := e.simCharges(e.a); n != 1 {
		t.Errorf("sim PSP has %d charges, want 1", n)
	}
	// Once the first is canceled, a new attempt may start.
	if _, err := e.client.CancelPayment(e.a.ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: first.GetId()})); err != nil {
		t.Fatal(err)
	}
	if a := e.start(e.a, startReq(e.a, "chk_two", 5000, pixInstrument)); a.GetStatus() != statusPending {
		t.Errorf("after cancel: %v", a.GetStatus())
	}
	// A failed attempt does not block either.
	bad := e.start(e.a, startReq(e.a, "chk_three", 5000, `{"id":"x","handler_id":"nope","type":"pix"}`))
	if bad.GetStatus() != statusFailed {
		t.Fatalf("unknown handler: %v", bad.GetStatus())
	}
	if a := e.start(e.a, startReq(e.a, "chk_three", 5000, pixInstrument)); a.GetStatus() != statusPending {
		t.Errorf("after a failed attempt: %v", a.GetStatus())
	}
}

func TestInstrumentChecksFailTheAttempt(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ name, instrument, currency, want string }{
		{"unknown handler", `{"id":"i","handler_id":"outro","type":"pix"}`, "BRL", `"outro" não está disponível`},
		{"type not allowed", `{"id":"i","handler_id":"pix","type":"card"}`, "BRL", `não aceita meios de pagamento do tipo "card"`},
		{"brand not allowed", cardInstrument(tokenCred("tok_visa4242"), "amex", "0005"), "BRL", `A bandeira "amex" não é aceita`},
		{"currency", pixInstrument, "USD", "só recebe pagamentos em BRL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := startReq(e.a, "chk_"+strings.ReplaceAll(c.name, " ", "_"), 1000, c.instrument)
			req.Currency = c.currency
			a := e.start(e.a, req)
			if a.GetStatus() != statusFailed || a.GetFailureCode() != "payment_failed" || !strings.Contains(a.GetFailureMessage(), c.want) {
				t.Errorf("got %v %q %q, want FAILED payment_failed containing %q", a.GetStatus(), a.GetFailureCode(), a.GetFailureMessage(), c.want)
			}
		})
	}
	if n := e.simCharges(e.a); n != 0 {
		t.Errorf("%d charges created for failed attempts", n)
	}
	// Bad requests from the checkout service are RPC errors.
	req := startReq(e.a, "chk_x", 0, pixInstrument)
	if _, err := e.client.StartPayment(e.a.ctx, connect.NewRequest(req)); codeOf(err) != "invalid_argument/invalid_amount" {
		t.Errorf("amount 0: %s", codeOf(err))
	}
}

// payAndSettle simulates the buyer paying and waits for the webhook to
// settle the attempt.
func TestPixPaidByWebhookSettlesOnce(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_paid", 12345, pixInstrument))
	paid, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()}))
	if err != nil {
		t.Fatal(err)
	}
	// The answer is the attempt as it was paid: the webhook settles it.
	if p := paid.Msg.GetAttempt(); p.GetId() != a.GetId() || p.GetStatus() != statusPending || p.GetAmount() != 12345 {
		t.Errorf("SimulatePixPayment answered %v", p)
	}
	got := e.waitStatus(e.a, a.GetId(), statusSucceeded)
	if got.GetAmount() != 12345 || got.GetRefundedAmount() != 0 {
		t.Errorf("succeeded attempt = %v", got)
	}
	if n := e.receipts(e.a); n != 1 {
		t.Errorf("%d receipts, want 1", n)
	}
	// Announced to checkout in the decision's transaction: exactly one job.
	e.eventually(10*time.Second, "the paid Pix announced", func() bool { return len(e.settled(a.GetId())) == 1 })
	c := e.settled(a.GetId())[0]
	if c.tenant != e.a.id.String() || c.checkoutID != "chk_paid" || c.queue != "checkout" {
		t.Errorf("announcement = %+v", c)
	}
	// The PSP, not the notification, is the truth: the receipt matched.
	var rec paymentsdb.PaymentsPixReceipt
	e.q(e.a, func(q *paymentsdb.Queries) (err error) {
		var att paymentsdb.PaymentsAttempt
		if att, err = q.GetAttempt(context.Background(), paymentsdb.GetAttemptParams{TenantID: e.a.id, ID: a.GetId()}); err != nil {
			return err
		}
		rec, err = q.GetReceipt(context.Background(), paymentsdb.GetReceiptParams{TenantID: e.a.id, E2eID: *att.E2eID})
		return err
	})
	if rec.Status != "matched" || rec.Amount != 12345 || *rec.AttemptID != a.GetId() || !pix.EndToEndID.MatchString(rec.E2eID) || !strings.HasPrefix(rec.E2eID, "E99999999") {
		t.Errorf("receipt = %+v", rec)
	}
	// The attempt names the Pix that paid it (the merchant's order shows it).
	if got.GetEndToEndId() != rec.E2eID || a.GetEndToEndId() != "" {
		t.Errorf("attempt end-to-end id %q (pending: %q), want %q", got.GetEndToEndId(), a.GetEndToEndId(), rec.E2eID)
	}

	// The PSP delivers the same notification again: stored once, nothing
	// happens twice.
	e.deliveries(e.a, "delivered", 1)
	before := e.webhooks.Load()
	if st, b := e.sim.Control(http.MethodPost, "/sim/v1/accounts/"+e.account(e.a, "pix")+"/pix/"+rec.E2eID+"/notify", nil, nil); st != http.StatusAccepted {
		t.Fatalf("notify again: %d %s", st, b)
	}
	e.deliveries(e.a, "delivered", 2)
	if e.webhooks.Load() != before+1 {
		t.Errorf("webhook requests %d → %d, want one more", before, e.webhooks.Load())
	}
	if n := e.receipts(e.a); n != 1 {
		t.Errorf("%d receipts after a duplicate, want 1", n)
	}
	// Reconciled in the webhook's request: no job, nothing left for the
	// sweep.
	if total, _ := e.jobCount("payments_pix_reconcile", "e2e_id", rec.E2eID); total != 0 {
		t.Errorf("%d reconcile jobs, want none", total)
	}
	if n := e.sweep(e.svc.SweepReceipts); n != 0 {
		t.Errorf("the receipt sweep decided %d receipts, want none", n)
	}
	// Checkout was told once, by a call after the decision: no job.
	if total, _ := e.jobCount("payments_settle", "attempt_id", a.GetId()); total != 0 {
		t.Errorf("%d settle jobs, want none", total)
	}
	if n := len(e.settled(a.GetId())); n != 1 {
		t.Errorf("checkout told %d times, want once", n)
	}
	if got := e.get(e.a, a.GetId()); got.GetStatus() != statusSucceeded {
		t.Errorf("after duplicate: %v", got.GetStatus())
	}
	// A paid charge has no QR any more.
	resp, err := web.Get(pixDisplayOf(t, got).QRPngURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("QR of a paid charge: %d", resp.StatusCode)
	}
}

func TestPixWrongAmountIsRefundedWithAlert(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_wrong", 12345, pixInstrument))
	if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId(), Amount: 100})); err != nil {
		t.Fatal(err)
	}
	got := e.waitStatus(e.a, a.GetId(), statusFailed)
	if got.GetFailureCode() != "payment_failed" || got.GetFailureMessage() != "O Pix recebido (R$ 1,00) não corresponde ao valor cobrado (R$ 123,45) e será devolvido." {
		t.Errorf("failure %q %q", got.GetFailureCode(), got.GetFailureMessage())
	}
	e.expectAutoRefund(e.a, a.GetId(), "pix_wrong_amount", "1.00")
	e.eventually(10*time.Second, "announced to checkout", func() bool { return len(e.settled(a.GetId())) == 1 })
}

func TestPixPaidAfterExpiryIsRefundedWithAlert(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_late", 12345, pixInstrument))
	// 31 minutes later, before the expiry job removed the charge (a cob
	// stays ATIVA after its expiry), the buyer pays.
	e.clock.Add(31 * time.Minute)
	if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(e.a, a.GetId(), statusExpired)
	e.expectAutoRefund(e.a, a.GetId(), "pix_paid_after_expiry", "123.45")
	e.eventually(10*time.Second, "announced to checkout", func() bool { return len(e.settled(a.GetId())) == 1 })
}

// expectAutoRefund waits for the automatic full refund of attemptID's Pix
// (devolução ORIGINAL of valor at the PSP) and checks the merchant alert.
func (e *env) expectAutoRefund(m merchant, attemptID, kind, valor string) {
	e.t.Helper()
	var refund paymentsdb.PaymentsRefund
	var paid pspsim.Pix
	e.eventually(10*time.Second, "automatic refund succeeded", func() bool {
		var txid string
		e.scalar(m, &txid, `SELECT txid FROM payments.attempts WHERE id = $1`, attemptID)
		paid = e.pixOf(m, txid)
		if paid.EndToEndID == "" {
			return false
		}
		e.q(m, func(q *paymentsdb.Queries) error {
			rs, err := q.ListRefundsByE2E(context.Background(), paymentsdb.ListRefundsByE2EParams{TenantID: m.id, E2eID: &paid.EndToEndID})
			if len(rs) == 1 {
				refund = rs[0]
			}
			return err
		})
		return refund.Status == "succeeded"
	})
	if refund.Kind != "automatic" || *refund.AttemptID != attemptID || !strings.HasPrefix(refund.PspRefundID, "R") {
		e.t.Errorf("refund = %+v", refund)
	}
	paid = e.pixOf(m, paid.Txid)
	if len(paid.Devolucoes) != 1 || paid.Devolucoes[0].ID != refund.PspRefundID || paid.Devolucoes[0].Valor != valor ||
		paid.Devolucoes[0].Natureza != "ORIGINAL" || paid.Devolucoes[0].Status != "DEVOLVIDO" {
		e.t.Errorf("PSP devoluções = %+v, want one %s ORIGINAL DEVOLVIDO", paid.Devolucoes, valor)
	}
	alerts, err := e.client.ListAlerts(m.ctx, connect.NewRequest(&paymentsv1.ListAlertsRequest{}))
	if err != nil {
		e.t.Fatal(err)
	}
	if len(alerts.Msg.GetAlerts()) != 1 || alerts.Msg.GetAlerts()[0].GetKind() != kind || alerts.Msg.GetAlerts()[0].GetAttemptId() != attemptID ||
		!strings.Contains(alerts.Msg.GetAlerts()[0].GetMessage(), "devolvido automaticamente") {
		e.t.Errorf("alerts = %v", alerts.Msg.GetAlerts())
	}
}

func TestPixExpiryRemovesTheCharge(t *testing.T) {
	e := newEnv(t)
	e.setHandler(e.a.id, &tenantsv1.PaymentHandler{Id: "pix", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`,
		ConfigJson: `{"environment":"sandbox","expiration_seconds":600}`, Environment: "sandbox"})
	now := e.clock.Now().Truncate(time.Second)
	a := e.start(e.a, startReq(e.a, "chk_exp", 12345, pixInstrument))
	txid := pixDisplayOf(t, a).Txid
	if !a.GetExpiresAt().AsTime().Equal(now.Add(600*time.Second)) || e.simCharge(e.a, txid).Calendario.Expiracao != 600 {
		t.Fatalf("expiration_seconds 600: expires_at %v (now %v), cob expiracao %d", a.GetExpiresAt().AsTime(), now, e.simCharge(e.a, txid).Calendario.Expiracao)
	}
	// Before the first poll the sweep leaves it alone; each poll finds it
	// unpaid and comes back two minutes later, and the last one at the
	// expiry itself (10 minutes: at 2, 4, 6 and 8, then 10).
	if n := e.sweep(e.svc.SweepResolves); n != 0 || e.resolveAfter(e.a, a.GetId()) == nil {
		t.Fatalf("sweep before the first poll: %d settled", n)
	}
	for i := range 4 {
		e.clock.Add(2 * time.Minute)
		if n := e.sweep(e.svc.SweepResolves); n != 0 {
			t.Fatalf("poll %d settled %d", i+1, n)
		}
		want := e.clock.Now().Add(2 * time.Minute)
		if i == 3 {
			want = a.GetExpiresAt().AsTime() // the last look is at the expiry itself
		}
		if got := e.resolveAfter(e.a, a.GetId()); got == nil || got.Sub(want).Abs() > time.Microsecond {
			t.Fatalf("after poll %d: resolve_after %v, want %v", i+1, got, want)
		}
	}
	if got := e.get(e.a, a.GetId()); got.GetStatus() != statusPending || e.simCharge(e.a, txid).Status != pix.StatusAtiva {
		t.Fatalf("before expiry: %v", got.GetStatus())
	}
	e.clock.Add(2 * time.Minute)
	if n := e.sweep(e.svc.SweepResolves); n != 1 {
		t.Fatalf("sweep at expiry settled %d, want 1", n)
	}
	e.waitStatus(e.a, a.GetId(), statusExpired)
	if got := e.resolveAfter(e.a, a.GetId()); got != nil {
		t.Errorf("resolve_after after expiry = %v, want NULL", got)
	}
	if c := e.simCharge(e.a, txid); c.Status != pix.StatusRemovidaRecebedor {
		t.Errorf("PSP charge %s, want removed", c.Status)
	}
	e.eventually(10*time.Second, "announced to checkout", func() bool { return len(e.settled(a.GetId())) == 1 })
	// The removed charge can no longer be paid.
	_, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()}))
	if got := codeOf(err); got != "failed_precondition/charge_not_active" {
		t.Errorf("paying a removed charge: %s", got)
	}
}

func TestLostWebhooksAreCaughtByPollingAndExpiry(t *testing.T) {
	e := newEnv(t)
	// The PSP loses every notification.
	e.start(e.a, startReq(e.a, "chk_setup", 100, pixInstrument))
	e.sim.SetFaults("drop_webhook=1")
	pay := func(a *paymentsv1.Attempt) {
		if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
			t.Fatal(err)
		}
	}
	polled := e.start(e.a, startReq(e.a, "chk_lost_1", 4200, pixInstrument))
	expired := e.start(e.a, startReq(e.a, "chk_lost_2", 4200, pixInstrument))
	pay(polled)
	e.deliveries(e.a, "dropped", 1)
	if e.get(e.a, polled.GetId()).GetStatus() != statusPending || e.receipts(e.a) != 0 {
		t.Fatalf("without webhooks: %v, %d receipts", e.get(e.a, polled.GetId()).GetStatus(), e.receipts(e.a))
	}
	// The sweep's poll (two minutes after the start, then every two
	// minutes while pending) asks the PSP: paid, so the payment is
	// applied; the two unpaid attempts stay pending.
	e.clock.Add(2*time.Minute + time.Second)
	if n := e.sweep(e.svc.SweepResolves); n != 1 {
		t.Fatalf("first poll settled %d, want 1", n)
	}
	e.waitStatus(e.a, polled.GetId(), statusSucceeded)
	if got := e.get(e.a, expired.GetId()).GetStatus(); got != statusPending {
		t.Fatalf("unpaid attempt after the poll: %v", got)
	}
	// Paid later, and its webhook lost too. At the expiry the sweep
	// removes the charge first: the PSP says CONCLUIDA, paid in time, so
	// the payment wins; chk_setup's unpaid attempt expires.
	pay(expired)
	e.deliveries(e.a, "dropped", 2)
	e.clock.Add(31 * time.Minute)
	if n := e.sweep(e.svc.SweepResolves); n != 2 {
		t.Fatalf("sweep at expiry settled %d, want 2", n)
	}
	e.waitStatus(e.a, expired.GetId(), statusSucceeded)
	if n := e.receipts(e.a); n != 2 {
		t.Errorf("%d receipts, want 2 (recorded from the PSP's answers)", n)
	}
	for _, a := range []*paymentsv1.Attempt{polled, expired} {
		e.eventually(10*time.Second, "announced to checkout", func() bool { return len(e.settled(a.GetId())) == 1 })
	}
}

// Cancel and pay race: the PSP serialises them on the charge, so exactly
// one wins, and the charge's state agrees with the attempt's.
func TestCancelVersusPayRace(t *testing.T) {
	e := newEnv(t)
	wins := map[paymentsv1.AttemptStatus]int{}
	for i := range 20 {
		a := e.start(e.a, startReq(e.a, "chk_race_"+ids.New("x"), 1000+int64(i), pixInstrument))
		txid := pixDisplayOf(t, a).Txid
		var cancelResp *paymentsv1.Attempt
		var payErr, cancelErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, payErr = e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()}))
		})
		wg.Go(func() {
			r, err := e.client.CancelPayment(e.a.ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: a.GetId()}))
			cancelErr = err
			if err == nil {
				cancelResp = r.Msg.GetAttempt()
			}
		})
		wg.Wait()
		if cancelErr != nil {
			t.Fatalf("#%d cancel: %v", i, cancelErr)
		}
		c := e.simCharge(e.a, txid)
		switch cancelResp.GetStatus() {
		case statusCanceled:
			if codeOf(payErr) != "failed_precondition/charge_not_active" || c.Status != pix.StatusRemovidaRecebedor {
				t.Fatalf("#%d canceled, but pay = %v and charge %s", i, payErr, c.Status)
			}
		case statusSucceeded:
			if payErr != nil || c.Status != pix.StatusConcluida {
				t.Fatalf("#%d succeeded, but pay = %v and charge %s", i, payErr, c.Status)
			}
			// The webhook arrives later and changes nothing.
			e.eventually(10*time.Second, "receipt matched", func() bool {
				var st string
				e.scalar(e.a, &st, `SELECT count(*) FILTER (WHERE status <> 'matched') || '/' || count(*) FROM payments.pix_receipts WHERE txid = $1`, txid)
				return st == "0/1"
			})
		default:
			t.Fatalf("#%d: cancel answered %v", i, cancelResp.GetStatus())
		}
		wins[cancelResp.GetStatus()]++
		if got := e.get(e.a, a.GetId()); got.GetStatus() != cancelResp.GetStatus() {
			t.Fatalf("#%d: attempt %v after cancel answered %v", i, got.GetStatus(), cancelResp.GetStatus())
		}
	}
	alerts, _ := e.client.ListAlerts(e.a.ctx, connect.NewRequest(&paymentsv1.ListAlertsRequest{}))
	var refunds int
	e.scalar(e.a, &refunds, `SELECT count(*) FROM payments.refunds`)
	if len(alerts.Msg.GetAlerts()) != 0 || refunds != 0 {
		t.Errorf("race produced %d alerts and %d refunds", len(alerts.Msg.GetAlerts()), refunds)
	}
	t.Logf("cancel vs pay: %d canceled, %d succeeded", wins[statusCanceled], wins[statusSucceeded])
}

// PSP notifications are authenticated by the client certificate the PSP
// presents on the webhook listener: no certificate, one from another CA,
// or one of the PSP's CA that is not its webhook certificate (a
// merchant's own) is refused before anything is read or stored.
func TestWebhookAuthentication(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_sig", 12345, pixInstrument))
	hook := e.hook(e.a, "pix")
	body := []byte(`{"pix":[{"endToEndId":"E99999999202601011200ABCDEFGHIJK","txid":"` + pixDisplayOf(t, a).Txid + `","valor":"123.45","horario":"2026-01-01T12:00:00Z"}]}`)
	psp, _ := e.sim.CA.IssueClient(pspsim.WebhookCertCN, time.Hour)
	forger, _ := pki.NewCA("forger", time.Hour)
	forgedCert, _ := forger.IssueClient(pspsim.WebhookCertCN, time.Hour)
	merchantCert, _ := e.sim.CA.IssueClient("pspsim_01outraconta", time.Hour)
	post := func(host, hookID string, cert *pki.Issued, b []byte) int {
		return e.postWebhook(host, hookID, cert, b)
	}
	for _, c := range []struct {
		name, host, hook string
		cert             *pki.Issued
		body             []byte
		want             int
	}{
		{"no certificate", e.a.host, hook, nil, body, 401},
		{"another CA", e.a.host, hook, forgedCert, body, 401},
		{"a merchant's certificate", e.a.host, hook, merchantCert, body, 401},
		{"unknown hook", e.a.host, "whk_00000000000000000000000000", psp, body, 404},
		{"other tenant's host", e.b.host, hook, psp, body, 404},
		{"too large", e.a.host, hook, psp, bytes.Repeat([]byte(" "), 1<<20+1), 413},
		{"malformed", e.a.host, hook, psp, []byte(`{"pix":[{"endToEndId":"short"}]}`), 400},
	} {
		if got := post(c.host, c.hook, c.cert, c.body); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if n := e.receipts(e.a); n != 0 {
		t.Fatalf("%d receipts stored from rejected webhooks", n)
	}
	// The same body with the PSP's certificate is stored (both paths),
	// once. It is a forgery all the same (the PSP never saw this Pix):
	// only the PSP's own answer can settle anything.
	if got := post(e.a.host, hook, psp, body); got != 200 {
		t.Fatalf("authenticated webhook: %d", got)
	}
	if got := post(e.a.host, hook, psp, body); got != 200 {
		t.Fatalf("authenticated duplicate: %d", got)
	}
	if n := e.receipts(e.a); n != 1 {
		t.Errorf("%d receipts, want 1", n)
	}
	// It names a Pix the PSP never saw: the reconciler trusts the PSP and
	// leaves the attempt alone. The webhook's request tried once; the
	// sweep tries again 1, 2, 4 and 8 minutes later, and the fifth try
	// leaves the receipt unconfirmed and alerts the merchant.
	const forged = "E99999999202601011200ABCDEFGHIJK"
	for try := 1; try <= 4; try++ {
		rec := e.receipt(e.a, forged)
		if rec.Status != "received" || rec.ReconcileTries != int32(try) || rec.ReconcileAfter == nil ||
			rec.ReconcileAfter.Sub(e.clock.Now().Add(time.Minute<<(try-1))).Abs() > time.Microsecond {
			t.Fatalf("after try %d: %s, %d tries, next %v (now %v)", try, rec.Status, rec.ReconcileTries, rec.ReconcileAfter, e.clock.Now())
		}
		if n := e.sweep(e.svc.SweepReceipts); n != 0 {
			t.Fatalf("sweep before it is due decided %d", n)
		}
		e.clock.Add(time.Minute << (try - 1))
		n := e.sweep(e.svc.SweepReceipts)
		if want := map[bool]int{true: 1, false: 0}[try == 4]; n != want {
			t.Fatalf("sweep for try %d decided %d, want %d", try+1, n, want)
		}
	}
	if rec := e.receipt(e.a, forged); rec.Status != "unconfirmed" || rec.ReconcileTries != 4 {
		t.Fatalf("after five tries: %s, %d failed tries", rec.Status, rec.ReconcileTries)
	}
	if got := e.get(e.a, a.GetId()).GetStatus(); got != statusPending {
		t.Errorf("attempt after a forged notification: %v", got)
	}
	alerts, err := e.client.ListAlerts(e.a.ctx, connect.NewRequest(&paymentsv1.ListAlertsRequest{}))
	if err != nil || len(alerts.Msg.GetAlerts()) != 1 || alerts.Msg.GetAlerts()[0].GetKind() != "pix_unconfirmed" {
		t.Fatalf("alerts: %v %v", alerts.Msg.GetAlerts(), err)
	}

	// A Pix naming no charge of ours (its txid matches no attempt): the
	// merchant's account takes Pix from other channels too, so it is
	// neither kept nor returned: unconfirmed at the first try, with an
	// alert, and nothing refunded.
	const stranger = "E99999999202601011200ZZZZZZZZZZZ"
	strange := []byte(`{"pix":[{"endToEndId":"` + stranger + `","txid":"naoehnosso0000000000000000000","valor":"9.99","horario":"2026-01-01T12:00:00Z"}]}`)
	if got := post(e.a.host, hook, psp, strange); got != 200 {
		t.Fatalf("signed webhook for a stranger: %d", got)
	}
	if rec := e.receipt(e.a, stranger); rec.Status != "unconfirmed" || !strings.Contains(rec.Note, `"naoehnosso0000000000000000000" não é de uma cobrança`) || rec.AttemptID != nil {
		t.Fatalf("stranger: %s %q, attempt %v", rec.Status, rec.Note, rec.AttemptID)
	}
	alerts, err = e.client.ListAlerts(e.a.ctx, connect.NewRequest(&paymentsv1.ListAlertsRequest{}))
	if err != nil || len(alerts.Msg.GetAlerts()) != 2 {
		t.Fatalf("alerts after the stranger: %v %v", alerts.Msg.GetAlerts(), err)
	}
	e.q(e.a, func(q *paymentsdb.Queries) error {
		e2e := stranger
		refunds, err := q.ListRefundsByE2E(context.Background(), paymentsdb.ListRefundsByE2EParams{TenantID: e.a.id, E2eID: &e2e})
		if err != nil || len(refunds) != 0 {
			t.Errorf("refunds for a Pix the PSP does not know: %v %v", refunds, err)
		}
		return nil
	})
}

// A receipt stored by a process that died before reconciling it (or
// whose PSP did not answer) is reconciled by the resolve sweep once due.
func TestReceiptSweepReconcilesWhatTheWebhookDidNot(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_rec_sweep", 4200, pixInstrument))
	// The PSP's notification is lost ...
	e.sim.SetFaults("drop_webhook=1")
	if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
		t.Fatal(err)
	}
	e.deliveries(e.a, "dropped", 1)
	// ... after the receipt was stored, as a webhook request cut short
	// after its insert leaves it.
	p := e.pixOf(e.a, pixDisplayOf(t, a).Txid)
	hook := e.hook(e.a, "pix")
	due := e.clock.Now().Add(time.Minute)
	e.q(e.a, func(q *paymentsdb.Queries) error {
		_, err := q.InsertReceipt(context.Background(), paymentsdb.InsertReceiptParams{TenantID: e.a.id, E2eID: p.EndToEndID, HookID: hook,
			HandlerID: "pix", Txid: p.Txid, Amount: 4200, Horario: p.Horario, Raw: []byte(`{}`), ReconcileAfter: &due})
		return err
	})
	if n := e.sweep(e.svc.SweepReceipts); n != 0 || e.get(e.a, a.GetId()).GetStatus() != statusPending {
		t.Fatalf("before it is due: %d decided", n)
	}
	e.clock.Add(time.Minute)
	if n := e.sweep(e.svc.SweepReceipts); n != 1 {
		t.Fatalf("due: %d decided, want 1", n)
	}
	e.waitStatus(e.a, a.GetId(), statusSucceeded)
	if rec := e.receipt(e.a, p.EndToEndID); rec.Status != "matched" || rec.AttemptID == nil || *rec.AttemptID != a.GetId() {
		t.Errorf("receipt %s for %v", rec.Status, rec.AttemptID)
	}
	e.eventually(10*time.Second, "announced to checkout", func() bool { return len(e.settled(a.GetId())) == 1 })
}

func TestCrossTenantAccessIsNotFound(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_cross", 5000, pixInstrument))
	if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(e.a, a.GetId(), statusSucceeded)
	b := e.b.ctx
	_, err := e.client.GetPayment(b, connect.NewRequest(&paymentsv1.GetPaymentRequest{AttemptId: a.GetId()}))
	if codeOf(err) != "not_found/attempt_not_found" {
		t.Errorf("B gets A's attempt: %s", codeOf(err))
	}
	_, err = e.client.CancelPayment(b, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: a.GetId()}))
	if codeOf(err) != "not_found/attempt_not_found" {
		t.Errorf("B cancels A's attempt: %s", codeOf(err))
	}
	_, err = e.client.RefundPayment(b, connect.NewRequest(&paymentsv1.RefundPaymentRequest{AttemptId: a.GetId(), RefundId: "rf_1", Amount: 100}))
	if codeOf(err) != "not_found/attempt_not_found" {
		t.Errorf("B refunds A's attempt: %s", codeOf(err))
	}
	_, err = e.client.SimulatePixPayment(b, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()}))
	if codeOf(err) != "not_found/attempt_not_found" {
		t.Errorf("B pays A's attempt: %s", codeOf(err))
	}
	// B reusing A's attempt id starts B's own attempt: ids are per tenant.
	alerts, _ := e.client.ListAlerts(b, connect.NewRequest(&paymentsv1.ListAlertsRequest{}))
	if len(alerts.Msg.GetAlerts()) != 0 {
		t.Errorf("B sees alerts: %v", alerts.Msg.GetAlerts())
	}
	if got := e.get(e.a, a.GetId()); got.GetStatus() != statusSucceeded || got.GetRefundedAmount() != 0 {
		t.Errorf("A's attempt changed: %v", got)
	}
}

// The resolve sweep's scope reads every tenant's attempts and Pix
// receipts (ids to act on) and can change none; a tenant's own scope
// sees only its rows.
func TestPaymentsSweepScopeReadsOnly(t *testing.T) {
	e := newEnv(t)
	for _, m := range []merchant{e.a, e.b} {
		a := e.start(m, startReq(m, "chk_scope", 1500, pixInstrument))
		if _, err := e.client.SimulatePixPayment(m.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
			t.Fatal(err)
		}
		e.waitStatus(m, a.GetId(), statusSucceeded)
	}
	ctx := context.Background()
	var attempts, receipts int
	var changed int64
	err := pgstore.InPaymentsSweep(ctx, e.db.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments.attempts), (SELECT count(*) FROM payments.pix_receipts)`).Scan(&attempts, &receipts); err != nil {
			return err
		}
		for _, q := range []string{
			`UPDATE payments.attempts SET resolve_after = now()`,
			`UPDATE payments.pix_receipts SET reconcile_after = now()`,
			`DELETE FROM payments.pix_receipts`,
		} {
			tag, err := tx.Exec(ctx, q)
			if err != nil {
				return err
			}
			changed += tag.RowsAffected()
		}
		return nil
	})
	if err != nil || attempts != 2 || receipts != 2 || changed != 0 {
		t.Fatalf("in the sweep scope: %d attempts, %d receipts (want 2 and 2), %d rows changed (want 0), %v", attempts, receipts, changed, err)
	}
	err = pgstore.InTenant(e.a.ctx, e.db.Pool, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments.attempts), (SELECT count(*) FROM payments.pix_receipts)`).Scan(&attempts, &receipts)
	})
	if err != nil || attempts != 1 || receipts != 1 {
		t.Fatalf("in tenant A's scope: %d attempts, %d receipts (want 1 and 1), %v", attempts, receipts, err)
	}
}

// Behind a TLS-terminating proxy the PSP's certificate arrives in the
// header the proxy was configured to set (URL-escaped PEM, as nginx's
// $ssl_client_escaped_cert): read only when the route is told to trust
// that header, and checked like a handshake's.
func TestWebhookThroughATrustedProxy(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.a, startReq(e.a, "chk_proxy", 4200, pixInstrument))
	hook := e.hook(e.a, "pix")
	body := []byte(`{"pix":[{"endToEndId":"E99999999202601011200PROXYPROXY1","txid":"` + pixDisplayOf(t, a).Txid + `","valor":"42.00","horario":"2026-01-01T12:00:00Z"}]}`)
	psp, _ := e.sim.CA.IssueClient(pspsim.WebhookCertCN, time.Hour)
	forger, _ := pki.NewCA("forger", time.Hour)
	forged, _ := forger.IssueClient(pspsim.WebhookCertCN, time.Hour)
	serve := func(header string) string {
		mux := http.NewServeMux()
		for pattern, h := range paymentshttp.Routes(e.client, paymentshttp.Options{ClientCertHeader: header}) {
			mux.Handle(pattern, h)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mux.ServeHTTP(w, r.WithContext(tenancy.With(r.Context(), e.a.id)))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	post := func(base string, cert *pki.Issued) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/pix/"+hook+"/pix", bytes.NewReader(body))
		if cert != nil {
			req.Header.Set("X-Client-Cert", url.QueryEscape(string(cert.CertPEM)))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	untrusting, trusting := serve(""), serve("X-Client-Cert")
	// Without the option, the header is anybody's: ignored.
	if got := post(untrusting, psp); got != 401 {
		t.Errorf("header on a route that does not trust it: %d, want 401", got)
	}
	if got := post(trusting, nil); got != 401 {
		t.Errorf("no header: %d, want 401", got)
	}
	if got := post(trusting, forged); got != 401 {
		t.Errorf("a certificate of another CA in the header: %d, want 401", got)
	}
	if n := e.receipts(e.a); n != 0 {
		t.Fatalf("%d receipts from refused notifications", n)
	}
	if got := post(trusting, psp); got != 200 {
		t.Fatalf("the PSP's certificate through the proxy: %d, want 200", got)
	}
	if n := e.receipts(e.a); n != 1 {
		t.Errorf("%d receipts, want 1", n)
	}
}

// A production Pix handler without PSP settings takes no payment: the
// attempt fails with a message for the buyer, the merchant gets an alert
// saying what to configure, nothing reaches a PSP; TestHandler says
// not_configured. A sandbox handler's test registers its webhook.
func TestHandlerWithoutSettings(t *testing.T) {
	e := newEnv(t)
	r, err := e.client.TestHandler(e.a.ctx, connect.NewRequest(&paymentsv1.TestHandlerRequest{HandlerId: "pix", BaseUrl: e.a.baseURL}))
	if err != nil || !r.Msg.GetOk() || r.Msg.GetCode() != "ok" || !strings.HasPrefix(r.Msg.GetWebhookUrl(), "https://loja-a.localhost:"+e.tlsPort+"/webhooks/pix/whk_") {
		t.Fatalf("sandbox handler test: %+v %v", r.Msg, err)
	}
	e.setHandler(e.a.id, &tenantsv1.PaymentHandler{Id: "pix", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`,
		ConfigJson: `{"pix_key":"loja@example.com"}`, Environment: "production"})
	e.eventually(5*time.Second, "the handler change seen", func() bool {
		r, err = e.client.TestHandler(e.a.ctx, connect.NewRequest(&paymentsv1.TestHandlerRequest{HandlerId: "pix", BaseUrl: e.a.baseURL}))
		return err == nil && r.Msg.GetCode() == "not_configured"
	})
	if r.Msg.GetOk() || !strings.Contains(r.Msg.GetMessage(), "não tem PSP configurado") {
		t.Fatalf("production handler test: %+v", r.Msg)
	}
	before := e.simCharges(e.a)
	a := e.start(e.a, startReq(e.a, "chk_no_psp", 5000, pixInstrument))
	if a.GetStatus() != statusFailed || a.GetFailureCode() != "payment_failed" || !strings.Contains(a.GetFailureMessage(), "problema de configuração") {
		t.Fatalf("attempt on an unconfigured production handler: %v %q", a.GetStatus(), a.GetFailureMessage())
	}
	if n := e.simCharges(e.a); n != before {
		t.Errorf("charges at the PSP %d → %d", before, n)
	}
	alerts, err := e.client.ListAlerts(e.a.ctx, connect.NewRequest(&paymentsv1.ListAlertsRequest{}))
	if err != nil || len(alerts.Msg.GetAlerts()) != 1 || alerts.Msg.GetAlerts()[0].GetKind() != "psp_config" ||
		!strings.Contains(alerts.Msg.GetAlerts()[0].GetMessage(), "não tem PSP configurado") {
		t.Fatalf("alerts %v %v", alerts.Msg.GetAlerts(), err)
	}
}

// A Pix no notification brought is found by listing what the account
// received (GET /pix?inicio&fim), reconciled from the PSP's own answer and
// settled; a Pix the account received from elsewhere (a txid that is
// none of ours) is left alone.
func TestMissedNotificationsFoundByListing(t *testing.T) {
	e := newEnv(t)
	e.sim.SetFaults("drop_webhook=1")
	a := e.start(e.a, startReq(e.a, "chk_listed", 3100, pixInstrument))
	if _, err := e.client.SimulatePixPayment(e.a.ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: a.GetId()})); err != nil {
		t.Fatal(err)
	}
	// Another channel of the merchant's account: a Pix with a txid of its own.
	var other pspsim.Pix
	if st, b := e.sim.Control(http.MethodPost, "/sim/v1/accounts/"+e.account(e.a, "pix")+"/pix",
		pspsim.OrphanPixRequest{Valor: "9.90", Txid: "outrocanaldaloja0000000000001"}, &other); st != http.StatusCreated {
		t.Fatalf("a Pix from another channel: %d %s", st, b)
	}
	e.deliveries(e.a, "dropped", 2)
	if e.receipts(e.a) != 0 || e.get(e.a, a.GetId()).GetStatus() != statusPending {
		t.Fatal("a dropped notification was seen")
	}
	// The listing (not the charge's poll, which is not due yet).
	if n := e.sweep(e.svc.SweepPixLists); n != 1 {
		t.Fatalf("listed %d handlers, want 1", n)
	}
	if n := e.receipts(e.a); n != 1 {
		t.Fatalf("%d receipts after the listing, want 1 (ours only)", n)
	}
	if n := e.sweep(e.svc.SweepReceipts); n != 1 {
		t.Fatalf("receipts decided %d, want 1", n)
	}
	e.waitStatus(e.a, a.GetId(), statusSucceeded)
	var otherReceipts int
	e.scalar(e.a, &otherReceipts, `SELECT count(*) FROM payments.pix_receipts WHERE e2e_id = $1`, other.EndToEndID)
	if otherReceipts != 0 {
		t.Errorf("the other channel's Pix was taken")
	}
	// Listed again only after pixListEvery.
	if n := e.sweep(e.svc.SweepPixLists); n != 0 {
		t.Errorf("listed again at once: %d", n)
	}
	e.clock.Add(11 * time.Minute)
	if n := e.sweep(e.svc.SweepPixLists); n != 1 {
		t.Errorf("after 11 minutes: listed %d, want 1", n)
	}
	var refunds int
	e.scalar(e.a, &refunds, `SELECT count(*) FROM payments.refunds`)
	if refunds != 0 {
		t.Errorf("%d refunds", refunds)
	}
}

// A Pix attempt that ended while its charge still stood at the PSP (a
// cancel that found no charge yet, then the creation landed; a removal
// that failed) is taken by the resolve sweep once more: an unpaid charge
// is removed, a paid one refunded — even with its notification lost.
func TestEndedAttemptsChargeIsEndedToo(t *testing.T) {
	e := newEnv(t)
	e.sim.SetFaults("drop_webhook=1")
	paid := e.start(e.a, startReq(e.a, "chk_ended_paid", 2500, pixInstrument))
	unpaid := e.start(e.a, startReq(e.a, "chk_ended_unpaid", 2600, pixInstrument))
	// The bad interleaving, forced: both attempts canceled while their
	// charges stay ATIVA at the PSP.
	for _, a := range []*paymentsv1.Attempt{paid, unpaid} {
		e.scalarExec(`UPDATE payments.attempts SET status = 'canceled' WHERE id = $1`, a.GetId())
	}
	e.sim.Pay(e.account(e.a, "pix"), pixDisplayOf(t, paid).Txid, "") // the buyer's bank pays the charge that still stands
	e.deliveries(e.a, "dropped", 1)
	e.clock.Add(2*time.Minute + time.Second)
	if n := e.sweep(e.svc.SweepResolves); n != 2 {
		t.Fatalf("the sweep took %d ended attempts, want 2", n)
	}
	if c := e.simCharge(e.a, pixDisplayOf(t, unpaid).Txid); c.Status != pix.StatusRemovidaRecebedor {
		t.Errorf("the unpaid charge is %s, want removed", c.Status)
	}
	e.expectAutoRefund(e.a, paid.GetId(), "pix_attempt_not_pending", "25.00")
	for _, a := range []*paymentsv1.Attempt{paid, unpaid} {
		if got := e.get(e.a, a.GetId()); got.GetStatus() != statusCanceled {
			t.Errorf("%s became %v", a.GetId(), got.GetStatus())
		}
		if r := e.resolveAfter(e.a, a.GetId()); r != nil {
			t.Errorf("%s still due at %v", a.GetId(), r)
		}
	}
}
