package payments_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// pspBeforeSend, when set, sees every PSP request before it is sent (the
// tests' transport wrapper, countRequests); an error is the transport's.
var pspBeforeSend atomic.Pointer[func(*http.Request) error]

// holdChargeCreation holds the service's PUT /cob/{txid} requests until
// release is closed; held is told of each one as it is held. While
// failRemoval (if given) is true, a PATCH of a charge fails as an
// unreachable PSP would. The hook is removed when the test ends.
func holdChargeCreation(t *testing.T, failRemoval *atomic.Bool) (held <-chan string, release func()) {
	t.Helper()
	heldc := make(chan string, 4)
	gate := make(chan struct{})
	hook := func(r *http.Request) error {
		if !strings.Contains(r.URL.Path, "/cob/") {
			return nil
		}
		switch {
		case r.Method == http.MethodPatch && failRemoval != nil && failRemoval.Load():
			return errors.New("the PSP is unreachable")
		case r.Method != http.MethodPut:
			return nil
		}
		heldc <- r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		select {
		case <-gate:
			return nil
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	pspBeforeSend.Store(&hook)
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() { release(); pspBeforeSend.Store(nil) })
	return heldc, release
}

// startInBackground runs StartPayment(req) while the test goes on; wait
// returns its answer.
func startInBackground(e *env, req *paymentsv1.StartPaymentRequest) (wait func() (*paymentsv1.Attempt, error)) {
	var started *paymentsv1.Attempt
	var err error
	var wg sync.WaitGroup
	wg.Go(func() {
		var r *connect.Response[paymentsv1.StartPaymentResponse]
		if r, err = e.client.StartPayment(e.a.ctx, connect.NewRequest(req)); err == nil {
			started = r.Msg.GetAttempt()
		}
	})
	return func() (*paymentsv1.Attempt, error) { wg.Wait(); return started, err }
}

// A cancel that reaches the PSP while the completion's PUT /cob/{txid} is
// still on its way finds no charge; it must not answer canceled (the PUT
// would then create a payable charge for a canceled attempt): it is
// refused as retryable, the attempt stays pending, and once the charge
// is created a cancel removes it.
func TestCancelWhileChargeIsBeingCreatedIsRetryable(t *testing.T) {
	e := newEnv(t)
	e.start(e.a, startReq(e.a, "chk_warm", 1500, pixInstrument)) // the handler's sandbox account and hook

	held, release := holdChargeCreation(t, nil)
	req := startReq(e.a, "chk_creating", 2700, pixInstrument)
	wait := startInBackground(e, req)
	txid := <-held

	_, err := e.client.CancelPayment(e.a.ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: req.GetAttemptId()}))
	if got := codeOf(err); got != "unavailable/psp_unavailable" {
		t.Fatalf("cancel while the charge is being created: %s, want unavailable/psp_unavailable", got)
	}
	if got := e.get(e.a, req.GetAttemptId()); got.GetStatus() != paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING || got.GetDisplayJson() != "" && got.GetDisplayJson() != "{}" {
		t.Fatalf("after the refused cancel: %v, display %q", got.GetStatus(), got.GetDisplayJson())
	}

	release()
	started, startErr := wait()
	if startErr != nil {
		t.Fatalf("StartPayment: %v", startErr)
	}
	if started.GetStatus() != paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING || pixDisplayOf(t, started).Txid != txid {
		t.Fatalf("StartPayment: %v, display %q (txid %s)", started.GetStatus(), started.GetDisplayJson(), txid)
	}
	if c := e.simCharge(e.a, txid); c.Status != pix.StatusAtiva {
		t.Fatalf("created charge is %s", c.Status)
	}

	r, err := e.client.CancelPayment(e.a.ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: req.GetAttemptId()}))
	if err != nil {
		t.Fatalf("cancel after the creation: %v", err)
	}
	if got := r.Msg.GetAttempt().GetStatus(); got != statusCanceled {
		t.Fatalf("cancel after the creation answered %v", got)
	}
	if c := e.simCharge(e.a, txid); c.Status != pix.StatusRemovidaRecebedor {
		t.Fatalf("charge of the canceled attempt is %s, want %s", c.Status, pix.StatusRemovidaRecebedor)
	}
	assertNoActiveCharge(e, e.a)
}

