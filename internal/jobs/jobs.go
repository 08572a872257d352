// Package jobs runs the platform's durable background work on
// riverqueue/river: jobs are inserted in the same transaction as the state
// change that needs them, so they are never lost and never run for a
// change that rolled back.
package jobs

import (
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bcpdev/bcp/db"
)

// Client is the job client every service uses.
type Client = river.Client[pgx.Tx]

// NewClient returns a client that inserts jobs and, when workers is not
// empty, works them.
func NewClient(pool *pgxpool.Pool, workers *river.Workers, log *slog.Logger) (*Client, error) {
	cfg := &river.Config{Schema: db.RiverSchema, Logger: log}
	if workers != nil {
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 8}}
	}
	return river.NewClient(riverpgxv5.New(pool), cfg)
}
