package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// noFsync runs the bench's PostgreSQL without fsync and full-page writes
// (--no-fsync), the mode of the rounds before issue 23: its figures leave
// out what every durable success pays, so they are for comparison only.
var noFsync bool

// walMark is the cluster's WAL position and transaction counter at one
// moment: their differences over a phase are its WAL bytes and its write
// transactions (each a commit that waits for its WAL flush with fsync on;
// read-only transactions take no transaction id).
type walMark struct {
	lsn, xid int64
}

// DurableStats are a phase's WAL bytes and write commits per operation.
type DurableStats struct {
	WALBytesPerOp     float64 `json:"wal_bytes_per_op"`
	WriteCommitsPerOp float64 `json:"write_commits_per_op"`
	Fsync             bool    `json:"fsync"`
}

func (d *DurableStats) String() string {
	mode := "fsync on"
	if !d.Fsync {
		mode = "fsync OFF (--no-fsync: not durable, for comparison)"
	}
	return fmt.Sprintf("WAL: %.0f bytes/op, %.1f write commits/op (%s)", d.WALBytesPerOp, d.WriteCommitsPerOp, mode)
}

// walNow reads the mark on a connection of its own (nil without the
// bench's own PostgreSQL). Asking for a transaction id takes one: the
// difference of two marks counts that one too, which walDelta removes.
func (e *env) walNow(ctx context.Context) *walMark {
	if e.pg == nil {
		return nil
	}
	conn, err := pgx.Connect(ctx, e.pg.URL("postgres"))
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	var m walMark
	if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, pg_current_xact_id()::text::bigint`).Scan(&m.lsn, &m.xid); err != nil {
		return nil
	}
	return &m
}

func walDelta(before, after *walMark, ops int64) *DurableStats {
	if before == nil || after == nil || ops <= 0 {
		return nil
	}
	return &DurableStats{
		WALBytesPerOp:     float64(after.lsn-before.lsn) / float64(ops),
		WriteCommitsPerOp: float64(after.xid-before.xid-1) / float64(ops),
		Fsync:             !noFsync,
	}
}

// breakdown splits the write commits into the platform's durable ones and
// its unsynced ones (with the statement counts of the same phase; ""
// without them). They are all the platform's: the simulated outside
// world, the PSP simulator, keeps its ledgers on a cluster of its own
// (startSimulator).
func (d *DurableStats) breakdown(st *StmtStats) string {
	if st == nil || d.WriteCommitsPerOp == 0 {
		return ""
	}
	return fmt.Sprintf(": platform %.1f durable + %.1f unsynced (rate-limit leases)",
		d.WriteCommitsPerOp-st.UnsyncedWritesPerOp, st.UnsyncedWritesPerOp)
}
