// Package paymentevents is what the payments service tells others
// without calling them: durable jobs it inserts in the transaction of the
// change they announce, worked by the service they concern. Calls go one
// way only (checkout → payments); news comes back this way, so nothing is
// lost when the other service is down and nothing is announced for a
// change that rolled back.
package paymentevents

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bcpdev/bcp/internal/jobs"
)

// CheckoutQueue is the river queue worked by the processes that host the
// checkout service.
const CheckoutQueue = jobs.QueueCheckout

// AttemptChanged says that a payment attempt changed on its own — a Pix
// paid, expired or refused, a card charge resolved after its call was
// lost — so its checkout must settle with it (the checkout service reads
// the attempt again; the job carries no state). The kind keeps the name
// of the checkout's former safety-net job, whose arguments it shares.
type AttemptChanged struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	CheckoutID string    `json:"checkout_id"`
	AttemptID  string    `json:"attempt_id"`
}

// Kind names the job.
func (AttemptChanged) Kind() string { return "checkout_settle" }

// InsertOpts routes it to the checkout's queue.
func (AttemptChanged) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: CheckoutQueue} }
