package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Quiet periods of a LISTEN connection (variables for the tests): after
// listenQuiet without a notification the connection is pinged, and a ping
// unanswered for listenPingTimeout ends the session. River's notifier
// does the same (a ping every 5 s).
var (
	listenQuiet       = 5 * time.Second
	listenPingTimeout = 5 * time.Second
)

// ListenerName is the application_name of Listen's connection on channel.
func ListenerName(channel string) string { return "bcp listen " + channel }

// Listen runs one LISTEN session on channel: it takes a connection from
// pool for good (it ends in LISTEN state), calls listening once LISTEN is
// in place, then notify with each payload, until ctx ends (nil) or the
// connection fails (the error). Callers loop on it, starting over with
// whatever they may have missed (notifications sent while no session
// listened are lost).
//
// A failover breaks the session: the old primary's backends exit with it,
// and the next session's connection, from a pool on a multi-host URL with
// target_session_attrs=read-write, is on the new primary. A connection
// that goes silent instead (the primary's host gone without a reset, a
// network partition) would leave WaitForNotification blocked for good and
// its listeners deaf; the ping after a quiet period ends the session
// within listenQuiet + listenPingTimeout.
func Listen(ctx context.Context, pool *pgxpool.Pool, channel string, listening func(), notify func(payload string)) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	// Named in pg_stat_activity, so an operator sees who listens (the
	// connection never goes back to the pool: the setting leaks nowhere).
	if _, err := pc.Exec(ctx, "SELECT set_config('application_name', $1, false)", ListenerName(channel)); err != nil {
		return err
	}
	if _, err := pc.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	listening()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenQuiet)
		n, err := pc.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			notify(n.Payload)
			continue
		case !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		// Quiet: a timed-out wait leaves the connection usable (pgconn
		// closes it on any other error), so ask it whether it is alive.
		pctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
		err = pc.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
