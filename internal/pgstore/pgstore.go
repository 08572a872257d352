// Package pgstore opens the application's PostgreSQL pool and runs
// transactions in a tenant's scope. InTenant is the only way service code
// gets a transaction: it sets app.tenant_id with set_config(..., true), so
// the setting is local to the transaction and can never leak into the next
// borrower of the pooled connection.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/tenancy"
)

// Options tune the pool.
type Options struct {
	MaxConns int32
	// AllowPrivileged lets the pool log in as a superuser or BYPASSRLS role,
	// which would silently disable row-level security. Only for operators
	// who know why.
	AllowPrivileged bool
}

// Open connects a pool to url and refuses roles that bypass row-level
// security.
func Open(ctx context.Context, url string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if !opts.AllowPrivileged {
		var super, bypass bool
		err := pool.QueryRow(ctx, `SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&super, &bypass)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("check database role: %w", err)
		}
		if super || bypass {
			pool.Close()
			return nil, errors.New("the database role is a superuser or has BYPASSRLS, which disables tenant isolation; connect as a role like bcp_app")
		}
	}
	return pool, nil
}

// InTenant runs fn in a transaction scoped to the tenant of ctx. It fails
// closed when ctx carries no tenant.
func InTenant(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	// BEGIN and set_config travel in one simple-protocol message: one
	// round trip less per transaction (bcpbench: ~40 per purchase). The
	// tenant id is a uuid.UUID, whose text form needs no quoting.
	return connLost(pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{BeginQuery: "BEGIN; SELECT set_config('app.tenant_id', '" + tid.String() + "', true)"}, fn))
}

// connLost marks a connection cut mid-transaction (PostgreSQL restarting
// or crashing) as unavailable: pgx reports it as a bare (unexpected) EOF
// or "conn closed", which would otherwise read as an internal error. Like
// any unavailable answer it tells the agent to retry with the same
// idempotency key (a cut COMMIT may have landed; the key replays it).
func connLost(err error) error {
	if err == nil || apperr.As(err).Kind != apperr.KindInternal {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "conn closed") {
		return &apperr.Error{Kind: apperr.KindUnavailable, Code: "unavailable", Message: "database connection lost", Err: err}
	}
	return err
}

// InRegistry runs fn in a transaction that may see every tenant's rows of
// the registry tables that allow it (tenants.*). Only the tenant registry
// (Host resolution, operator listing) uses it.
func InRegistry(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return connLost(pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{BeginQuery: "BEGIN; SELECT set_config('app.scope', 'registry', true)"}, fn))
}
