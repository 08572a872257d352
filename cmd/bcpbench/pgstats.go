package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/pgserver"
)

// Statement counts come from pg_stat_statements in the private cluster:
// the number of COMMITs and ROLLBACKs, plus pgstore.Single's implicit
// transactions, per completed operation is the number of transactions it
// took, exactly (pool acquires also count pings and job polling;
// pg_stat_database is flushed lazily). Round trips are the statements
// less the set_config calls that travel with a BEGIN or a Single
// statement: on a VM where every round trip costs a wake-up of both
// processes, they are what to count.

// StmtStats are the statements executed during a phase, per completed
// operation.
type StmtStats struct {
	TransactionsPerOp float64 `json:"transactions_per_op"`
	StatementsPerOp   float64 `json:"statements_per_op"`
	RoundTripsPerOp   float64 `json:"round_trips_per_op"`
	// ScopesPerOp are the statements that set a transaction's tenant (or
	// registry/sweep scope): pipelined with BEGIN or with a Single or
	// Reads statement, they are among the statements but not among the
	// round trips.
	ScopesPerOp float64 `json:"scopes_per_op"`
	ExecMsPerOp float64 `json:"exec_ms_per_op"`
	// Of the write commits (DurableStats): the platform's unsynced ones
	// (rate-limit leases: pgstore.SingleUnsynced, no wait for the WAL
	// flush). The PSP simulator's statements are not among any of these
	// figures: its ledgers are on a cluster of its own (startSimulator).
	UnsyncedWritesPerOp float64    `json:"unsynced_writes_per_op"`
	Top                 []StmtLine `json:"top,omitempty"`
}

// StmtLine is one normalised statement.
type StmtLine struct {
	Query      string  `json:"query"`
	CallsPerOp float64 `json:"calls_per_op"`
	MeanMs     float64 `json:"mean_ms"`
	// MeanPlanMs is planning per call; 0 unless track_planning is on
	// (bcpbench scale --paired --cpuprofile turns it on).
	MeanPlanMs float64 `json:"mean_plan_ms,omitempty"`
	// WALBytes, Hit and Dirtied are per call: the WAL the statement
	// wrote, the shared buffers it read and those it dirtied
	// (machine-independent, unlike the ms).
	WALBytes float64 `json:"wal_bytes,omitempty"`
	Hit      float64 `json:"shared_blks_hit,omitempty"`
	Dirtied  float64 `json:"shared_blks_dirtied,omitempty"`
}

type stmtSnapshot map[string]stmtCount

type stmtCount struct {
	query   string
	calls   int64
	ms      float64
	planMs  float64
	walRecs int64
	wal     float64
	dirtied int64
	hit     int64
}

// enableStatements restarts the fresh cluster with pg_stat_statements
// loaded (it can only be loaded at server start).
func (e *env) enableStatements(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, e.pg.URL("postgres"))
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`)
	_ = conn.Close(ctx)
	if err != nil {
		return err
	}
	if err := e.pg.Stop(); err != nil {
		return err
	}
	e.pg, err = pgserver.Start(ctx, pgserver.Options{DataDir: e.pg.DataDir, NoFsync: noFsync})
	return err
}

// openStats connects as the superuser to the application database and
// creates the extension there.
func (e *env) openStats(ctx context.Context, dbname string) error {
	conn, err := pgx.Connect(ctx, e.pg.URL(dbname))
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		_ = conn.Close(ctx)
		return err
	}
	e.stats = conn
	return nil
}

func (e *env) statements(ctx context.Context) stmtSnapshot {
	if e.stats == nil {
		return nil
	}
	rows, err := e.stats.Query(ctx, `SELECT queryid::text, query, calls, total_exec_time, total_plan_time, wal_records, wal_bytes::float8, shared_blks_dirtied, shared_blks_hit + shared_blks_read FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		logf("pg_stat_statements: %v", err)
		return nil
	}
	defer rows.Close()
	s := stmtSnapshot{}
	for rows.Next() {
		var id string
		var c stmtCount
		if rows.Scan(&id, &c.query, &c.calls, &c.ms, &c.planMs, &c.walRecs, &c.wal, &c.dirtied, &c.hit) == nil {
			s[id] = c
		}
	}
	if err := rows.Err(); err != nil {
		logf("pg_stat_statements: %v", err)
		return nil
	}
	return s
}

