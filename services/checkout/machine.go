package checkout

import (
	"slices"

	"github.com/bcpdev/bcp/internal/apperr"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// The checkout's status machine and the money path through it. Every
// write of a session is one of these transitions, one statement guarded
// by the session's version (store.go); move refuses any other. The
// payment attempt's own statuses are the payments service's
// (services/payments/machine.go); outcomes below says what each does here.
//
//	transition  from                                      to                     written by
//	build       (new) incomplete requires_escalation       incomplete             create, update
//	            ready_for_complete                          requires_escalation
//	                                                        ready_for_complete
//	refresh     ready_for_complete complete_in_progress     incomplete             complete found the catalog changed
//	                                                        requires_escalation    (nothing charged, stock not taken)
//	                                                        ready_for_complete
//	claim       ready_for_complete                          complete_in_progress   complete: the attempt id is on the row
//	await       complete_in_progress                        complete_in_progress   attempt pending (Pix to pay, card being confirmed)
//	pay         complete_in_progress requires_escalation    completed              attempt succeeded: the order exists first
//	escalate    complete_in_progress                        requires_escalation    attempt requires_action (3-D Secure)
//	reopen      complete_in_progress requires_escalation    ready_for_complete     attempt failed, expired or canceled: stock back
//	cancel      incomplete requires_escalation              canceled               cancel_checkout
//	            ready_for_complete complete_in_progress
//	expire      incomplete requires_escalation              canceled               the clock (a read, an update, the sweep)
//	            ready_for_complete
//
// The fence. No money moves for a checkout unless claim wrote the
// attempt's id on its row first, and a session with an attempt on it is
// never given up (cancel, expire, reopen after a lost answer) before the
// payments service has stopped that attempt for good (CancelPayment): an
// attempt it never saw is recorded canceled, so its StartPayment charges
// nothing; a card sale is canceled at the processor by its key; a Pix
// charge is removed at the PSP. If the money had already moved, the
// answer says so and completion wins: the session is settled (pay) and
// the cancel returns it completed. A closed session also fences its stock
// (ReleaseStock with close): a reservation racing the close takes
// nothing. So a canceled checkout never has an order or money kept, and a
// completed one has exactly one order and one charge.
//
// What happens when the card processor times out during complete: the
// attempt stays pending at the payments service (its charge call may or
// may not have reached the processor), StartPayment answers Unavailable,
// and this service asks for the attempt (settle): pending → await, with
// the payment_processing message, session complete_in_progress. The
// payments resolve sweep asks the processor for the sale by its key after
// cardResolveDelay and applies its answer (approved: pay; declined or never
// made: reopen), announcing it with a checkout_settle job (SettleWorker).
// A cancel meanwhile stops the sale at the processor by that key: if it
// never charged it never will (cancel wins, canceled), if it was approved
// completion wins. A process that dies anywhere in between leaves the
// session complete_in_progress with a settle_after: the settle sweep
// settles it then, giving up (stop) an attempt the payments service never
// saw. TestMoneyPath (machine_test.go) walks each of these.
var machine = map[string]struct{ from, to []string }{
	"build":    {from: []string{"", bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusReadyForComplete}, to: openStatuses},
	"refresh":  {from: []string{bcp.StatusReadyForComplete, bcp.StatusCompleteInProgress}, to: openStatuses},
	"claim":    {from: []string{bcp.StatusReadyForComplete}, to: []string{bcp.StatusCompleteInProgress}},
	"await":    {from: []string{bcp.StatusCompleteInProgress}, to: []string{bcp.StatusCompleteInProgress}},
	"pay":      {from: []string{bcp.StatusCompleteInProgress, bcp.StatusRequiresEscalation}, to: []string{bcp.StatusCompleted}},
	"escalate": {from: []string{bcp.StatusCompleteInProgress}, to: []string{bcp.StatusRequiresEscalation}},
	"reopen":   {from: []string{bcp.StatusCompleteInProgress, bcp.StatusRequiresEscalation}, to: []string{bcp.StatusReadyForComplete}},
	"cancel": {from: []string{bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusReadyForComplete, bcp.StatusCompleteInProgress},
		to: []string{bcp.StatusCanceled}},
	"expire": {from: openStatuses, to: []string{bcp.StatusCanceled}},
}

// openStatuses are the ones an agent can still change with an update.
var openStatuses = bcp.OpenStatuses()

// outcomes is what a completion's attempt status makes of its checkout.
var outcomes = map[paymentsv1.AttemptStatus]string{
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_PENDING:            "await",
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_SUCCEEDED:          "pay",
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_REFUNDED:           "pay", // paid, then refunded from the order
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_PARTIALLY_REFUNDED: "pay",
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_REQUIRES_ACTION:    "escalate",
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_FAILED:             "reopen",
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_EXPIRED:            "reopen",
	paymentsv1.AttemptStatus_ATTEMPT_STATUS_CANCELED:           "reopen",
}

// move checks one transition of the table.
func move(name, from, to string) error {
	t, ok := machine[name]
	if ok && slices.Contains(t.from, from) && slices.Contains(t.to, to) {
		return nil
	}
	return apperr.New(apperr.KindInternal, "internal", "illegal checkout transition %s: %s → %s", name, from, to)
}

// statusFor derives the status of a priced, open checkout from its
// messages: errors needing the buyer escalate, any other error keeps it
// incomplete, and only a clean checkout is ready for completion.
func statusFor(msgs []bcp.Message) string {
	status := bcp.StatusReadyForComplete
	for _, m := range msgs {
		if m.Type != bcp.MessageError {
			continue
		}
		switch m.Severity {
		case bcp.SeverityRequiresBuyerInput, bcp.SeverityRequiresBuyerReview:
			return bcp.StatusRequiresEscalation
		default:
			status = bcp.StatusIncomplete
		}
	}
	return status
}
