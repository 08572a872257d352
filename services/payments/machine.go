package payments

import "github.com/bcpdev/bcp/internal/apperr"

// The payment attempt's statuses and every transition between them, in
// one place; update refuses any other. The checkout service holds the
// other half of the money path (services/checkout/machine.go): which
// checkout transition each attempt outcome causes.
//
//	from             to                  cause
//	(none)           pending             StartPayment: stored before the processor or PSP sees it
//	(none)           failed              StartPayment: the instrument is refused before any money can move
//	(none)           canceled            CancelPayment before StartPayment arrived: the id is fenced, and a
//	                                     StartPayment with it later charges nothing (canceledBeforeStart)
//	pending          succeeded           card approved (answer, resolve sweep, cancel's processor answer);
//	                                     Pix paid by expires_at with the charged amount (decidePix)
//	pending          requires_action     card: the bank asks for 3-D Secure
//	pending          failed              card declined or never charged; Pix charge not created, removed
//	                                     by the PSP, or paid with another amount (refunded)
//	pending          expired             Pix unpaid at expires_at (charge removed at the PSP), or paid late
//	pending          canceled            CancelPayment: card key canceled at the processor, Pix charge removed
//	requires_action  succeeded | failed  the processor's answer after the challenge
//	requires_action  canceled            CancelPayment: the charge is voided at the processor
//	succeeded        partially_refunded  a refund settled for part of the amount
//	succeeded        refunded            refunds settled for all of it (merchant or automatic)
//	partially_refunded  partially_refunded | refunded
//
// failed, expired, canceled and refunded are final. Money that reaches a
// final attempt anyway (a Pix paid to a removed charge, a card approved
// after its key was given up) is refunded automatically and reported to
// the merchant (refundOrphan, refundStrayCharge), never kept.
var attemptTransitions = map[string][]string{
	stPending:        {stSucceeded, stRequiresAction, stFailed, stExpired, stCanceled},
	stRequiresAction: {stSucceeded, stFailed, stCanceled},
	stSucceeded:      {stPartRefunded, stRefunded},
	stPartRefunded:   {stPartRefunded, stRefunded},
	stFailed:         {},
	stExpired:        {},
	stCanceled:       {},
	stRefunded:       {},
}

// canMove reports whether an attempt may go from one status to another
// (staying put is always allowed: a write of other fields).
func canMove(from, to string) bool {
	if from == to {
		return true
	}
	for _, s := range attemptTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// finalStatus reports whether no money can move for an attempt any more.
func finalStatus(status string) bool {
	return len(attemptTransitions[status]) == 0
}

func errIllegalMove(id, from, to string) error {
	return apperr.New(apperr.KindInternal, "internal", "payment attempt %s: illegal transition %s → %s", id, from, to)
}
