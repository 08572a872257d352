package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bcpdev/bcp/db"
)

// InsertTx inserts a job in tx, like the client's InsertTx, and makes sure
// its commit wakes a worker.
//
// River announces inserts with a NOTIFY, but a client sends at most one per
// queue per FetchCooldown and drops the others. In a chain of jobs that is
// the common case, not the exception: the simulated PSP's webhook job
// stores a Pix whose reconcile job is inserted a few milliseconds after
// the webhook job's own notification, so the reconcile job waited for the
// next poll (FetchPollInterval), and a paid Pix reached the agent ≈ 75 ms
// after payment on an idle platform instead of ≈ 20 ms (bcpbench, one agent,
// all Pix). When river may have stayed silent about this insert, this sends
// the same NOTIFY in tx, so the commit is announced; the worker's own fetch
// cooldown still bounds how often it fetches.
func InsertTx(ctx context.Context, c *Client, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	l := limiterOf(c)
	call := l.begin(time.Now())
	res, err := c.InsertTx(ctx, tx, args, opts)
	mayBeSilent := l.end(call, time.Now())
	if err != nil || res.UniqueSkippedAsDuplicate || res.Job == nil || res.Job.State != rivertype.JobStateAvailable {
		return res, err
	}
	if mayBeSilent {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.RiverSchema+".river_insert", insertPayload(res.Job.Queue)); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// insertPayload is river's own payload for an insert in queue, byte for
// byte: PostgreSQL delivers a notification sent twice in one transaction
// with the same channel and payload once, so when river did announce this
// insert after all, the listeners are not woken a second time.
func insertPayload(queue string) string { return fmt.Sprintf("{\"queue\": %q}", queue) }

// insertLimiter tells when river may have stayed silent about an insert.
//
// River's limiter reads its clock between the insert query and its own
// NOTIFY, inside this package's call to the client's InsertTx, and drops
// the insert when it announced another one into the queue less than
// FetchCooldown earlier. That decision is not visible from here, only each
// call's interval, so the answer is conservative: an insert may have gone
// unannounced when another call overlapped it (either may have reached
// river's limiter first, whatever order the calls began or ended in) or
// ended less than FetchCooldown plus notifyMargin before it began. An
// insert river dropped always meets one of these. One it announced may be
// announced again in the same transaction, which PostgreSQL folds into one
// (insertPayload). Calls into other queues count too: rarely more than one
// queue is used, and an extra NOTIFY only costs a fetch.
//
// Comparing only the times at which calls returned, as before, missed
// inserts: when river's NOTIFY round trip for the first insert took longer
// than the window (a loaded machine), the second, silent insert returned
// first and the first returned too late to count as close to it
// (TestLimiterOverlappingCalls).
type insertLimiter struct {
	mu       sync.Mutex
	inFlight int
	begun    uint64    // calls begun so far
	lastEnd  time.Time // when the last call returned
}

// limiterCall is one call between begin and end.
type limiterCall struct {
	begunAt uint64 // insertLimiter.begun once this call had begun
	mayDrop bool   // decided at begin: another call was in flight or had just ended
}

var limiters sync.Map // *Client → *insertLimiter

func limiterOf(c *Client) *insertLimiter {
	if l, ok := limiters.Load(c); ok {
		return l.(*insertLimiter)
	}
	l, _ := limiters.LoadOrStore(c, &insertLimiter{})
	return l.(*insertLimiter)
}

// notifyMargin widens the window after a call ends: river's limiter may
// read the wall clock, which is not monotonic, where this package compares
// monotonic readings.
const notifyMargin = 5 * time.Millisecond

func (l *insertLimiter) begin(now time.Time) limiterCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	mayDrop := l.inFlight > 0 || (!l.lastEnd.IsZero() && now.Sub(l.lastEnd) < FetchCooldown+notifyMargin)
	l.inFlight++
	l.begun++
	return limiterCall{begunAt: l.begun, mayDrop: mayDrop}
}

// end reports whether river may have dropped the notification of the
// insert made during call.
func (l *insertLimiter) end(call limiterCall, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	l.lastEnd = now
	return call.mayDrop || l.begun != call.begunAt // or another call began during this one
}
