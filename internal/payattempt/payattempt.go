// Package payattempt is the one rule about a payment attempt that the
// payments service, the checkout service and the fault-injection checks
// all decide by: whether the attempt moved the buyer's money. An attempt
// moved money when it succeeded, even if some or all of it was refunded
// since (the refund is money going back, not money never taken).
//
// The statuses are the payments service's, as stored in
// payments.attempts.status and, upper-cased behind ATTEMPT_STATUS_, as
// the paymentsv1.AttemptStatus enum the checkout service reads.
package payattempt

import (
	"slices"
	"strings"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// The statuses in which an attempt took the buyer's money.
const (
	Succeeded         = "succeeded"
	PartiallyRefunded = "partially_refunded"
	Refunded          = "refunded"
)

var moved = []string{Succeeded, PartiallyRefunded, Refunded}

// MovedMoney reports whether an attempt in this stored status took the
// buyer's money (some or all of it may have been refunded since).
func MovedMoney(status string) bool { return slices.Contains(moved, status) }

// MovedMoneyProto is MovedMoney for the status as the payments API
// returns it.
func MovedMoneyProto(s paymentsv1.AttemptStatus) bool {
	name, ok := strings.CutPrefix(s.String(), "ATTEMPT_STATUS_")
	return ok && MovedMoney(strings.ToLower(name))
}

// MovedMoneySQL is the SQL condition "column holds a status that moved
// money", for queries built in Go: `a.status IN ('succeeded',
// 'partially_refunded', 'refunded')`.
func MovedMoneySQL(column string) string {
	return column + " IN ('" + strings.Join(moved, "', '") + "')"
}
