// Package pgstore opens the application's PostgreSQL pool and runs
// transactions in a tenant's scope. InTenant, Single and Reads are the only
// ways service code reaches a tenant's rows: each sets app.tenant_id with
// set_config(..., true) in the same message as the statement it scopes
// (no round trip of its own), so the setting is local to the transaction
// and can never leak into the next borrower of the pooled connection; a
// statement sent any other way has no tenant, and forced RLS lets it see
// or write no tenant's row.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	// Tracer traces the pool's statements (internal/tracing; nil: none).
	Tracer pgx.QueryTracer
}

// DefaultConnectTimeout bounds one connection attempt to one host when
// the database URL sets no connect_timeout.
const DefaultConnectTimeout = 5 * time.Second

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
	// Each host of a multi-host URL gets the connect timeout in turn: a
	// host that is gone (no refusal, no answer) costs it on every new
	// connection until it is back. The URL's connect_timeout wins (2 s
	// suits a LAN; deploy/README.md, "Database").
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.AfterConnect = registerUUID
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
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
	// BEGIN and set_config travel with fn's first statement (inTx).
	return inTx(ctx, pool, "app.tenant_id", tid.String(), fn)
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
	return inScope(ctx, pool, "registry", fn)
}

// InCheckoutSweep runs fn in a transaction that may read (only read) the
// checkout sessions of every tenant: the checkout sweeps list due
// sessions with it and act on each in its tenant's scope (migration
// 00016).
func InCheckoutSweep(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return inScope(ctx, pool, "checkout_sweep", fn)
}

// InPaymentsSweep runs fn in a transaction that may read (only read) the
// payment attempts of every tenant: the resolve sweep lists due card
// attempts with it and resolves each in its tenant's scope (migration
// 00017).
func InPaymentsSweep(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return inScope(ctx, pool, "payments_sweep", fn)
}

// InSignatureNonceSweep runs fn in a transaction that may see and delete
// (only) the expired agent signature nonces of every tenant: the tenants
// service's sweep of its replay cache (migration 00048).
func InSignatureNonceSweep(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return inScope(ctx, pool, "signature_nonce_sweep", fn)
}

// InPSPSim runs fn in a transaction that may see every account of the PSP
// simulator (schema pspsim, migration 00042): its token endpoint finds an
// account by client_id, provisioning finds one by reference, and its
// webhook worker claims the due deliveries of every account.
func InPSPSim(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return inScope(ctx, pool, "pspsim", fn)
}

// inScope sets app.scope, transaction-local; scope is one of the constant
// names above, never caller input.
func inScope(ctx context.Context, pool *pgxpool.Pool, scope string, fn func(pgx.Tx) error) error {
	return inTx(ctx, pool, "app.scope", scope, fn)
}

// errSecondStatement is a programming error: Single's callback ran more
// than one statement.
var errSecondStatement = errors.New("pgstore.Single: more than one statement (or a batch); use InTenant")

// Single runs fn, which must issue exactly one statement, in the tenant's
// scope in one round trip instead of three (BEGIN + set_config, the
// statement, COMMIT): set_config and the statement are pipelined up to one
// Sync, so PostgreSQL runs them in one implicit transaction and the local
// setting ends with it, exactly as in InTenant. For a read that is all
// there is to it. A write has committed when the statement returns: fn
// must not need to roll it back (one statement is atomic on its own).
// A second statement fails with an error instead of running outside the
// transaction. It fails closed when ctx carries no tenant.
func Single(ctx context.Context, pool *pgxpool.Pool, fn func(*SingleQuerier) error) error {
	return single(ctx, pool, setTenant, fn)
}

// SingleGenericPlan is Single for a statement that PostgreSQL would plan
// again on every call although its plan never depends on the values:
// one whose array parameter feeds unnest. A custom plan sees the array's
// length, the generic plan guesses ten elements, so the generic one always
// looks costlier and is never chosen (plan_cache_mode auto). Forcing it,
// for this statement only (the setting is local to its implicit
// transaction), skips a planning that costs more than the execution.
// Statements with optional filters (x IS NULL OR ...) must keep custom
// plans: use Single for them.
func SingleGenericPlan(ctx context.Context, pool *pgxpool.Pool, fn func(*SingleQuerier) error) error {
	return single(ctx, pool, setTenantGenericPlan, fn)
}

