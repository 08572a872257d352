package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/internal/payattempt"
)

// Recovery after a kill (issue 32): what the killed bcpd left half-done —
// completions claimed and not settled, card charges and Pix charges being
// created, approved card charges no settled checkout knows — is
// snapshotted at the kill, and from the restart on polled until all of it
// is consistent: each checkout completed with exactly one order, or out
// of complete_in_progress with no stock held, or a Pix shown to its buyer
// and waiting to be paid; each such attempt decided (or its Pix charge
// created); each such charge the succeeded attempt of a completed
// checkout, or refunded. The time from the restart to then is the kill's
// recovery time (the sweeps' clocks, a minute and more, play no part: the
// platform's recovery does it). The next fault cuts a measurement short:
// what was still open is then in that fault's snapshot.

// leftWork is what a kill left, by id.
type leftWork struct {
	sessions []string // tenant/checkout
	attempts []string
	charges  []string
}

func (w leftWork) size() int { return len(w.sessions) + len(w.attempts) + len(w.charges) }

func (w leftWork) String() string {
	return fmt.Sprintf("%d completions, %d attempts, %d approved charges", len(w.sessions), len(w.attempts), len(w.charges))
}

// A checkout whose completion is in progress and not merely waiting for
// its buyer's Pix (shown to the buyer: the attempt and the session carry
// the QR code) — or that ended without an order and still holds stock, or
// completed without exactly one order.
const sessionOpen = `(s.status = 'complete_in_progress'
	    AND NOT coalesce(a.txid IS NOT NULL AND a.status = 'pending' AND a.display <> '{}'::jsonb
	                     AND s.state->'payment'->'instruments'->0->'display'->'pix' IS NOT NULL, false))
	 OR (s.status NOT IN ('completed', 'complete_in_progress') AND EXISTS (SELECT 1 FROM catalog.stock_reservations r
	       WHERE r.tenant_id = s.tenant_id AND r.checkout_id = s.id AND r.state = 'reserved'))
	 OR (s.status = 'completed' AND (SELECT count(*) FROM orders.orders o WHERE o.tenant_id = s.tenant_id AND o.checkout_id = s.id) <> 1)`

const sessionsFrom = `checkout.sessions s LEFT JOIN payments.attempts a ON a.tenant_id = s.tenant_id AND a.id = s.payment_attempt_id`

// An attempt whose start is not finished: a card charge not decided, a
// Pix charge not created.
const attemptOpen = `a.status = 'pending' AND (a.txid IS NULL OR a.display = '{}'::jsonb)`

// An approved card charge no completed checkout kept, and not refunded.
var chargeOpen = `c.status = 'succeeded' AND c.amount_refunded < c.amount
	AND NOT coalesce(` + payattempt.MovedMoneySQL("a.status") + ` AND a.charge_id = c.id
	                 AND s.status = 'completed' AND s.payment_attempt_id = a.id, false)`

const chargesFrom = `pspsim.card_intents c LEFT JOIN payments.attempts a ON a.id = c.idempotency_key
	LEFT JOIN checkout.sessions s ON s.tenant_id = a.tenant_id AND s.id = a.checkout_id`

// snapshotLeft lists the work left open now (right after a kill).
func snapshotLeft(ctx context.Context, su *pgxpool.Pool) (leftWork, error) {
	var w leftWork
	var err error
	if w.sessions, err = runQuery(ctx, su, `SELECT s.tenant_id::text || '/' || s.id FROM `+sessionsFrom+` WHERE `+sessionOpen); err != nil {
		return w, err
	}
	if w.attempts, err = runQuery(ctx, su, `SELECT a.id FROM payments.attempts a WHERE `+attemptOpen); err != nil {
		return w, err
	}
	w.charges, err = runQuery(ctx, su, `SELECT c.id FROM `+chargesFrom+` WHERE `+chargeOpen)
	return w, err
}

