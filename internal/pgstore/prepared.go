package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The statements of Single, SingleGenericPlan, SingleUnsynced and Reads
// go out in one pgconn batch (Bind and Execute of the prepared set_config,
// Bind and Execute of the prepared statement, one Sync: one write, one
// implicit transaction), not through pgx.Batch: its pipeline mode spends
// more Go than the statement, queuing and describing each message
// (container/list elements, a result-format copy, a description map) and
// encoding set_config's one argument through the type map. What pgx.Batch
// did besides sending (prepare on first use, a statement cache per
// connection, forgetting a statement whose plan changed its result type)
// connStmts does here; the results are read with pgx's own rows.
//
// A tracer that sees batches (internal/tracing, the tests' recorders)
// sees each as it saw the pgx.Batch: its start with both statements, each
// statement's result, its end. A connection with a tracer that does not,
// or configured for another query mode than pgx's default (prepared
// statements, cached), keeps sending pgx batches.

// maxConnStmts bounds the statements prepared on one connection (pgx's
// own statement cache holds 512); a statement beyond it goes as a
// pgx.Batch (every sqlc statement of the platform fits, many times over).
const maxConnStmts = 512

const connStmtsKey = "bcp/pgstore.connStmts"

// connStmts is what the statements keep on their pooled connection (in
// its pgconn CustomData; only the connection's borrower touches it): the
// statements prepared on it, by SQL, and the buffer their arguments are
// encoded in.
type connStmts struct {
	bySQL  map[string]*pgconn.StatementDescription
	named  int      // statements named so far: pgstore_1, pgstore_2, …
	stale  []string // statements to deallocate before the next one is sent
	eqb    pgx.ExtendedQueryBuilder
	batch  bool            // the connection's statements go as pgx batches (query mode, tracer)
	tracer pgx.BatchTracer // the connection's tracer, if any
}

func stmtsOf(conn *pgxpool.Conn) *connStmts {
	data := conn.Conn().PgConn().CustomData()
	if c, ok := data[connStmtsKey].(*connStmts); ok {
		return c
	}
	cfg := conn.Conn().Config()
	c := &connStmts{
		bySQL: map[string]*pgconn.StatementDescription{},
		batch: cfg.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement || cfg.StatementCacheCapacity == 0,
	}
	if cfg.Tracer != nil {
		c.tracer, _ = cfg.Tracer.(pgx.BatchTracer)
		c.batch = c.batch || c.tracer == nil
	}
	data[connStmtsKey] = c
	return c
}

// prepared says whether sql goes out prepared by connStmts rather than in
// a pgx.Batch.
func (c *connStmts) prepared(sql string, args []any) bool {
	if c.batch {
		return false
	}
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryRewriter); ok { // pgx.NamedArgs and the like
			return false
		}
	}
	_, ok := c.bySQL[sql]
	return ok || len(c.bySQL) < maxConnStmts
}

// prepare returns sql's statement on the connection, preparing it (one
// round trip) on first use.
func (c *connStmts) prepare(ctx context.Context, pc *pgconn.PgConn, sql string) (*pgconn.StatementDescription, error) {
	if sd, ok := c.bySQL[sql]; ok {
		return sd, nil
	}
	c.named++
	name := "pgstore_" + strconv.Itoa(c.named)
	sd, err := pc.Prepare(ctx, name, sql, nil)
	if err != nil {
		var perr *pgconn.PrepareError
		if errors.As(err, &perr) && perr.ParseComplete {
			c.stale = append(c.stale, name) // parsed, then failed to describe
		}
		return nil, err
	}
	c.bySQL[sql] = sd
	return sd, nil
}

// deallocateStale deallocates the statements forgotten since the last
// one was sent (rare: a schema change).
func (c *connStmts) deallocateStale(ctx context.Context, pc *pgconn.PgConn) error {
	for len(c.stale) > 0 {
		if err := pc.Deallocate(ctx, c.stale[0]); err != nil {
			return err
		}
		c.stale = c.stale[1:]
	}
	return nil
}

