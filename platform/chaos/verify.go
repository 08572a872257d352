package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/payattempt"
	"github.com/bcpdev/bcp/platform/loadkit"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// check is one invariant's outcome.
type check struct {
	name       string
	checked    int      // rows or records examined
	violations []string // examples (all of them counted)
}

func (c check) ok() bool { return len(c.violations) == 0 }

// The invariants are db/checks/invariants.sql (db.Invariants): read-only
// queries across the services' schemas, run as the superuser (row-level
// security does not apply to it), each listing what breaks it. The same
// file is what an operator runs with psql (README).

// stockBase is each variant's stock plus what its reservations hold,
// taken when the run starts: no fault may change it (stock is never lost,
// never double-released).
type stockBase map[string]int64

const stockQuery = `SELECT v.tenant_id::text || '/' || v.id,
	  v.stock + coalesce((SELECT sum(r.quantity) FROM catalog.stock_reservations r
	                       WHERE r.tenant_id = v.tenant_id AND r.variant_id = v.id AND r.state = 'reserved'), 0)
	FROM catalog.variants v`

func stockSnapshot(ctx context.Context, pool *pgxpool.Pool) (stockBase, error) {
	rows, err := pool.Query(ctx, stockQuery)
	if err != nil {
		return nil, err
	}
	out := stockBase{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

// stockCheck compares stock + reserved with the snapshot.
func stockCheck(ctx context.Context, pool *pgxpool.Pool, base stockBase) (check, error) {
	now, err := stockSnapshot(ctx, pool)
	if err != nil {
		return check{}, err
	}
	c := check{name: "stock + reserved is what it was at the start (never lost, never released twice)", checked: len(base)}
	for k, n := range base {
		if now[k] != n {
			c.violations = append(c.violations, fmt.Sprintf("%s (%d, was %d)", k, now[k], n))
		}
	}
	sort.Strings(c.violations)
	return c, nil
}

func runQuery(ctx context.Context, pool *pgxpool.Pool, q string) ([]string, error) {
	rows, err := pool.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// sqlChecks runs the invariants plus the receiver's view of deliveries.
func sqlChecks(ctx context.Context, pool *pgxpool.Pool, rcv *receiver) ([]check, error) {
	invs, err := db.Invariants()
	if err != nil {
		return nil, err
	}
	var out []check
	for _, inv := range invs {
		var n int
		if err := pool.QueryRow(ctx, inv.Count).Scan(&n); err != nil {
			return nil, fmt.Errorf("%s: %w", inv.Name, err)
		}
		rows, err := pool.Query(ctx, inv.Query)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", inv.Name, err)
		}
		bad, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var name, v string
			err := r.Scan(&name, &v)
			return v, err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", inv.Name, err)
		}
		out = append(out, check{name: inv.Name, checked: n, violations: bad})
	}
	// The receiver's side: each order with a webhook URL was accepted at
	// least once by the agent's endpoint.
	ids, err := runQuery(ctx, pool, `SELECT id FROM orders.orders WHERE webhook_url <> ''`)
	if err != nil {
		return nil, err
	}
	c := check{name: "receiver got every order's webhook", checked: len(ids)}
	for _, id := range ids {
		if !rcv.hasOrder(id) {
			c.violations = append(c.violations, id)
		}
	}
	return append(out, c), nil
}

// durability compares the ledger (success answers the agents saw) with
// the database: each checkout exists, never went back (except a payment in
// progress that failed), a completed one kept its order, and a Pix the PSP
// confirmed paid ended in a completed checkout.
func durability(ctx context.Context, pool *pgxpool.Pool, led *ledger) (check, error) {
	type row struct {
		status, order string
		keptMoney     bool // an attempt of it moved money (payattempt.MovedMoney)
	}
	rows, err := pool.Query(ctx, `SELECT s.id, s.status, coalesce(s.order_id, ''),
		  EXISTS (SELECT 1 FROM payments.attempts a WHERE a.tenant_id = s.tenant_id AND a.checkout_id = s.id AND `+payattempt.MovedMoneySQL("a.status")+`)
		FROM checkout.sessions s`)
	if err != nil {
		return check{}, err
	}
	db := map[string]row{}
	for rows.Next() {
		var id string
		var r row
		if err := rows.Scan(&id, &r.status, &r.order, &r.keptMoney); err != nil {
			return check{}, err
		}
		db[id] = r
	}
	if err := rows.Err(); err != nil {
		return check{}, err
	}
	orders := map[string]bool{}
	ids, err := runQuery(ctx, pool, `SELECT id FROM orders.orders`)
	if err != nil {
		return check{}, err
	}
	for _, id := range ids {
		orders[id] = true
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	c := check{name: "every success answer is durable", checked: len(led.checkouts)}
	for id, s := range led.checkouts {
		r, ok := db[id]
		switch {
		case !ok:
			c.violations = append(c.violations, id+" (answered "+s.status+", missing)")
		case rank[r.status] < rank[s.status] && !(s.status == bcp.StatusCompleteInProgress && r.status == bcp.StatusReadyForComplete && !r.keptMoney):
			c.violations = append(c.violations, id+" (answered "+s.status+", now "+r.status+")")
		case s.orderID != "" && (r.order != s.orderID || !orders[s.orderID]):
			c.violations = append(c.violations, id+" (answered order "+s.orderID+", now "+r.status+" with order "+r.order+")")
		case s.paid != "" && r.status != bcp.StatusCompleted:
			c.violations = append(c.violations, id+" (Pix "+s.paid+" paid, checkout "+r.status+"; "+pixStory(ctx, pool, id, s)+")")
		case s.canceled && r.status != bcp.StatusCanceled:
			c.violations = append(c.violations, id+" (answered canceled, now "+r.status+")")
		}
	}
	sort.Strings(c.violations)
	return c, nil
}

// apiDurability reads every checkout the agents saw completed back
// through MCP get_checkout: completed, with the same order.
func apiDurability(ctx context.Context, a *agents) check {
	a.led.mu.Lock()
	type item struct {
		id string
		s  seen
	}
	var todo []item
	for id, s := range a.led.checkouts {
		if s.orderID != "" {
			todo = append(todo, item{id, *s})
		}
	}
	a.led.mu.Unlock()
	c := check{name: "completed checkouts read back over MCP", checked: len(todo)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, it := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			// A transient failure (a slow answer on a loaded machine, a 503)
			// or the agent's rate limit (a thousand read-backs at once) says
			// nothing about durability: try again, five times at most.
			var v *loadkit.CheckoutView
			var code string
			for try := 0; try < 5; try++ {
				resp, err := a.client(it.s.merchant).CallTool(cctx, "get_checkout", map[string]any{"id": it.id})
				if v, code = loadkit.Decode(cctx, resp, err); !(transient(code) || strings.HasPrefix(code, "http_429")) || cctx.Err() != nil {
					break
				}
				time.Sleep(time.Second)
			}
			bad := ""
			switch {
			case code != "":
				bad = it.id + " (get_checkout: " + code + ")"
			case v.Status != bcp.StatusCompleted || v.Order == nil || v.Order.ID != it.s.orderID:
				got := ""
				if v.Order != nil {
					got = v.Order.ID
				}
				bad = it.id + " (get_checkout: " + v.Status + ", order " + got + ", want " + it.s.orderID + ")"
			}
			if bad != "" {
				mu.Lock()
				c.violations = append(c.violations, bad)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Strings(c.violations)
	return c
}

// pendingWork is informational: payment work still open at the end.
func pendingWork(ctx context.Context, pool *pgxpool.Pool) string {
	var inProgress, pending, jobs int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM checkout.sessions WHERE status = 'complete_in_progress'`).Scan(&inProgress)
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM payments.attempts WHERE status = 'pending'`).Scan(&pending)
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE state IN ('available', 'running', 'retryable') OR (state = 'scheduled' AND scheduled_at < now() + interval '5 minutes')`).Scan(&jobs)
	return fmt.Sprintf("%d checkouts complete_in_progress, %d payment attempts pending, %d jobs due within 5 min", inProgress, pending, jobs)
}

// jobsLeft lists, for a failed run's log, the platform's jobs that are not
// done (and those river gave up on) by kind and state, with the latest
// error: which recovery work did not finish in time. Expiries scheduled
// hours ahead are left out.
func jobsLeft(ctx context.Context, pool *pgxpool.Pool) string {
	rows, err := runQuery(ctx, pool, `SELECT kind || ' ' || state || ': ' || count(*) || ' (max attempt ' || max(attempt)
		    || ', oldest attempted ' || coalesce(to_char(min(attempted_at), 'HH24:MI:SS.MS'), '-')
		    || ', next ' || to_char(min(scheduled_at), 'HH24:MI:SS.MS')
		    || coalesce(', last error: ' || left((array_agg(errors[array_length(errors, 1)]->>'error' ORDER BY id DESC)
		                 FILTER (WHERE array_length(errors, 1) > 0))[1], 120), '') || ')'
		   FROM river.river_job WHERE state NOT IN ('completed', 'cancelled') AND NOT (state = 'scheduled' AND kind LIKE '%expire')
		  GROUP BY kind, state ORDER BY kind, state`)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(rows) == 0 {
		return "none"
	}
	return strings.Join(rows, "\n    ")
}

// warp fast-forwards the platform's durable recovery work, standing in
// for time passing: scheduled and retrying jobs that finish payments and
// deliver webhooks are made available now, and jobs that were running in a process we
// SIGKILLed (before lastKill; one bcpd runs at a time) are handed back
// as river's rescuer would after RescueStuckJobsAfter, completions and card
// attempts waiting for the sweeps are made due, and idempotency
// claims abandoned before the last fault (lastFault) are aged past their
// lease. Expiry jobs are left alone (they act on the clock, not on lost
// work).
func warp(ctx context.Context, pool *pgxpool.Pool, lastKill, lastFault time.Time) (int64, error) {
	kinds := []string{"checkout_settle", "payments_settle", "payments_card_resolve", "payments_pix_poll", "payments_pix_reconcile",
		"payments_refund", "order_webhook", "order_refund_settle"}
	// Made available directly, as river's scheduler would once their time
	// came: the scheduler runs only on the leader, every 5 s, and a
	// SIGKILLed leader's lease holds for 15 s, so after a late kill the
	// drain otherwise waited up to 20 s per round of retries for nothing
	// but river's own clocks (none of these jobs is unique, whose
	// conflicts the scheduler would resolve).
	tag, err := pool.Exec(ctx, `UPDATE river.river_job SET state = 'available', scheduled_at = least(scheduled_at, now())
		WHERE state IN ('scheduled', 'retryable') AND unique_key IS NULL AND kind = ANY($1)`, kinds)
	if err != nil {
		return 0, err
	}
	n := tag.RowsAffected()
	// Completions, payment attempts and Pix receipts the sweeps would
	// take up at settle_after / resolve_after / reconcile_after: due now.
	for _, q := range []string{
		`UPDATE checkout.sessions SET settle_after = now() WHERE status = 'complete_in_progress' AND settle_after > now()`,
		`UPDATE payments.attempts SET resolve_after = now() WHERE status = 'pending' AND resolve_after > now()`,
		`UPDATE payments.pix_receipts SET reconcile_after = now() WHERE status = 'received' AND reconcile_after > now()`,
		// The PSP simulator's webhook deliveries waiting for a retry
		// (backing off after the receiver was down) or held back
		// (delay_webhook): due now, as time passing would make them.
		`UPDATE pspsim.deliveries SET next_attempt_at = now() WHERE status = 'pending' AND next_attempt_at > now()`,
	} {
		tag, err = pool.Exec(ctx, q)
		if err != nil {
			return n, err
		}
		n += tag.RowsAffected()
	}
	if !lastKill.IsZero() {
		tag, err = pool.Exec(ctx, `UPDATE river.river_job SET state = 'available', scheduled_at = now()
			WHERE state = 'running' AND attempted_at < $1`, lastKill)
		if err != nil {
			return n, err
		}
		n += tag.RowsAffected()
	}
	// Idempotency claims from before the last fault are abandoned (their
	// request died with the process or lost the database): age them past
	// the lease so a retry may take them over.
	if !lastFault.IsZero() {
		tag, err = pool.Exec(ctx, `UPDATE checkout.idempotency_keys SET created_at = created_at - interval '1 hour'
			WHERE state = 'in_flight' AND created_at < $1 AND created_at > $1 - interval '1 hour'`, lastFault)
		if err != nil {
			return n, err
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

func examples(v []string, n int) string {
	if len(v) > n {
		return strings.Join(v[:n], "; ") + fmt.Sprintf("; … (%d more)", len(v)-n)
	}
	return strings.Join(v, "; ")
}

// pixStory says what became of a paid Pix whose checkout did not
// complete, so that a violation can be diagnosed from the report alone:
// the race it was in, the session's attempt, the paid attempt's status and
// failure, its receipts, alerts, and the PSP simulator's charge and its
// webhook deliveries.
func pixStory(ctx context.Context, pool *pgxpool.Pool, checkoutID string, s *seen) string {
	var story string
	err := pool.QueryRow(ctx, `SELECT concat_ws('; ',
		  'race ' || coalesce(nullif($3, ''), 'none'),
		  'session attempt ' || coalesce((SELECT payment_attempt_id FROM checkout.sessions WHERE id = $1), 'none'),
		  'attempt ' || a.status || coalesce(' ' || nullif(a.failure_code, ''), '') || ' created ' || to_char(a.created_at, 'HH24:MI:SS.MS') || ' updated ' || to_char(a.updated_at, 'HH24:MI:SS.MS'),
		  'receipts ' || coalesce((SELECT string_agg(r.status || ' at ' || to_char(r.horario, 'HH24:MI:SS.MS'), ', ') FROM payments.pix_receipts r WHERE r.tenant_id = a.tenant_id AND r.txid = a.txid), 'none'),
		  'alerts ' || coalesce((SELECT string_agg(al.kind, ', ') FROM payments.alerts al WHERE al.tenant_id = a.tenant_id AND al.attempt_id = a.id), 'none'),
		  'PSP charge ' || coalesce((SELECT ch.status FROM pspsim.charges ch WHERE ch.txid = a.txid), 'none'),
		  'PSP Pix ' || coalesce((SELECT string_agg(p.e2e_id || ' ' || p.valor, ', ') FROM pspsim.pix p WHERE p.txid = a.txid), 'none'),
		  'PSP webhooks ' || coalesce((SELECT string_agg(d.status || ' after ' || d.attempts || ' tries' || CASE WHEN d.delayed THEN ', delayed' ELSE '' END
		                                 || CASE WHEN d.duplicated THEN ', sent twice' ELSE '' END, '; ')
		                               FROM pspsim.deliveries d JOIN pspsim.pix p ON p.tenant_id = d.tenant_id AND p.e2e_id = ANY(d.e2e_ids) WHERE p.txid = a.txid), 'none'))
		FROM payments.attempts a WHERE a.id = $2`, checkoutID, s.paid, s.race).Scan(&story)
	if err != nil {
		return "no story: " + err.Error()
	}
	return story
}
