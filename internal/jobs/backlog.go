package jobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/db"
)

// Backlog is what is left to do of one kind of job.
type Backlog struct {
	// ByState counts the unfinished jobs by river state: available (due,
	// waiting for a worker), running, retryable (failed, waiting for their
	// next attempt) and scheduled (not due yet). Every state is present.
	ByState map[string]int64
	// OldestDue is how long the longest-waiting due job (available) has
	// been due: a backlog the workers are not keeping up with (0: none).
	OldestDue time.Duration
}

// BacklogStates are the unfinished states Backlog counts.
var BacklogStates = []string{"available", "running", "retryable", "scheduled"}

// BacklogOf reads the backlog of the jobs of kind: one statement, which
// river's (state, queue, priority, scheduled_at, id) index serves (the
// unfinished jobs are few; the finished ones river keeps for a day are not
// read).
func BacklogOf(ctx context.Context, pool *pgxpool.Pool, kind string) (Backlog, error) {
	rows, err := pool.Query(ctx, `SELECT state::text, count(*),
  COALESCE(EXTRACT(EPOCH FROM now() - min(scheduled_at) FILTER (WHERE state = 'available')), 0)::float8
FROM `+db.RiverSchema+`.river_job
WHERE kind = $1 AND state IN ('available', 'running', 'retryable', 'scheduled')
GROUP BY state`, kind)
	if err != nil {
		return Backlog{}, err
	}
	defer rows.Close()
	b := Backlog{ByState: map[string]int64{}}
	for _, s := range BacklogStates {
		b.ByState[s] = 0
	}
	for rows.Next() {
		var state string
		var n int64
		var oldest float64
		if err := rows.Scan(&state, &n, &oldest); err != nil {
			return Backlog{}, err
		}
		b.ByState[state] = n
		if state == "available" {
			b.OldestDue = max(0, time.Duration(oldest*float64(time.Second)))
		}
	}
	return b, rows.Err()
}