// failed forgets what an error of sql's batch shows to be out of date.
// pgx's statement cache forgets a statement after any error and prepares
// it again (one more round trip after every failed statement); here only
// errors that can come of the statement's own definition do: its result
// or parameter types changed by a migration ("cached plan must not change
// result type": feature_not_supported; an operator that no longer fits:
// class 42), an internal error (XX, a concurrent schema change), and not
// a unique violation, a serialization failure or a read-only refusal.
// When the connection's prepared statements are gone
// (invalid_sql_statement_name: DEALLOCATE ALL, DISCARD ALL) all are
// forgotten.
func (c *connStmts) failed(sql string, err error) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return
	}
	switch pgErr.Code[:2] {
	case "0A", "42", "XX":
		if sd, ok := c.bySQL[sql]; ok {
			delete(c.bySQL, sql)
			c.stale = append(c.stale, sd.Name)
		}
	case "26":
		clear(c.bySQL)
	}
}

// sendPrepared sends set_config and the statement, both prepared, in one
// batch up to one Sync, and reads set_config's result; the statement's
// result is s.rr, the rest of the batch is read by end.
func (s *SingleQuerier) sendPrepared(ctx context.Context, sql string, args []any) error {
	c, pc := s.stmts, s.conn.Conn().PgConn()
	if err := c.deallocateStale(ctx, pc); err != nil {
		return err
	}
	s.sql = sql
	if c.tracer != nil {
		b := &pgx.Batch{}
		b.Queue(s.setup, string(s.tenantText[:]))
		b.Queue(sql, args...)
		ctx = c.tracer.TraceBatchStart(ctx, s.conn.Conn(), pgx.TraceBatchStartData{Batch: b})
		s.trace = &batchTrace{tracer: c.tracer, ctx: ctx, args: args}
	}
	setup, err := c.prepare(ctx, pc, s.setup)
	if err != nil {
		return s.traceEnd(err)
	}
	sd, err := c.prepare(ctx, pc, sql)
	if err != nil {
		return s.traceEnd(err)
	}
	if err := c.eqb.Build(s.conn.Conn().TypeMap(), sd, args); err != nil {
		return s.traceEnd(err)
	}
	s.batch = pgconn.Batch{}
	s.batch.ExecStatement(setup, s.tenantParam[:], nil, nil) // the tenant id in text, as pgx sent it
	s.batch.ExecStatement(sd, c.eqb.ParamValues, c.eqb.ParamFormats, c.eqb.ResultFormats)
	s.mrr = pc.ExecBatch(ctx, &s.batch)
	if s.trace != nil {
		s.trace.readAt = time.Now()
	}
	if !s.mrr.NextResult() {
		return s.endMissing()
	}
	tag, err := s.mrr.ResultReader().Close()
	if t := s.trace; t != nil {
		t.tracer.TraceBatchQuery(t.ctx, s.conn.Conn(), pgx.TraceBatchQueryData{
			SQL: s.setup, Args: []any{string(s.tenantText[:])}, CommandTag: tag, Err: err, ReadStartTime: t.readAt,
		})
		t.readAt = time.Now()
	}
	if err != nil {
		_ = s.end()
		return err
	}
	if !s.mrr.NextResult() { // the statement failed (or the connection)
		return s.endMissing()
	}
	s.rr = s.mrr.ResultReader()
	return nil
}

// end reads the rest of the statement's batch, up to its Sync (ending its
// implicit transaction: a deferred constraint's error shows here).
func (s *SingleQuerier) end() error {
	mrr := s.mrr
	if mrr == nil {
		return nil
	}
	s.mrr, s.rr = nil, nil
	err := mrr.Close()
	if err != nil {
		s.stmts.failed(s.sql, err)
	}
	s.traceStmt(pgconn.CommandTag{}, err) // a statement whose result never came
	_ = s.traceEnd(err)
	return err
}

// endMissing ends a batch whose next result did not come: its error.
func (s *SingleQuerier) endMissing() error {
	if err := s.end(); err != nil {
		return err
	}
	return errors.New("pgstore: a statement's batch ended without its result")
}