// singleScope is pgstore.Single's set_config as pg_stat_statements
// normalises it: one per single-statement transaction (implicit, so it has
// no COMMIT of its own). InTenant's (constants, after BEGIN) normalises
// to "SELECT set_config($1, $2, $3)".
const singleScope = "SELECT set_config($2, $1, $3)"

// singleScopeGenericPlan is pgstore.SingleGenericPlan's, which also
// forces a generic plan for its statement (and SingleUnsynced's and
// pgstore.Reads', which set synchronous_commit or transaction_read_only
// with it: one per statement, each an implicit transaction).
const singleScopeGenericPlan = "SELECT set_config($2, $1, $3), set_config($4, $5, $6)"

// unsyncedLease starts the one statement the platform commits without
// waiting for the WAL flush (tenants.LeaseRateTokens).
const unsyncedLease = "-- name: LeaseRateTokens "

// stmtDelta is what ran between two snapshots, per operation; the top
// lines are the most frequent statements.
func stmtDelta(before, after stmtSnapshot, ops int64, top int) *StmtStats {
	if before == nil || after == nil || ops <= 0 {
		return nil
	}
	st := &StmtStats{}
	var lines []StmtLine
	n := float64(ops)
	for id, a := range after {
		b := before[id]
		calls := a.calls - b.calls
		if calls <= 0 || strings.Contains(a.query, "pg_stat_statements") {
			continue
		}
		ms := a.ms - b.ms
		q := strings.Join(strings.Fields(a.query), " ")
		single := q == singleScope || q == singleScopeGenericPlan
		if strings.EqualFold(q, "commit") || strings.EqualFold(q, "rollback") || single || q == floorInsert {
			st.TransactionsPerOp += float64(calls) / n
		}
		st.StatementsPerOp += float64(calls) / n
		if !single && q != "SELECT set_config($1, $2, $3)" {
			st.RoundTripsPerOp += float64(calls) / n
		} else {
			st.ScopesPerOp += float64(calls) / n
		}
		st.ExecMsPerOp += ms / n
		if a.walRecs > b.walRecs && strings.HasPrefix(q, unsyncedLease) {
			st.UnsyncedWritesPerOp += float64(calls) / n
		}
		lines = append(lines, StmtLine{Query: q, CallsPerOp: float64(calls) / n, MeanMs: ms / float64(calls),
			MeanPlanMs: (a.planMs - b.planMs) / float64(calls), WALBytes: (a.wal - b.wal) / float64(calls),
			Hit: float64(a.hit-b.hit) / float64(calls), Dirtied: float64(a.dirtied-b.dirtied) / float64(calls)})
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].CallsPerOp > lines[j].CallsPerOp })
	if len(lines) > top {
		lines = lines[:top]
	}
	st.Top = lines
	return st
}

func (s *StmtStats) String() string {
	return fmt.Sprintf("SQL: %.1f transactions/op, %.1f statements/op (%.1f scope settings, pipelined), %.1f round trips/op, %.2f ms executing/op",
		s.TransactionsPerOp, s.StatementsPerOp, s.ScopesPerOp, s.RoundTripsPerOp, s.ExecMsPerOp)
}

// trackPlanning makes pg_stat_statements time planning too (it costs a
// little on every statement, so only diagnosis turns it on).
func (e *env) trackPlanning(ctx context.Context) error {
	if e.stats == nil {
		return nil
	}
	if _, err := e.stats.Exec(ctx, `ALTER SYSTEM SET pg_stat_statements.track_planning = on`); err != nil {
		return err
	}
	_, err := e.stats.Exec(ctx, `SELECT pg_reload_conf()`)
	return err
}

// Autovacuum work finished during a phase. On two cores an autovacuum
// worker holds one of them while it runs, so a phase it lands in shows a
// longer tail that is not the platform's request path. Its first pass of
// the fresh database, about half a minute after PostgreSQL starts
// (autovacuum_naptime divided among the databases), vacuums and analyzes
// every table the earlier phases filled: docs/performance.md, round 10.

