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

	"github.com/bcpdev/bcp/internal/loadkit"
)

// check is one invariant's outcome.
type check struct {
	name       string
	checked    int      // rows or records examined
	violations []string // examples (all of them counted)
}

func (c check) ok() bool { return len(c.violations) == 0 }

// invariants are read-only queries across the services' schemas, run as
// the superuser (row-level security does not apply to it). Each returns
// the ids that break the invariant.
var invariants = []struct{ name, count, query string }{
	{"completed checkout has exactly one order",
		`SELECT count(*) FROM checkout.sessions WHERE status = 'completed'`,
		`SELECT s.id || ' (orders: ' || (SELECT count(*) FROM orders.orders o WHERE o.tenant_id = s.tenant_id AND o.checkout_id = s.id) || ')'
		   FROM checkout.sessions s
		  WHERE s.status = 'completed'
		    AND (s.order_id IS NULL
		         OR (SELECT count(*) FROM orders.orders o WHERE o.tenant_id = s.tenant_id AND o.checkout_id = s.id AND o.id = s.order_id) <> 1
		         OR (SELECT count(*) FROM orders.orders o WHERE o.tenant_id = s.tenant_id AND o.checkout_id = s.id) <> 1)`},
	{"every order's checkout is completed",
		`SELECT count(*) FROM orders.orders`,
		`SELECT o.id || ' (checkout ' || o.checkout_id || ': ' || coalesce(s.status, 'missing') || ')'
		   FROM orders.orders o LEFT JOIN checkout.sessions s ON s.tenant_id = o.tenant_id AND s.id = o.checkout_id
		  WHERE s.status IS DISTINCT FROM 'completed' OR s.order_id IS DISTINCT FROM o.id`},
	{"no checkout with two successful payment attempts",
		`SELECT count(DISTINCT (tenant_id, checkout_id)) FROM payments.attempts`,
		`SELECT checkout_id || ' (' || count(*) || ' attempts kept money)'
		   FROM payments.attempts WHERE status IN ('succeeded', 'partially_refunded')
		  GROUP BY tenant_id, checkout_id HAVING count(*) > 1`},
	{"no checkout charged twice at the card processor",
		`SELECT count(*) FROM payments.sim_card_charges WHERE status = 'approved'`,
		`SELECT a.checkout_id || ' (' || count(*) || ' approved charges not refunded)'
		   FROM payments.sim_card_charges c JOIN payments.attempts a ON a.tenant_id = c.tenant_id AND a.id = c.idempotency_key
		  WHERE c.status = 'approved' AND c.refunded < c.amount
		  GROUP BY a.tenant_id, a.checkout_id HAVING count(*) > 1`},
	{"no checkout paid twice by Pix",
		`SELECT count(*) FROM payments.sim_pix`,
		`SELECT a.checkout_id || ' (' || count(*) || ' Pix kept)'
		   FROM payments.sim_pix p JOIN payments.attempts a ON a.tenant_id = p.tenant_id AND a.txid = p.txid
		  WHERE NOT EXISTS (SELECT 1 FROM payments.sim_pix_refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id AND r.status = 'DEVOLVIDO')
		  GROUP BY a.tenant_id, a.checkout_id HAVING count(*) > 1`},
	{"every approved card charge has an order or is refunded",
		`SELECT count(*) FROM payments.sim_card_charges WHERE status = 'approved'`,
		`SELECT c.id || ' (attempt ' || c.idempotency_key || ', refunded ' || c.refunded || ' of ' || c.amount || ')'
		   FROM payments.sim_card_charges c
		  WHERE c.status = 'approved' AND c.refunded < c.amount
		    AND NOT EXISTS (SELECT 1 FROM orders.orders o WHERE o.tenant_id = c.tenant_id AND o.payment_attempt_id = c.idempotency_key)`},
	{"every Pix received has an order or is refunded",
		`SELECT count(*) FROM payments.sim_pix`,
		`SELECT p.e2e_id || ' (txid ' || p.txid || ')'
		   FROM payments.sim_pix p
		  WHERE NOT EXISTS (SELECT 1 FROM payments.sim_pix_refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id AND r.status = 'DEVOLVIDO')
		    AND NOT EXISTS (SELECT 1 FROM payments.attempts a JOIN orders.orders o ON o.tenant_id = a.tenant_id AND o.payment_attempt_id = a.id
		                     WHERE a.tenant_id = p.tenant_id AND a.txid = p.txid)`},
	{"every order webhook delivered",
		`SELECT count(*) FROM orders.webhook_deliveries`,
		`SELECT o.id || ' (' || coalesce((SELECT string_agg(d.attempts || ' tries, last ' || coalesce(d.last_status::text, '-') || ' ' || left(d.last_error, 60), '; ')
		                                  FROM orders.webhook_deliveries d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id AND d.delivered_at IS NULL), 'no delivery queued') || ')'
		   FROM orders.orders o
		  WHERE o.webhook_url <> ''
		    AND (EXISTS (SELECT 1 FROM orders.webhook_deliveries d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id AND d.delivered_at IS NULL)
		         OR NOT EXISTS (SELECT 1 FROM orders.webhook_deliveries d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id))`},
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
	var out []check
	for _, inv := range invariants {
		var n int
		if err := pool.QueryRow(ctx, inv.count).Scan(&n); err != nil {
			return nil, fmt.Errorf("%s: %w", inv.name, err)
		}
		bad, err := runQuery(ctx, pool, inv.query)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", inv.name, err)
		}
		out = append(out, check{name: inv.name, checked: n, violations: bad})
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
		keptMoney     bool // an attempt of it succeeded
	}
	rows, err := pool.Query(ctx, `SELECT s.id, s.status, coalesce(s.order_id, ''),
		  EXISTS (SELECT 1 FROM payments.attempts a WHERE a.tenant_id = s.tenant_id AND a.checkout_id = s.id AND a.status IN ('succeeded', 'refunded', 'partially_refunded'))
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
		case rank[r.status] < rank[s.status] && !(s.status == "complete_in_progress" && r.status == "ready_for_complete" && !r.keptMoney):
			c.violations = append(c.violations, id+" (answered "+s.status+", now "+r.status+")")
		case s.orderID != "" && (r.order != s.orderID || !orders[s.orderID]):
			c.violations = append(c.violations, id+" (answered order "+s.orderID+", now "+r.status+" with order "+r.order+")")
		case s.paid != "" && r.status != "completed":
			c.violations = append(c.violations, id+" (Pix "+s.paid+" paid, checkout "+r.status+")")
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
			// says nothing about durability: try again, three times at most.
			var v *loadkit.CheckoutView
			var code string
			for try := 0; try < 3; try++ {
				resp, err := a.clients[it.s.merchant].CallTool(cctx, "get_checkout", map[string]any{"id": it.id})
				if v, code = loadkit.Decode(cctx, resp, err); !transient(code) || cctx.Err() != nil {
					break
				}
				time.Sleep(time.Second)
			}
			bad := ""
			switch {
			case code != "":
				bad = it.id + " (get_checkout: " + code + ")"
			case v.Status != "completed" || v.Order == nil || v.Order.ID != it.s.orderID:
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
		"payments_refund", "payments_simpsp_webhook", "order_webhook", "order_refund_settle"}
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