// batchTrace is what a tracer is shown of a statement sent prepared, as
// it was shown the pgx.Batch: its start (both statements), each
// statement's result, its end.
type batchTrace struct {
	tracer     pgx.BatchTracer
	ctx        context.Context // TraceBatchStart's
	args       []any
	readAt     time.Time
	stmtTraced bool
}

// traceStmt shows the tracer the statement's result (once).
func (s *SingleQuerier) traceStmt(tag pgconn.CommandTag, err error) {
	t := s.trace
	if t == nil || t.stmtTraced {
		return
	}
	t.stmtTraced = true
	t.tracer.TraceBatchQuery(t.ctx, s.conn.Conn(), pgx.TraceBatchQueryData{
		SQL: s.sql, Args: t.args, CommandTag: tag, Err: err, ReadStartTime: t.readAt,
	})
}

// traceEnd shows the tracer the end of the batch; it returns err.
func (s *SingleQuerier) traceEnd(err error) error {
	if t := s.trace; t != nil {
		s.trace = nil
		t.tracer.TraceBatchEnd(t.ctx, s.conn.Conn(), pgx.TraceBatchEndData{Err: err})
	}
	return err
}

// rows is the statement's result as pgx rows.
func (s *SingleQuerier) rows() pgx.Rows {
	return pgx.RowsFromResultReader(s.conn.Conn().TypeMap(), s.rr)
}

// scanRow is QueryRow's Scan of the statement's result: pgx's (connRow's
// and baseRows'), without building pgx rows for the one row: the first
// row into dest, ErrNoRows when there is none, the rest read and
// discarded.
func (s *SingleQuerier) scanRow(dest []any) error {
	rr := s.rr
	if rr == nil { // scanned already
		return pgx.ErrNoRows
	}
	m := s.conn.Conn().TypeMap()
	if len(dest) == 1 {
		if _, ok := dest[0].(pgx.RowScanner); ok {
			rows := pgx.RowsFromResultReader(m, rr)
			err := scanFirst(rows, dest)
			s.traceStmt(rows.CommandTag(), rows.Err())
			return err
		}
	}
	for _, d := range dest {
		if _, ok := d.(*pgtype.DriverBytes); ok {
			tag, err := rr.Close()
			s.traceStmt(tag, err)
			return errors.New("cannot scan into *pgtype.DriverBytes from QueryRow")
		}
	}
	if !rr.NextRow() {
		tag, err := rr.Close()
		s.traceStmt(tag, err)
		if err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	err := scanValues(m, rr.FieldDescriptions(), rr.Values(), dest)
	tag, cerr := rr.Close()
	if err == nil {
		err = cerr
	}
	s.traceStmt(tag, err)
	return err
}

// scanValues is baseRows.Scan of one row.
func scanValues(m *pgtype.Map, fields []pgconn.FieldDescription, values [][]byte, dest []any) error {
	if len(fields) != len(values) {
		return fmt.Errorf("number of field descriptions must equal number of values, got %d and %d", len(fields), len(values))
	}
	if len(fields) != len(dest) {
		return fmt.Errorf("number of field descriptions must equal number of destinations, got %d and %d", len(fields), len(dest))
	}
	for i, dst := range dest {
		if dst == nil {
			continue
		}
		if err := m.PlanScan(fields[i].DataTypeOID, fields[i].Format, dst).Scan(values[i], dst); err != nil {
			return pgx.ScanArgError{ColumnIndex: i, FieldName: fields[i].Name, Err: err}
		}
	}
	return nil
}

// scanFirst is pgx's QueryRow Scan on rows.
func scanFirst(rows pgx.Rows, dest []any) error {
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range dest {
		if _, ok := d.(*pgtype.DriverBytes); ok {
			rows.Close()
			return errors.New("cannot scan into *pgtype.DriverBytes from QueryRow")
		}
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	_ = rows.Scan(dest...)
	rows.Close()
	return rows.Err()
}

// uuidText writes u's text form (as uuid.UUID.String) into dst.
func uuidText(dst *[36]byte, u uuid.UUID) {
	hex.Encode(dst[0:8], u[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], u[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], u[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], u[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:36], u[10:16])
}
