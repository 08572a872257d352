package checkout

import "github.com/bcpdev/bcp/protocol/bcp"

// transitions is the checkout status machine (ucp-digest §4.2). A session
// may stay in a non-terminal status (an update that changes nothing);
// completed and canceled are terminal.
var transitions = map[string][]string{
	bcp.StatusIncomplete: {bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusReadyForComplete, bcp.StatusCanceled},
	// From escalation a 3DS challenge can also end in payment.
	bcp.StatusRequiresEscalation: {bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusReadyForComplete, bcp.StatusCompleted, bcp.StatusCanceled},
	bcp.StatusReadyForComplete: {
		bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusReadyForComplete,
		bcp.StatusCompleteInProgress, bcp.StatusCompleted, bcp.StatusCanceled,
	},
	// An accepted completion either finishes, or comes back (declined or
	// expired payment) to where the buyer can try again.
	// The bank may also ask the buyer to confirm (3DS): escalation.
	bcp.StatusCompleteInProgress: {bcp.StatusCompleted, bcp.StatusReadyForComplete, bcp.StatusIncomplete, bcp.StatusRequiresEscalation, bcp.StatusCanceled},
	bcp.StatusCompleted:          {},
	bcp.StatusCanceled:           {},
}

// canTransition reports whether a session may go from one status to another.
func canTransition(from, to string) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// terminal statuses accept no further change.
func terminal(status string) bool {
	return status == bcp.StatusCompleted || status == bcp.StatusCanceled
}

// modifiable reports whether update may change a session in this status:
// never while a payment is in flight, never after the end.
func modifiable(status string) bool {
	return !terminal(status) && status != bcp.StatusCompleteInProgress
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
