// Package db holds the platform's PostgreSQL schema: goose SQL migrations
// (embedded in the binary), the sqlc query files of each service, and the
// set-up of roles and databases on a private cluster.
package db

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the embedded migration tree (files at its root).
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // embedded path is fixed at build time
	}
	return sub
}

// Provider opens a goose provider on url. Migrations take a PostgreSQL
// advisory lock, so several processes starting at once migrate once.
func Provider(url string, logger *slog.Logger) (*goose.Provider, func() error, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("parse database url: %w", err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		sqlDB.Close()
		return nil, nil, err
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(), opts...)
	if err != nil {
		sqlDB.Close()
		return nil, nil, err
	}
	return p, sqlDB.Close, nil
}

// MigrateUp applies every pending migration and returns how many ran.
func MigrateUp(ctx context.Context, url string, logger *slog.Logger) (int, error) {
	p, closeFn, err := Provider(url, logger)
	if err != nil {
		return 0, err
	}
	defer func() { _ = closeFn() }()
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("migrate up: %w", err)
	}
	if err := migrateRiver(ctx, url); err != nil {
		return len(res), err
	}
	return len(res), nil
}
