package web

import (
	"net/http"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// simulatePayment is the sandbox "Simular pagamento" button: it pays the
// Pix the page showed at the PSP simulator, through the payments service, then
// sends the buyer back to the page (303), which shows the result.
func (w *Web) simulatePayment(rw http.ResponseWriter, r *http.Request) {
	tenant, ok := w.tenantOf(r)
	if !ok {
		w.notFound(rw, r)
		return
	}
	id := r.PathValue("id")
	if !ids.HasPrefix(id, "chk") {
		w.notFound(rw, r)
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil || !w.csrfValid(r, tenant, id, r.PostForm.Get("csrf_token")) {
		w.errorPage(rw, r, http.StatusForbidden)
		return
	}
	// Refuse before any lookup when this deployment never simulates.
	if w.opts.Environment == EnvironmentProduction {
		w.errorPage(rw, r, http.StatusForbidden)
		return
	}
	ctx := r.Context()
	c, err := w.loadCheckout(ctx, id)
	if err != nil {
		w.errorPage(rw, r, w.httpStatus(r, err))
		return
	}
	p := findPix(c)
	w.fillFromAttempt(ctx, c, p)
	var m merchantInfo
	if w.opts.Environment == "" {
		m = w.merchant(ctx, tenant)
	}
	if !w.sandbox(p, m) {
		w.errorPage(rw, r, http.StatusForbidden)
		return
	}
	back := "/checkout/" + id
	// Only the Pix the page showed is paid: a stale page (paid, expired,
	// replaced by a new Pix) just goes back and shows what is current.
	attempt := r.PostForm.Get("attempt_id")
	if classify(c, p, w.now()) != statePixPending || p.data.AttemptID == "" || attempt != p.data.AttemptID {
		http.Redirect(rw, r, back, http.StatusSeeOther)
		return
	}
	_, err = w.opts.Payments.SimulatePixPayment(ctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: attempt}))
	switch {
	case err == nil:
	case unimplemented(err):
		w.errorPage(rw, r, http.StatusServiceUnavailable)
		return
	case apperr.IsKind(err, apperr.KindFailedPrecondition), apperr.IsKind(err, apperr.KindAlreadyExists):
		// Paid or closed meanwhile: the page shows what happened.
		http.Redirect(rw, r, back, http.StatusSeeOther)
		return
	default:
		w.errorPage(rw, r, w.httpStatus(r, err))
		return
	}
	w.log.InfoContext(ctx, "web: simulated Pix payment", "tenant_id", tenant, "checkout_id", id, "attempt_id", attempt)
	http.Redirect(rw, r, back+"?simulado=1", http.StatusSeeOther)
}
