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

// insertLimiter mirrors river's insert notification limiter (one NOTIFY
// per queue per FetchCooldown per client) to tell when river stayed silent.
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

// sentRecently reports whether river has (most likely) already notified
// for queue within FetchCooldown, and so dropped this insert's
// notification. Like river's, the first insert after a quiet spell counts
// as the one notified.
func (l *insertLimiter) sentRecently(queue string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last[queue].Before(now.Add(-FetchCooldown)) {
		l.last[queue] = now
		return false
	}
	return true
}