// Past the window in which its creator may still be working, a charge the
// PSP does not know was never created: the cancel answers canceled. A PUT
// still held then (it cannot be, in production: pixCreateTimeout) creates
// the charge and its creator removes it at once.
func TestCancelAfterTheCreationWindowIsFinal(t *testing.T) {
	e := newEnv(t)
	e.start(e.a, startReq(e.a, "chk_warm", 1500, pixInstrument))

	held, release := holdChargeCreation(t, nil)
	req := startReq(e.a, "chk_late", 2800, pixInstrument)
	wait := startInBackground(e, req)
	txid := <-held
	e.clock.Add(46 * time.Second) // past pixCreateWindow (45 s)

	r, err := e.client.CancelPayment(e.a.ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: req.GetAttemptId()}))
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if got := r.Msg.GetAttempt().GetStatus(); got != statusCanceled {
		t.Fatalf("cancel answered %v", got)
	}
	release()
	started, startErr := wait()
	if startErr != nil || started.GetStatus() != statusCanceled {
		t.Fatalf("StartPayment: %v, %v", started.GetStatus(), startErr)
	}
	if c := e.simCharge(e.a, txid); c.Status != pix.StatusRemovidaRecebedor {
		t.Fatalf("charge created after the cancel is %s, want %s", c.Status, pix.StatusRemovidaRecebedor)
	}
	assertNoActiveCharge(e, e.a)
}

func assertNoActiveCharge(e *env, m merchant) {
	e.t.Helper()
	for _, c := range e.ledger(m).Charges {
		if c.Status == pix.StatusAtiva && !strings.Contains(c.SolicitacaoPagador, "chk_warm") {
			e.t.Fatalf("charge %s (%s) is still payable", c.Txid, c.SolicitacaoPagador)
		}
	}
}

// A charge created after its attempt was canceled is removed by its
// creator; when the PSP does not confirm that removal, the resolve sweep
// takes the attempt at once (not at its next poll) and removes it.
func TestChargeCreatedAfterCancelIsRemovedBySweepWhenRemovalFails(t *testing.T) {
	e := newEnv(t)
	e.start(e.a, startReq(e.a, "chk_warm", 1500, pixInstrument))

	var failRemoval atomic.Bool
	held, release := holdChargeCreation(t, &failRemoval)

	req := startReq(e.a, "chk_unremoved", 2900, pixInstrument)
	wait := startInBackground(e, req)
	txid := <-held
	e.clock.Add(46 * time.Second) // past pixCreateWindow: the cancel takes "not found" as never created
	r, err := e.client.CancelPayment(e.a.ctx, connect.NewRequest(&paymentsv1.CancelPaymentRequest{AttemptId: req.GetAttemptId()}))
	if err != nil || r.Msg.GetAttempt().GetStatus() != statusCanceled {
		t.Fatalf("cancel: %v, %v", r.Msg.GetAttempt().GetStatus(), err)
	}
	failRemoval.Store(true)
	release()
	started, startErr := wait()
	if startErr != nil || started.GetStatus() != statusCanceled {
		t.Fatalf("StartPayment: %v, %v", started.GetStatus(), startErr)
	}
	if c := e.simCharge(e.a, txid); c.Status != pix.StatusAtiva {
		t.Fatalf("charge is %s, want %s (its removal failed)", c.Status, pix.StatusAtiva)
	}
	if got := e.resolveAfter(e.a, req.GetAttemptId()); got == nil || got.After(e.clock.Now()) {
		t.Fatalf("resolve_after %v, want due now (%v)", got, e.clock.Now())
	}

	failRemoval.Store(false)
	if n := e.sweep(e.svc.SweepResolves); n != 1 {
		t.Fatalf("the sweep took %d attempts, want 1", n)
	}
	if c := e.simCharge(e.a, txid); c.Status != pix.StatusRemovidaRecebedor {
		t.Fatalf("after the sweep the charge is %s, want %s", c.Status, pix.StatusRemovidaRecebedor)
	}
	if got := e.resolveAfter(e.a, req.GetAttemptId()); got != nil {
		t.Fatalf("still due at %v", got)
	}
	assertNoActiveCharge(e, e.a)
}
