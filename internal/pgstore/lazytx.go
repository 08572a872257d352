package pgstore

import (
	"context"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// inTx runs fn in a transaction on one pooled connection whose
// set_config(key, value, true) holds for the transaction only: the value
// is scope, or the tenant's id when scope is "". BEGIN and the setting
// are not sent on their own: they travel with fn's first statement in one
// batch, one round trip less per transaction. pgx.BeginFunc commits, or
// rolls back on an error or a panic, exactly as for any pgx transaction.
//
// The statements go prepared as Single's do (prepared.go): the first
// behind BEGIN and set_config, each later one alone (Bind, Execute, Sync:
// no Describe, no pgx statement cache of its own), COMMIT and ROLLBACK
// as pgx sends them. On a connection whose statements go as pgx batches
// (another query mode, a tracer that does not see batches) the
// transaction is the pgx transaction a pgx.Batch begins (BeginTx).
func inTx(ctx context.Context, pool *pgxpool.Pool, key string, tenant uuid.UUID, scope string, fn func(pgx.Tx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return connLost(err)
	}
	// A connection left inside a transaction (a failed rollback) is
	// destroyed by the pool, not reused.
	defer conn.Release()
	t := &lazyTx{conn: conn, key: key, scope: scope}
	q := &t.q
	if scope == "" {
		uuidText(&q.tenantText, tenant)
		t.value = q.tenantText[:]
	} else if len(scope) <= len(q.tenantText) {
		t.value = q.tenantText[:copy(q.tenantText[:], scope)]
	} else {
		t.value = []byte(scope)
	}
	if c := stmtsOf(conn); !c.batch {
		q.conn, q.stmts, q.tx, q.multi = conn, c, t, true
		q.setup = txSetup
		q.params[0], q.params[1], q.nParams = settingKey(key), t.value, 2
	}
	return connLost(pgx.BeginFunc(ctx, lazyBegin{t}, fn))
}

// txSetup is a transaction's set_config (its parameters: the setting and
// its value).
const txSetup = `SELECT set_config($1, $2, true)`

var (
	keyTenant = []byte("app.tenant_id")
	keyScope  = []byte("app.scope")
)

func settingKey(key string) []byte {
	switch key {
	case "app.tenant_id":
		return keyTenant
	case "app.scope":
		return keyScope
	}
	return []byte(key)
}

// lazyBegin hands pgx.BeginFunc the not yet begun transaction.
type lazyBegin struct{ t *lazyTx }

func (b lazyBegin) Begin(context.Context) (pgx.Tx, error) { return b.t, nil }

// lazyTx is a pgx.Tx whose BEGIN and scope setting go out with its first
// statement; a transaction that ran no statement never reaches the
// server. Its statements go prepared through q (q.stmts set), unless it
// is a pgx transaction (tx set): begun by a pgx.Batch, on a connection
// whose statements go as pgx batches, or by a first statement that cannot
// go prepared (pgx.NamedArgs).
type lazyTx struct {
	conn  *pgxpool.Conn
	key   string
	scope string // the setting's value, or "": the tenant's id (in q.tenantText)
	value []byte // the setting's value in text

	q          SingleQuerier // the statements sent prepared
	begun      bool          // BEGIN has been sent by q: COMMIT or ROLLBACK ends it
	done       bool          // committed or rolled back (or ended without beginning)
	savepoints int64         // pseudo nested transactions begun so far (as pgx names them)

	tx pgx.Tx // a pgx transaction, once begun
}

func (t *lazyTx) valueString() string {
	if t.scope != "" {
		return t.scope
	}
	return string(t.q.tenantText[:])
}

// prepared says whether the transaction sends sql prepared through q.
func (t *lazyTx) prepared(sql string, args []any) bool {
	if t.q.stmts == nil || !t.q.stmts.prepared(sql, args) {
		return false
	}
	if len(args) > 0 {
		switch args[0].(type) { // pgx options: only pgx's Exec and Query read them
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
			return false
		}
	}
	return true
}

// viaPgx says whether a statement of a begun transaction goes through
// pgx's connection methods (it cannot go prepared, or it is an Exec
// without arguments, which pgx sends in the simple protocol: several
// statements may be one); what is left of q's last statement is read
// first.
func (t *lazyTx) viaPgx(sql string, args []any, exec bool) bool {
	if !t.begun || (t.prepared(sql, args) && (!exec || len(args) > 0)) {
		return false
	}
	_ = t.q.endBatch() // its error was (or will be) the statement's
	return true
}

// first sends BEGIN, the setting and the first statement in one pgx batch
// and reads the first two results; the statement's are left to the
// caller, who must close the batch once it has read them. From then on
// the transaction is the pgx transaction the batch began.
func (t *lazyTx) first(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if t.done {
		return nil, pgx.ErrTxClosed
	}
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(txSetup, t.key, t.valueString())
	if sql != "" {
		b.Queue(sql, args...)
	}
	br := t.conn.SendBatch(ctx, b)
	t.tx = br.Tx()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	return br, nil
}

// begin begins the transaction on its own, for the methods that are not a
// single statement (a nested transaction, COPY, a batch).
func (t *lazyTx) begin(ctx context.Context) error {
	if t.tx != nil || t.begun {
		return nil
	}
	if t.done {
		return pgx.ErrTxClosed
	}
	if t.q.stmts != nil {
		return t.q.sendPrepared(ctx, "", nil)
	}
	br, err := t.first(ctx, "", nil)
	if err != nil {
		return err
	}
	return br.Close()
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.tx != nil {
		return t.tx.Exec(ctx, sql, args...)
	}
	if t.done {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	if t.viaPgx(sql, args, true) {
		return t.conn.Exec(ctx, sql, args...)
	}
	if t.prepared(sql, args) {
		return t.q.Exec(ctx, sql, args...)
	}
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.tx != nil {
		return t.tx.QueryRow(ctx, sql, args...)
	}
	if t.done {
		return errRow{pgx.ErrTxClosed}
	}
	if t.viaPgx(sql, args, false) {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	if t.prepared(sql, args) {
		return t.q.QueryRow(ctx, sql, args...)
	}
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return &closingRow{row: br.QueryRow(), close: br.Close}
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.tx != nil {
		return t.tx.Query(ctx, sql, args...)
	}
	if t.done {
		return nil, pgx.ErrTxClosed
	}
	if t.viaPgx(sql, args, false) {
		return t.conn.Query(ctx, sql, args...)
	}
	if t.prepared(sql, args) {
		return t.q.Query(ctx, sql, args...)
	}
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &closingRows{Rows: rows, close: br.Close}, nil
}

// Commit commits what ran; with nothing run there is nothing to commit.
// As pgx's: a connection whose COMMIT failed inside the transaction is
// closed, and a COMMIT of a failed transaction (answered ROLLBACK) is
// pgx.ErrTxCommitRollback.
func (t *lazyTx) Commit(ctx context.Context) error {
	if t.tx != nil {
		return t.tx.Commit(ctx)
	}
	if t.done {
		return pgx.ErrTxClosed
	}
	t.done = true
	if !t.begun {
		return nil
	}
	_ = t.q.endBatch() // a statement's results left unread
	tag, err := t.conn.Exec(ctx, "commit")
	if err != nil {
		if t.conn.Conn().PgConn().TxStatus() != 'I' {
			_ = t.conn.Conn().Close(ctx)
		}
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback rolls back what ran; as pgx's, a connection whose ROLLBACK
// failed is closed (the pool drops it).
func (t *lazyTx) Rollback(ctx context.Context) error {
	if t.tx != nil {
		return t.tx.Rollback(ctx)
	}
	if t.done {
		return pgx.ErrTxClosed
	}
	t.done = true
	if !t.begun {
		return nil
	}
	_ = t.q.endBatch()
	if _, err := t.conn.Exec(ctx, "rollback"); err != nil {
		closed, cancel := context.WithCancel(context.Background())
		cancel()
		_ = t.conn.Conn().Close(closed)
		return err
	}
	return nil
}

// Begin begins a pseudo nested transaction, a savepoint, as pgx's.
func (t *lazyTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	if t.tx != nil {
		return t.tx.Begin(ctx)
	}
	t.savepoints++
	if _, err := t.Exec(ctx, "savepoint sp_"+strconv.FormatInt(t.savepoints, 10)); err != nil {
		return nil, err
	}
	return &savepoint{t: t, n: t.savepoints}, nil
}

func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	if t.tx != nil {
		return t.tx.CopyFrom(ctx, table, columns, src)
	}
	_ = t.q.endBatch()
	return t.conn.CopyFrom(ctx, table, columns, src)
}

func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.begin(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	if t.tx != nil {
		return t.tx.SendBatch(ctx, b)
	}
	_ = t.q.endBatch()
	return t.conn.SendBatch(ctx, b)
}

// LargeObjects needs a pgx transaction: one not yet begun begins as one
// (a pgx.Batch); one begun prepared gets pgx's transaction object by a
// second BEGIN, which PostgreSQL only warns about (there is already a
// transaction in progress). The platform uses no large objects.
func (t *lazyTx) LargeObjects() pgx.LargeObjects {
	if t.tx == nil && !t.done {
		if t.begun {
			_ = t.q.endBatch()
			tx, err := t.conn.Conn().Begin(context.Background())
			if err != nil {
				return pgx.LargeObjects{}
			}
			t.tx = tx
		} else if br, err := t.first(context.Background(), "", nil); err != nil || br.Close() != nil {
			return pgx.LargeObjects{}
		}
	}
	if t.tx == nil {
		return pgx.LargeObjects{}
	}
	return t.tx.LargeObjects()
}

func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if t.done && t.tx == nil {
		return nil, pgx.ErrTxClosed
	}
	return t.conn.Conn().Prepare(ctx, name, sql)
}

func (t *lazyTx) Conn() *pgx.Conn { return t.conn.Conn() }

// savepoint is a pseudo nested transaction of a lazyTx begun prepared,
// as pgx's (dbSimulatedNestedTx).
type savepoint struct {
	t      *lazyTx
	n      int64
	closed bool
}

func (sp *savepoint) name() string { return "sp_" + strconv.FormatInt(sp.n, 10) }

func (sp *savepoint) Begin(ctx context.Context) (pgx.Tx, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.t.Begin(ctx)
}

func (sp *savepoint) Commit(ctx context.Context) error {
	if sp.closed {
		return pgx.ErrTxClosed
	}
	_, err := sp.Exec(ctx, "release savepoint "+sp.name())
	sp.closed = true
	return err
}

func (sp *savepoint) Rollback(ctx context.Context) error {
	if sp.closed {
		return pgx.ErrTxClosed
	}
	_, err := sp.Exec(ctx, "rollback to savepoint "+sp.name())
	sp.closed = true
	return err
}

func (sp *savepoint) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if sp.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return sp.t.Exec(ctx, sql, args...)
}

func (sp *savepoint) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.t.Query(ctx, sql, args...)
}

func (sp *savepoint) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if sp.closed {
		return errRow{pgx.ErrTxClosed}
	}
	return sp.t.QueryRow(ctx, sql, args...)
}

func (sp *savepoint) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.t.Prepare(ctx, name, sql)
}

func (sp *savepoint) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if sp.closed {
		return 0, pgx.ErrTxClosed
	}
	return sp.t.CopyFrom(ctx, table, columns, src)
}

func (sp *savepoint) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if sp.closed {
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	return sp.t.SendBatch(ctx, b)
}

func (sp *savepoint) LargeObjects() pgx.LargeObjects { return sp.t.LargeObjects() }

func (sp *savepoint) Conn() *pgx.Conn { return sp.t.Conn() }
