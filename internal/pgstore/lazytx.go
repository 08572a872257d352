package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// inTx runs fn in a transaction on one pooled connection whose
// set_config(key, value, true) holds for the transaction only. BEGIN and
// the setting are not sent on their own: they travel with fn's first
// statement in one pipelined batch (pgx.Batch.BeginTx), one round trip
// less per transaction. pgx.BeginFunc commits, or rolls back on an error
// or a panic, exactly as for any pgx transaction.
func inTx(ctx context.Context, pool *pgxpool.Pool, key, value string, fn func(pgx.Tx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return connLost(err)
	}
	// A connection left inside a transaction (a failed rollback) is
	// destroyed by the pool, not reused.
	defer conn.Release()
	return connLost(pgx.BeginFunc(ctx, lazyBegin{&lazyTx{conn: conn, key: key, value: value}}, fn))
}

// lazyBegin hands pgx.BeginFunc the not yet begun transaction.
type lazyBegin struct{ t *lazyTx }

func (b lazyBegin) Begin(context.Context) (pgx.Tx, error) { return b.t, nil }

// lazyTx is a pgx.Tx whose BEGIN and scope setting go out with its first
// statement. From then on it is the pgx transaction that batch began; a
// transaction that ran no statement never reaches the server.
type lazyTx struct {
	conn       *pgxpool.Conn
	key, value string
	tx         pgx.Tx // once begun
	done       bool   // committed or rolled back without ever beginning
}

// first sends BEGIN, the setting and the first statement in one batch and
// reads the first two results; the statement's are left to the caller,
// who must close the batch once it has read them.
func (t *lazyTx) first(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if t.done {
		return nil, pgx.ErrTxClosed
	}
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(`SELECT set_config($1, $2, true)`, t.key, t.value)
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
	if t.tx != nil {
		return nil
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
func (t *lazyTx) Commit(ctx context.Context) error { return t.end(ctx, pgx.Tx.Commit) }

func (t *lazyTx) Rollback(ctx context.Context) error { return t.end(ctx, pgx.Tx.Rollback) }

// end commits or rolls back the begun transaction; one never begun just
// ends (once: after that, like pgx's, it is closed).
func (t *lazyTx) end(ctx context.Context, f func(pgx.Tx, context.Context) error) error {
	if t.tx != nil {
		return f(t.tx, ctx)
	}
	if t.done {
		return pgx.ErrTxClosed
	}
	t.done = true
	return nil
}

func (t *lazyTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.tx.Begin(ctx)
}

func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.tx.CopyFrom(ctx, table, columns, src)
}

func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.begin(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return t.tx.SendBatch(ctx, b)
}

func (t *lazyTx) LargeObjects() pgx.LargeObjects {
	if t.begin(context.Background()) != nil {
		return pgx.LargeObjects{}
	}
	return t.tx.LargeObjects()
}

func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Conn().Prepare(ctx, name, sql)
}

func (t *lazyTx) Conn() *pgx.Conn { return t.conn.Conn() }
