package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverSchema holds the durable job queue (riverqueue/river). Its tables
// are infrastructure, not tenant data: job arguments carry the tenant id
// and every worker runs its work inside pgstore.InTenant.
const RiverSchema = "river"

// migrateRiver applies river's own migrations into RiverSchema and lets
// the application role use the queue.
func migrateRiver(ctx context.Context, ownerURL string) error {
	pool, err := pgxpool.New(ctx, ownerURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+RiverSchema); err != nil {
		return fmt.Errorf("create river schema: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: RiverSchema})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	for _, stmt := range []string{
		"GRANT USAGE ON SCHEMA " + RiverSchema + " TO " + AppRole,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + RiverSchema + " TO " + AppRole,
		"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA " + RiverSchema + " TO " + AppRole,
		"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA " + RiverSchema + " TO " + AppRole,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("grant river to %s: %w", AppRole, err)
		}
	}
	return nil
}