// SingleUnsynced is Single for a write that may be lost in a crash without
// harm (rate-limit bucket updates: losing the last few hundred
// milliseconds only hands out a few tokens again): its commit does not wait
// for the WAL flush or a synchronous standby (synchronous_commit off, for
// this statement's implicit transaction only). A write that others rely on
// having happened must not use it.
func SingleUnsynced(ctx context.Context, pool *pgxpool.Pool, fn func(*SingleQuerier) error) error {
	return single(ctx, pool, setTenantUnsynced, fn)
}

// Reads runs fn, which only reads, in the tenant's scope with one round
// trip per statement instead of one more for BEGIN's COMMIT: each
// statement is sent as Single sends its one (set_config and the statement
// up to one Sync, one implicit transaction), all on one pooled
// connection. Every statement carries the scope, so none runs outside it.
// Each is read-only (transaction_read_only, set with the scope): a write,
// a data-modifying CTE, nextval or FOR UPDATE fails instead of committing
// on its own. What InTenant gives a multi-statement read at READ
// COMMITTED, each statement seeing the data committed when it starts,
// holds here too; what does not carry from one statement to the next is
// anything transaction-local: a set_config, a lock, now(). A read that
// needs one (a setting for a later statement) uses InTenant. It fails
// closed when ctx carries no tenant.
func Reads(ctx context.Context, pool *pgxpool.Pool, fn func(*SingleQuerier) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	q := newSingleQuerier(pool, setTenantReadOnly, tid)
	q.multi = true
	err = fn(q)
	if cerr := q.release(); err == nil {
		err = cerr
	}
	return connLost(err)
}

const (
	setTenantUnsynced    = `SELECT set_config('app.tenant_id', $1, true), set_config('synchronous_commit', 'off', true)`
	setTenant            = `SELECT set_config('app.tenant_id', $1, true)`
	setTenantGenericPlan = `SELECT set_config('app.tenant_id', $1, true), set_config('plan_cache_mode', 'force_generic_plan', true)`
	// Going read-only is allowed at any point of a transaction, after the
	// snapshot of this very statement included.
	setTenantReadOnly = `SELECT set_config('app.tenant_id', $1, true), set_config('transaction_read_only', 'on', true)`
)

func single(ctx context.Context, pool *pgxpool.Pool, setup string, fn func(*SingleQuerier) error) error {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return err
	}
	q := newSingleQuerier(pool, setup, tid)
	err = fn(q)
	if cerr := q.release(); err == nil {
		err = cerr
	}
	return connLost(err)
}

// SingleQuerier is what Single's (and Reads') callback runs its
// statements on; it has the methods of sqlc's DBTX. Each statement is sent
// behind set_config in one batch (prepared.go). Single's connection goes
// back to the pool once its statement's results are read, Reads' when its
// callback returns.
type SingleQuerier struct {
	pool   *pgxpool.Pool
	setup  string // the set_config statement sent before each statement
	multi  bool   // Reads: more than one statement, each in its own batch
	used   bool
	conn   *pgxpool.Conn
	closed bool // no statement may follow (Single's one has been sent)

	// A statement sent prepared (prepared.go): its batch, its SQL, its
	// result, and set_config's one parameter, the tenant id in text.
	stmts       *connStmts
	batch       pgconn.Batch
	mrr         *pgconn.MultiResultReader
	rr          *pgconn.ResultReader
	sql         string
	tenantText  [36]byte
	tenantParam [1][]byte
	trace       *batchTrace // what the connection's tracer, if any, is shown of it

	br pgx.BatchResults // a statement sent as a pgx.Batch
}

func newSingleQuerier(pool *pgxpool.Pool, setup string, tenant uuid.UUID) *SingleQuerier {
	q := &SingleQuerier{pool: pool, setup: setup}
	uuidText(&q.tenantText, tenant)
	q.tenantParam[0] = q.tenantText[:]
	return q
}

