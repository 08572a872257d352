package jobs

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/db"
)

// RescueGone hands back, at once, the jobs left running by processes that
// are gone (issue 32): river records the id of the client that works a
// job (attempted_by), and a client created with its process incarnation's
// id (NewClientAs) names a process whose death gone can tell
// (internal/lease). Its own rescuer would wait RescueStuckJobsAfter (two
// minutes) for them — a checkout_settle finishing a paid Pix, a refund —
// since it cannot tell a dead process's job from a slow one. A job with
// attempts left is made available again (every job is idempotent); one
// without is left to river's rescuer, which discards it. It says how many
// it handed back.
func RescueGone(ctx context.Context, pool *pgxpool.Pool, gone func(ctx context.Context, owners []string) (map[string]bool, error)) (int, error) {
	rows, err := pool.Query(ctx, `SELECT id, attempted_by[array_upper(attempted_by, 1)] FROM `+db.RiverSchema+`.river_job
		WHERE state = 'running' AND attempt < max_attempts AND array_upper(attempted_by, 1) > 0`)
	if err != nil {
		return 0, err
	}
	type running struct {
		id int64
		by string
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (running, error) {
		var j running
		err := r.Scan(&j.id, &j.by)
		return j, err
	})
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	var owners []string
	for _, j := range jobs {
		owners = append(owners, j.by)
	}
	dead, err := gone(ctx, owners)
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	var ids []int64
	var by []string
	for _, j := range jobs {
		if dead[j.by] {
			ids = append(ids, j.id)
			by = append(by, j.by)
		}
	}
	// Only while still running in the process that is gone; the workers
	// of their queues are woken as by an insert.
	rows, err = pool.Query(ctx, `UPDATE `+db.RiverSchema+`.river_job j SET state = 'available', scheduled_at = now()
		FROM unnest($1::bigint[], $2::text[]) AS g(id, by)
		WHERE j.id = g.id AND j.state = 'running' AND j.attempted_by[array_upper(j.attempted_by, 1)] = g.by
		RETURNING j.queue`, ids, by)
	if err != nil {
		return 0, err
	}
	queues, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	notified := map[string]bool{}
	for _, q := range queues {
		if !notified[q] {
			notified[q] = true
			_, _ = pool.Exec(ctx, `SELECT pg_notify($1, $2)`, db.RiverSchema+".river_insert", insertPayload(q))
		}
	}
	return len(queues), nil
}