// autovacuumSince lists the tables whose last autovacuum or autoanalyze
// finished at or after since, as "VACUUM schema.table" and "ANALYZE
// schema.table" in the order they finished; nil with --target.
func (e *env) autovacuumSince(ctx context.Context, since time.Time) []string {
	conn, done, err := e.superuser(ctx)
	if err != nil || conn == nil {
		return nil
	}
	defer done()
	rows, err := conn.Query(ctx, `SELECT w.what || ' ' || t.schemaname || '.' || t.relname
		FROM pg_stat_all_tables t, LATERAL (VALUES ('VACUUM', t.last_autovacuum), ('ANALYZE', t.last_autoanalyze)) AS w (what, at)
		WHERE w.at >= $1 ORDER BY w.at`, since)
	if err != nil {
		logf("pg_stat_all_tables: %v", err)
		return nil
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		logf("pg_stat_all_tables: %v", err)
		return nil
	}
	return out
}

// superuser is a superuser connection to the application database: the
// statistics connection when there is one, else a new one that done
// closes; nil with --target (no superuser there).
func (e *env) superuser(ctx context.Context) (conn *pgx.Conn, done func(), err error) {
	if e.stats != nil {
		return e.stats, func() {}, nil
	}
	if e.pg == nil {
		return nil, nil, nil
	}
	conn, err = pgx.Connect(ctx, e.pg.URL(benchDB))
	if err != nil {
		logf("superuser connection: %v", err)
		return nil, nil, err
	}
	return conn, func() { _ = conn.Close(context.Background()) }, nil
}

// autovacuumSummary is one line for the report: how many tables were
// vacuumed and analyzed, and the first few.
func autovacuumSummary(done []string) string {
	var vacuums, analyzes int
	var names []string
	for _, d := range done {
		what, table, _ := strings.Cut(d, " ")
		if what == "VACUUM" {
			vacuums++
		} else {
			analyzes++
		}
		if !slices.Contains(names, table) {
			names = append(names, table)
		}
	}
	list := strings.Join(names, ", ")
	if len(names) > 4 {
		list = strings.Join(names[:4], ", ") + fmt.Sprintf(" and %d more", len(names)-4)
	}
	return fmt.Sprintf("autovacuum during the phase: %d vacuums, %d analyzes (%s)", vacuums, analyzes, list)
}

// TableWrites are a table's row writes during a phase, per operation:
// HOTPerOp of the UpdatesPerOp were heap-only (no index entries added).
// Backends report them lazily (at most a second late while busy), so a
// phase's last second may be missing: the ratio is what to read.
type TableWrites struct {
	Table        string  `json:"table"`
	InsertsPerOp float64 `json:"inserts_per_op"`
	UpdatesPerOp float64 `json:"updates_per_op"`
	HOTPerOp     float64 `json:"hot_per_op"`
}

func (t TableWrites) String() string {
	hot := 0.0
	if t.UpdatesPerOp > 0 {
		hot = 100 * t.HOTPerOp / t.UpdatesPerOp
	}
	return fmt.Sprintf("%-28s %5.2f inserts/op %5.2f updates/op, %3.0f%% HOT", t.Table, t.InsertsPerOp, t.UpdatesPerOp, hot)
}

type tableSnapshot map[string][3]int64

// tableWrites reads every user table's inserts, updates and HOT updates.
func (e *env) tableWrites(ctx context.Context) tableSnapshot {
	if e.stats == nil {
		return nil
	}
	rows, err := e.stats.Query(ctx, `SELECT schemaname || '.' || relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables`)
	if err != nil {
		logf("pg_stat_user_tables: %v", err)
		return nil
	}
	defer rows.Close()
	s := tableSnapshot{}
	for rows.Next() {
		var name string
		var c [3]int64
		if rows.Scan(&name, &c[0], &c[1], &c[2]) == nil {
			s[name] = c
		}
	}
	if rows.Err() != nil {
		return nil
	}
	return s
}

// tableDelta is the tables updated during a phase, most updates first.
func tableDelta(before, after tableSnapshot, ops int64) []TableWrites {
	if before == nil || after == nil || ops <= 0 {
		return nil
	}
	n := float64(ops)
	var out []TableWrites
	for name, a := range after {
		b := before[name]
		if a[1] == b[1] {
			continue
		}
		out = append(out, TableWrites{Table: name, InsertsPerOp: float64(a[0]-b[0]) / n,
			UpdatesPerOp: float64(a[1]-b[1]) / n, HOTPerOp: float64(a[2]-b[2]) / n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatesPerOp > out[j].UpdatesPerOp })
	return out
}