// send pipelines set_config and the statement and reads set_config's
// result; the statement's results are left to the caller (s.rr when sent
// prepared, else s.br).
func (s *SingleQuerier) send(ctx context.Context, sql string, args []any) error {
	if s.closed || (s.used && !s.multi) {
		return errSecondStatement
	}
	s.used = true
	// Reads: the previous statement's results were not all read (a
	// QueryRow never scanned); its batch ends here.
	if err := s.endBatch(); err != nil {
		return err
	}
	if s.conn == nil {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		s.conn = conn
		s.stmts = stmtsOf(conn)
	}
	if s.stmts.prepared(sql, args) {
		return s.sendPrepared(ctx, sql, args)
	}
	b := &pgx.Batch{}
	b.Queue(s.setup, string(s.tenantText[:]))
	b.Queue(sql, args...)
	s.br = s.conn.SendBatch(ctx, b)
	_, err := s.br.Exec()
	return err
}

// endBatch reads what is left of the last statement's batch.
func (s *SingleQuerier) endBatch() error {
	if s.br != nil {
		err := s.br.Close()
		s.br = nil
		return err
	}
	return s.end()
}

// close ends the statement's batch once its results are read (its Sync);
// for Single that is the end: the connection goes back to the pool.
func (s *SingleQuerier) close() error {
	err := s.endBatch()
	if !s.multi {
		if rerr := s.release(); err == nil {
			err = rerr
		}
	}
	return err
}

// release ends what is left of the last batch and releases the
// connection; a connection whose batch failed to finish is closed by pgx
// and dropped by the pool. Nothing can be sent after it.
func (s *SingleQuerier) release() error {
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.endBatch()
	if s.conn != nil {
		s.conn.Release()
		s.conn = nil
	}
	return err
}

func (s *SingleQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := s.send(ctx, sql, args); err != nil {
		return pgconn.CommandTag{}, err
	}
	var tag pgconn.CommandTag
	var err error
	if s.rr != nil {
		tag, err = s.rr.Close()
		s.traceStmt(tag, err)
	} else {
		tag, err = s.br.Exec()
	}
	if cerr := s.close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (s *SingleQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := s.send(ctx, sql, args); err != nil {
		return errRow{err}
	}
	if s.rr != nil {
		return &closingRow{prepared: true, q: s}
	}
	return &closingRow{row: s.br.QueryRow(), q: s}
}

func (s *SingleQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := s.send(ctx, sql, args); err != nil {
		return nil, err
	}
	if s.rr != nil {
		return &closingRows{Rows: s.rows(), q: s}, nil
	}
	rows, err := s.br.Query()
	if err != nil {
		return nil, err
	}
	return &closingRows{Rows: rows, q: s}, nil
}

// SendBatch is refused: a batch is more than one statement (and Reads
// would send it without its scope).
func (s *SingleQuerier) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults {
	return errBatch{err: errSecondStatement}
}

// errBatch refuses every result (the embedded interface is nil: only
// the overridden methods are ever called).
type errBatch struct {
	pgx.BatchResults
	err error
}

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow{b.err} }
func (b errBatch) Close() error                     { return b.err }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// closingRow and closingRows run close once a statement's results are
// read: Single releases its connection, Reads and a lazy transaction
// close the batch the statement went in (q's close, else close).
type closingRow struct {
	row      pgx.Row // a pgx batch's row
	prepared bool    // or q's statement sent prepared (q.scanRow)
	q        *SingleQuerier
	close    func() error
}

func (r *closingRow) Scan(dest ...any) error {
	var err error
	if r.prepared {
		err = r.q.scanRow(dest)
	} else {
		err = r.row.Scan(dest...)
	}
	if cerr := closeOf(r.q, r.close); err == nil {
		err = cerr
	}
	return err
}

func closeOf(q *SingleQuerier, close func() error) error {
	if q != nil {
		return q.close()
	}
	return close()
}

type closingRows struct {
	pgx.Rows
	q     *SingleQuerier
	close func() error
	err   error
}

func (r *closingRows) Close() {
	r.Rows.Close()
	if r.q != nil {
		r.q.traceStmt(r.Rows.CommandTag(), r.Rows.Err())
	}
	if cerr := closeOf(r.q, r.close); cerr != nil && r.err == nil {
		r.err = cerr
	}
}

func (r *closingRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}
