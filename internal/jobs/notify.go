package jobs

import (
	"context"
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
// all Pix). When river has just notified for this queue, this sends one
// more NOTIFY in tx, so the commit is announced; the worker's own fetch
// cooldown still bounds how often it fetches.
func InsertTx(ctx context.Context, c *Client, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	res, err := c.InsertTx(ctx, tx, args, opts)
	if err != nil || res.UniqueSkippedAsDuplicate || res.Job == nil || res.Job.State != rivertype.JobStateAvailable {
		return res, err
	}
	if limiterOf(c).sentRecently(res.Job.Queue) {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.RiverSchema+".river_insert", `{"queue":"`+res.Job.Queue+`"}`); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// insertLimiter tells when river may have stayed silent about an insert:
// river sends one NOTIFY per queue per FetchCooldown per client.
type insertLimiter struct {
	mu   sync.Mutex
	last map[string]time.Time
}

var limiters sync.Map // *Client → *insertLimiter

func limiterOf(c *Client) *insertLimiter {
	if l, ok := limiters.Load(c); ok {
		return l.(*insertLimiter)
	}
	l, _ := limiters.LoadOrStore(c, &insertLimiter{last: map[string]time.Time{}})
	return l.(*insertLimiter)
}

// notifyMargin widens the window in which an insert may have gone
// unannounced: river reads its clock a little before this package does,
// for this insert and for the one it last announced.
const notifyMargin = 5 * time.Millisecond

// sentRecently reports whether river may have dropped this insert's
// notification: whether the client's previous insert into queue came
// less than FetchCooldown (plus notifyMargin) before it. River last
// announced that insert or an earlier one, so an insert it dropped is
// always caught here; one it did announce may be announced twice (one
// more fetch). Mirroring river's limiter exactly — resetting the window
// only when river would notify — missed an insert now and then when the
// two clocks fell on either side of the window's end, which with a 2 ms
// FetchCooldown is often (TestEveryInsertIsAnnounced).
func (l *insertLimiter) sentRecently(queue string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.last[queue]
	l.last[queue] = now
	return now.Sub(prev) < FetchCooldown+notifyMargin
}