// stillOpen is what of w is not consistent yet (examples, with why).
func (w leftWork) stillOpen(ctx context.Context, su *pgxpool.Pool) ([]string, error) {
	var open []string
	for _, q := range []struct {
		ids   []string
		query string
	}{
		{w.sessions, `SELECT 'checkout ' || s.id || ' ' || s.status || coalesce(' (attempt ' || a.status || ')', '') FROM ` + sessionsFrom +
			` WHERE s.tenant_id::text || '/' || s.id = ANY($1) AND (` + sessionOpen + `)`},
		{w.attempts, `SELECT 'attempt ' || a.id || ' ' || a.status FROM payments.attempts a WHERE a.id = ANY($1) AND ` + attemptOpen},
		{w.charges, `SELECT 'charge ' || c.id || ' (attempt ' || coalesce(a.status, 'missing') || ', checkout ' || coalesce(s.status, 'missing') || ')' FROM ` +
			chargesFrom + ` WHERE c.id = ANY($1) AND ` + chargeOpen},
	} {
		if len(q.ids) == 0 {
			continue
		}
		rows, err := su.Query(ctx, q.query, q.ids)
		if err != nil {
			return nil, err
		}
		bad, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		open = append(open, bad...)
	}
	return open, nil
}

// killRecovery is one kill's measurement.
type killRecovery struct {
	n      int
	left   leftWork
	took   time.Duration // restart → consistent
	cut    bool          // the next fault came first
	never  bool          // not consistent within recoveryLimit
	open   []string      // what was still open when cut or given up
	done   chan struct{}
	cancel context.CancelFunc
}

// recoveryLimit bounds one measurement (a recovery this slow fails the
// run anyway).
const recoveryLimit = time.Minute

// measureRecovery polls, from restarted on, until left is consistent; it
// runs beside the load until then, the limit, or cut (the next fault).
func measureRecovery(ctx context.Context, su *pgxpool.Pool, n int, left leftWork, restarted time.Time) *killRecovery {
	ctx, cancel := context.WithCancel(ctx)
	r := &killRecovery{n: n, left: left, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.done)
		for {
			open, err := left.stillOpen(ctx, su)
			if err == nil && len(open) == 0 {
				r.took = time.Since(restarted)
				logf("kill %d: what it left (%s) consistent %s after the restart", n, left, ms2(r.took))
				return
			}
			if err == nil {
				r.open = open
			}
			if time.Since(restarted) > recoveryLimit {
				r.never = true
				logf("kill %d: what it left (%s) still not consistent %s after the restart: %s", n, left, recoveryLimit, examples(r.open, 5))
				return
			}
			select {
			case <-ctx.Done():
				r.cut = true
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return r
}

// stop cuts the measurement short if it is still running (the next fault,
// or the end of the load) and waits for it.
func (r *killRecovery) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// killRecoveries gathers the kills' measurements.
type killRecoveries struct {
	mu   sync.Mutex
	all  []*killRecovery
	last *killRecovery
}

// cut cuts the running measurement short (a new fault, the end of the
// load) and waits for it.
func (rs *killRecoveries) cut() {
	rs.mu.Lock()
	last := rs.last
	rs.mu.Unlock()
	last.stop()
}

func (rs *killRecoveries) add(r *killRecovery) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.all = append(rs.all, r)
	rs.last = r
}

// summary waits for the measurements still running, and returns the
// report's line and the check (every kill's under bound).
func (rs *killRecoveries) summary(bound time.Duration) (string, check) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.all {
		<-r.done
	}
	c := check{name: fmt.Sprintf("what a kill left is consistent within %s of the restart", bound)}
	var took []time.Duration
	cut := 0
	for _, r := range rs.all {
		switch {
		case r.cut:
			cut++
		case r.never:
			c.checked++
			c.violations = append(c.violations, fmt.Sprintf("kill %d: not consistent after %s: %s", r.n, recoveryLimit, examples(r.open, 5)))
		default:
			c.checked++
			took = append(took, r.took)
			if r.took >= bound {
				c.violations = append(c.violations, fmt.Sprintf("kill %d: %s (left %s)", r.n, ms2(r.took), r.left))
			}
		}
	}
	slices.Sort(took)
	var parts []string
	for _, r := range rs.all {
		switch {
		case r.cut:
			parts = append(parts, fmt.Sprintf("#%d cut short by the next fault", r.n))
		case r.never:
			parts = append(parts, fmt.Sprintf("#%d never", r.n))
		default:
			parts = append(parts, fmt.Sprintf("#%d %s (%s)", r.n, ms2(r.took), r.left))
		}
	}
	line := "no kill"
	if len(took) > 0 {
		line = fmt.Sprintf("p50 %s, max %s over %d kills (%d cut short by the next fault); %s",
			ms2(pct(took, .5)), ms2(pct(took, 1)), len(took), cut, strings.Join(parts, "; "))
	}
	return line, c
}
