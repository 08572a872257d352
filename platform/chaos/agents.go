package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/loadkit"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/sim/pspsim/simcontrol"
)

// Status ranks: a checkout only moves forward, except that a payment in
// progress may fail back to ready_for_complete.
var rank = map[string]int{bcp.StatusIncomplete: 1, bcp.StatusRequiresEscalation: 1, bcp.StatusReadyForComplete: 2, bcp.StatusCompleteInProgress: 3, bcp.StatusCompleted: 4, bcp.StatusCanceled: 4}

// seen is what the agents were told about one checkout (success answers
// only): what must be durable afterwards.
type seen struct {
	merchant int
	status   string // the most advanced status any success answer showed
	orderID  string // from a completed answer
	paid     string // a Pix attempt the buyer paid at the PSP, the amount charged
	canceled bool   // a success answer said canceled
	race     string // the race it was put through, if any (for diagnosis)
}

// ledger records every success answer the agents saw.
type ledger struct {
	mu        sync.Mutex
	checkouts map[string]*seen
	// twoOrders lists checkouts for which answers named two different
	// orders (a completion executed twice, say across a failover).
	twoOrders []string
}

func (l *ledger) saw(merchant int, c *loadkit.CheckoutView) {
	if c == nil || c.ID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.checkouts[c.ID]
	if s == nil {
		s = &seen{merchant: merchant}
		l.checkouts[c.ID] = s
	}
	if rank[c.Status] > rank[s.status] {
		s.status = c.Status
	}
	if c.Status == bcp.StatusCompleted && c.Order != nil && c.Order.ID != "" {
		if s.orderID != "" && s.orderID != c.Order.ID {
			l.twoOrders = append(l.twoOrders, c.ID+" (orders "+s.orderID+" and "+c.Order.ID+")")
		}
		s.orderID = c.Order.ID
	}
	if c.Status == bcp.StatusCanceled {
		s.canceled = true
	}
}

func (l *ledger) raced(checkoutID, kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.checkouts[checkoutID]; s != nil {
		s.race = kind
	}
}

func (l *ledger) paidPix(checkoutID, attemptID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.checkouts[checkoutID]; s != nil {
		s.paid = attemptID
	}
}

// counters are the agents' figures.
type counters struct {
	purchases, completedCard, completedPix, abandoned atomic.Int64
	calls, callErrors, retries                        atomic.Int64
	// Pix paid at the simulator by the buyers: the amount charged, or
	// (wrongShare) another amount, which the platform must refund.
	pixPaid, pixWrong atomic.Int64
	mu                sync.Mutex
	errs              map[string]int
	races             map[string]int // racing workloads run, by kind
	wire              map[string]int // failed answers by wire form (wireOf)
	// retryTook: how long each same-key retry of a completion took to be
	// answered; retryInFlight: how many were answered request_in_flight.
	retryTook     []time.Duration
	retryInFlight int
}

func (c *counters) wireErr(w string) {
	c.mu.Lock()
	c.wire[w]++
	c.mu.Unlock()
}

// wires is a copy of the wire counts.
func (c *counters) wires() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.wire)
}

// wireOf is how a failed answer looked on the wire: HTTP status, JSON-RPC
// code and data code, and for a 503 or 429 whether it said when to come
// back ("" for a success or a business outcome, which are HTTP 200 results).
func wireOf(resp *agentclient.Response, err error) string {
	if err != nil || resp == nil {
		return "no answer"
	}
	if resp.Status == http.StatusOK && resp.Error == nil {
		return ""
	}
	w := "HTTP " + strconv.Itoa(resp.Status)
	if resp.Error != nil {
		w += " " + strconv.Itoa(resp.Error.Code)
		if c := resp.Error.DataCode(); c != "" {
			w += " " + c
		}
	}
	if resp.Status == http.StatusServiceUnavailable || resp.Status == http.StatusTooManyRequests ||
		(resp.Error != nil && resp.Error.DataCode() == "request_in_flight") {
		if resp.Header.Get("Retry-After") == "" {
			w += " without Retry-After"
		} else {
			w += " with Retry-After"
		}
	}
	return w
}

// badWire: what an agent must never see, faults or not — an internal
// error (-32603, HTTP 500), a gateway error, or a 503 that does not say
// when to retry. Unavailability is -32000 / 503 with Retry-After.
func badWire(w string) bool {
	return strings.Contains(w, " "+strconv.Itoa(apperr.RPCInternal)) || strings.HasPrefix(w, "HTTP 500") || strings.HasPrefix(w, "HTTP 502") ||
		strings.HasPrefix(w, "HTTP 504") || strings.Contains(w, "without Retry-After")
}

func (c *counters) race(kind string) {
	c.mu.Lock()
	c.races[kind]++
	c.mu.Unlock()
}

func (c *counters) err(code string) {
	c.mu.Lock()
	c.errs[code]++
	c.mu.Unlock()
}

// stuckCall is a complete_checkout whose outcome the agent never learnt
// (no answer, or request_in_flight: a first try cut short by a kill or
// PostgreSQL going away still holds the key). The drain retries it with
// the same key; the platform must execute or replay it.
type stuckCall struct {
	merchant int
	tool     string
	args     map[string]any
	resolved string // the retry's outcome once it is no longer in flight
	last     string // the last retry's answer code
}

type agents struct {
	stuckMu sync.Mutex
	stuck   []*stuckCall
	// clients[merchant][edge]: each call goes to the next edge in turn,
	// as through a load balancer without affinity, so one purchase's calls
	// and a retry after a failure reach different edge processes.
	clients [][]*agentclient.Client
	next    atomic.Uint64
	ms      []*loadkit.Merchant
	ops     *platform.Clients
	// sim is the PSP simulator, where buyers pay; wrongShare of their
	// payments are of another amount than charged.
	sim        *simulator
	wrongShare float64
	led        *ledger
	cnt        *counters
	pixRate    float64
	// raceShare of the purchases race their completion against a cancel,
	// the buyer's Pix payment, the expiry or another completion (race);
	// su (the checker's superuser pool) moves a checkout's expiry.
	raceShare float64
	su        *pgxpool.Pool
	// timer times the calls over the load (the HA run's failovers check
	// how long those during each took).
	timer callTimer
}

// callTimer records how long each call took while it is on.
type callTimer struct {
	mu    sync.Mutex
	on    bool
	calls []timedCall
}

// timedCall is one call: the tool and how it was answered ("ok", or
// wireOf's form), when it was sent and how long its answer took.
type timedCall struct {
	what  string
	start time.Time
	took  time.Duration
}

func (t *callTimer) record(tool string, resp *agentclient.Response, err error, start time.Time) {
	took := time.Since(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on {
		t.calls = append(t.calls, timedCall{what: tool + ": " + cmp.Or(wireOf(resp, err), "ok"), start: start, took: took})
	}
}

// begin starts recording afresh; end stops and returns the calls.
func (t *callTimer) begin() {
	t.mu.Lock()
	t.on, t.calls = true, nil
	t.mu.Unlock()
}

func (t *callTimer) end() []timedCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	return t.calls
}

func newAgents(publicAddrs []string, profile string, ms []*loadkit.Merchant, ops *platform.Clients, sim *simulator, cfg Config, su *pgxpool.Pool) *agents {
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	a := &agents{ms: ms, ops: ops, sim: sim, wrongShare: cfg.WrongAmount, pixRate: cfg.PixShare, raceShare: cfg.RaceShare, su: su, led: &ledger{checkouts: map[string]*seen{}},
		cnt: &counters{errs: map[string]int{}, races: map[string]int{}, wire: map[string]int{}}}
	for _, m := range ms {
		t := &agentclient.Transport{Base: tr, ProfileURL: profile, Host: m.Host, APIKey: m.APIKey}
		var cs []*agentclient.Client
		for _, addr := range publicAddrs {
			cs = append(cs, &agentclient.Client{Endpoint: "http://" + addr + "/bcp/mcp", Transport: t, Timeout: 10 * time.Second})
		}
		a.clients = append(a.clients, cs)
	}
	return a
}

// client is merchant mi's client on the next edge.
func (a *agents) client(mi int) *agentclient.Client {
	cs := a.clients[mi]
	return cs[int(a.next.Add(1)%uint64(len(cs)))]
}

// transient failures are retried with the same arguments (the same
// idempotency key for complete_checkout): the platform being down, a
// 5xx, -32000 (service unavailable), a timeout.
func transient(code string) bool {
	switch {
	case code == "transport", code == "cancelled", strings.HasPrefix(code, "http_5"), code == "rpc_"+strconv.Itoa(apperr.RPCProtocol),
		code == "unavailable", code == "internal", code == "service_unavailable", code == "timeout", code == "concurrent_update":
		return true
	}
	return false
}

// call runs one tool, retrying transient failures for up to 30 s. Success
// answers go into the ledger.
func (a *agents) call(ctx context.Context, mi int, tool string, args map[string]any) (*loadkit.CheckoutView, string) {
	deadline := time.Now().Add(30 * time.Second)
	backoff := 100 * time.Millisecond
	for try := 0; ; try++ {
		a.cnt.calls.Add(1)
		start := time.Now()
		resp, err := a.client(mi).CallTool(ctx, tool, args)
		a.timer.record(tool, resp, err, start)
		c, code := loadkit.Decode(ctx, resp, err)
		if try > 0 && tool == "complete_checkout" {
			a.cnt.sameKey(time.Since(start), code)
		}
		if code == "" {
			a.led.saw(mi, c)
			return c, ""
		}
		if ctx.Err() != nil {
			return nil, "stopped"
		}
		if w := wireOf(resp, err); w != "" {
			a.cnt.wireErr(w)
		}
		a.cnt.callErrors.Add(1)
		a.cnt.err(tool + ":" + code)
		// request_in_flight: the first request with the key is still
		// running, or its process died and the platform is settling it;
		// the outcome comes to a retry with the same key (after
		// Retry-After), as the README tells agents.
		inFlight := code == "request_in_flight"
		if !(transient(code) || inFlight) || time.Now().After(deadline) {
			return c, code
		}
		a.cnt.retries.Add(1)
		wait := backoff
		if inFlight {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil, "stopped"
		case <-time.After(wait):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// sameKey records how long a retry of a completion with its key took to
// be answered (the platform must answer within a second: the outcome, or
// request_in_flight with Retry-After).
func (c *counters) sameKey(took time.Duration, code string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retryTook = append(c.retryTook, took)
	if code == "request_in_flight" {
		c.retryInFlight++
	}
}

// run drives whole purchases until ctx ends.
func (a *agents) run(ctx context.Context, n int, seed uint64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
			for ctx.Err() == nil {
				a.purchase(ctx, rng)
			}
		}()
	}
	return &wg
}

func (a *agents) purchase(ctx context.Context, rng *rand.Rand) {
	a.cnt.purchases.Add(1)
	mi := rng.IntN(len(a.ms))
	m := a.ms[mi]
	email := fmt.Sprintf("agente%d@example.com", rng.IntN(1000))
	abandon := func() { a.cnt.abandoned.Add(1) }
	c, code := a.call(ctx, mi, "create_checkout", loadkit.CreateArgs(email))
	if code != "" || len(c.LineItems) != 1 {
		abandon()
		return
	}
	if c, code = a.call(ctx, mi, "update_checkout", loadkit.AddressArgs(c.ID, c.LineItems[0].ID, email)); code != "" {
		abandon()
		return
	}
	args, ok := loadkit.OptionArgs(c, m.PacRate, email, true)
	if !ok {
		abandon()
		return
	}
	if c, code = a.call(ctx, mi, "update_checkout", args); code != "" || c.Status != bcp.StatusReadyForComplete {
		abandon()
		return
	}
	id := c.ID
	pix := rng.Float64() < a.pixRate
	if rng.Float64() < a.raceShare {
		a.race(ctx, rng, mi, id, pix)
		return
	}
	// A declined or failed payment is tried again with a new key (and a
	// new single-use card token), as an agent would.
	for try := 0; try < 3 && ctx.Err() == nil; try++ {
		inst := loadkit.CardInstrument(fmt.Sprintf("tok_chaos_%016x_4242", rng.Uint64()))
		if pix {
			inst = loadkit.PixInstrument(m.Pix)
		}
		args := loadkit.CompleteArgs(id, agentclient.NewIdempotencyKey(), inst)
		c, code = a.call(ctx, mi, "complete_checkout", args)
		// No answer, or request_in_flight (a first try cut short holds the
		// key): the outcome is unknown. The drain retries it with the same
		// key, as an agent would, and it must resolve.
		if c == nil || strings.Contains(code, "request_in_flight") {
			a.stuckMu.Lock()
			a.stuck = append(a.stuck, &stuckCall{merchant: mi, tool: "complete_checkout", args: args})
			a.stuckMu.Unlock()
		}
		if c == nil {
			abandon()
			return
		}
		if c.Status == bcp.StatusCompleteInProgress {
			c.Status = a.follow(ctx, rng, mi, id, c)
		}
		switch c.Status {
		case bcp.StatusCompleted:
			a.done(pix)
			return
		case bcp.StatusReadyForComplete:
			// Declined, or a Pix of the wrong amount (refunded): again.
		default:
			abandon()
			return
		}
	}
	abandon()
}

func (a *agents) done(pix bool) {
	if pix {
		a.cnt.completedPix.Add(1)
	} else {
		a.cnt.completedCard.Add(1)
	}
}

// follow sees a payment in progress through: a Pix is paid at the PSP
// simulator (the buyer, at its bank), then the agent polls get_checkout
// until the checkout completes or the payment fails back to
// ready_for_complete (a wrong amount), or 20 s pass (the platform's jobs
// finish it later, which the final checks verify: "" then). It returns
// the status the checkout ended in.
func (a *agents) follow(ctx context.Context, rng *rand.Rand, mi int, id string, c *loadkit.CheckoutView) string {
	if att := c.PixAttemptID(); att != "" {
		if paid, _ := a.payPix(ctx, rng, id, att, 20*time.Second); !paid {
			return ""
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(200 * time.Millisecond):
		}
		g, code := a.call(ctx, mi, "get_checkout", map[string]any{"id": id})
		if code != "" {
			continue
		}
		if g.Status != bcp.StatusCompleteInProgress {
			return g.Status
		}
	}
	return ""
}

// payQuery is what a buyer needs to pay an attempt's Pix at the
// simulator: its txid and amount, and the simulator account (client id)
// of its handler.
const payQuery = `SELECT a.txid, a.amount, sa.client_id FROM payments.attempts a
	  JOIN payments.sandbox_accounts sa ON sa.tenant_id = a.tenant_id AND sa.handler_id = a.handler_id
	 WHERE a.id = $1 AND a.txid IS NOT NULL`

// errNotPayable: the attempt has no Pix charge at the simulator.
var errNotPayable = errors.New("no Pix charge at the simulator for this attempt")

// payPix is the buyer paying a Pix attempt at the PSP simulator's control
// API, as at its bank: the amount charged or, for wrongShare of the
// payments, one real less (the platform must refund it in full and fail
// the attempt). It retries while the simulator or PostgreSQL is
// unavailable, for up to within. It reports whether the payment was made
// and whether it was of the amount charged (then the ledger records it:
// that checkout must complete).
func (a *agents) payPix(ctx context.Context, rng *rand.Rand, checkoutID, attemptID string, within time.Duration) (paid, right bool) {
	wrong := rng.Float64() < a.wrongShare
	deadline := time.Now().Add(within)
	for {
		err := a.payOnce(ctx, attemptID, wrong)
		if err == nil {
			if wrong {
				a.cnt.pixWrong.Add(1)
				return true, false
			}
			a.cnt.pixPaid.Add(1)
			a.led.paidPix(checkoutID, attemptID)
			return true, true
		}
		if ctx.Err() != nil {
			return false, false
		}
		var e *simcontrol.Error
		switch {
		case errors.As(err, &e):
			a.cnt.err("psp_pay:http_" + strconv.Itoa(e.Status))
		case errors.Is(err, errNotPayable):
			a.cnt.err("psp_pay:no_charge")
		default:
			a.cnt.err("psp_pay:unavailable")
		}
		if finalPayment(err) || errors.Is(err, errNotPayable) || time.Now().After(deadline) {
			return false, false
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// payOnce pays the attempt's charge once: its txid and amount, and the
// simulator account of its handler, come from the platform's database
// (what the buyer reads off the QR code).
func (a *agents) payOnce(ctx context.Context, attemptID string, wrong bool) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var txid, clientID string
	var amount int64
	err := a.su.QueryRow(cctx, payQuery, attemptID).Scan(&txid, &amount, &clientID)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotPayable
	}
	if err != nil {
		return err
	}
	valor := ""
	if wrong {
		other := amount - 100
		if other <= 0 {
			other = amount + 100
		}
		if valor, err = pix.FormatValor(other); err != nil {
			return err
		}
	}
	return a.sim.pay(cctx, clientID, txid, valor)
}

// retryStuck retries, once each, the stuck requests not yet resolved, and
// returns those still unresolved (checkout, key and last answer).
func (a *agents) retryStuck(ctx context.Context) (total int, open []string) {
	a.stuckMu.Lock()
	stuck := slices.Clone(a.stuck)
	a.stuckMu.Unlock()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range stuck {
		mu.Lock()
		done := s.resolved != ""
		mu.Unlock()
		if done {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
			defer cancel()
			resp, err := a.client(s.merchant).CallTool(cctx, s.tool, s.args)
			c, code := loadkit.Decode(cctx, resp, err)
			if code == "" {
				a.led.saw(s.merchant, c)
			}
			mu.Lock()
			s.last = code
			if !strings.Contains(code, "request_in_flight") && code != "transport" && code != "cancelled" {
				s.resolved = "ok"
				if code != "" {
					s.resolved = code
				}
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, s := range stuck {
		if s.resolved == "" {
			meta, _ := s.args["meta"].(map[string]any)
			key, _ := meta["idempotency-key"].(string)
			open = append(open, fmt.Sprintf("%v (key %s: %s)", s.args["id"], key, s.last))
		}
	}
	sort.Strings(open)
	return len(stuck), open
}

// race completes a ready checkout while something else acts on it, as a
// careless agent (or the clock) would. Whatever wins, the invariants must
// hold: completed with one order and one kept payment, or canceled with
// no order and no money kept.
func (a *agents) race(ctx context.Context, rng *rand.Rand, mi int, id string, pix bool) {
	m := a.ms[mi]
	inst := loadkit.CardInstrument(fmt.Sprintf("tok_race_%016x_4242", rng.Uint64()))
	if pix {
		inst = loadkit.PixInstrument(m.Pix)
	}
	complete := func() *loadkit.CheckoutView {
		args := loadkit.CompleteArgs(id, agentclient.NewIdempotencyKey(), inst)
		c, code := a.call(ctx, mi, "complete_checkout", args)
		if c == nil || strings.Contains(code, "request_in_flight") {
			a.stuckMu.Lock()
			a.stuck = append(a.stuck, &stuckCall{merchant: mi, tool: "complete_checkout", args: args})
			a.stuckMu.Unlock()
		}
		return c
	}
	cancel := func() {
		a.call(ctx, mi, "cancel_checkout", map[string]any{"id": id, "meta": map[string]any{"idempotency-key": agentclient.NewIdempotencyKey()}})
	}
	payPix := func(c *loadkit.CheckoutView) {
		if c == nil || c.PixAttemptID() == "" {
			return
		}
		a.payPix(ctx, rng, id, c.PixAttemptID(), 5*time.Second)
	}
	both := func(f, g func()) {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); f() }()
		go func() { defer wg.Done(); g() }()
		wg.Wait()
	}
	kinds := []string{"cancel vs complete", "duplicate completes, different keys", "expiry vs complete"}
	if pix {
		kinds = append(kinds, "cancel vs the Pix payment", "cancel after the Pix payment")
	}
	kind := kinds[rng.IntN(len(kinds))]
	a.cnt.race(kind + map[bool]string{true: " (Pix)", false: " (card)"}[pix])
	a.led.raced(id, kind)
	var got *loadkit.CheckoutView
	switch kind {
	case "cancel vs complete":
		both(func() { got = complete() }, cancel)
	case "duplicate completes, different keys":
		var second *loadkit.CheckoutView
		both(func() { got = complete() }, func() { second = complete() })
		if got == nil || got.PixAttemptID() == "" {
			got = second
		}
	case "expiry vs complete":
		// Expiring within a few milliseconds: the expiry (a read, the
		// sweep) and the claim race for the session's row.
		if _, err := a.su.Exec(ctx, `UPDATE checkout.sessions SET expires_at = now() + interval '5 milliseconds' WHERE tenant_id = $1 AND id = $2`, m.TenantID, id); err != nil {
			return
		}
		both(func() { got = complete() }, func() {
			time.Sleep(5 * time.Millisecond)
			a.call(ctx, mi, "get_checkout", map[string]any{"id": id})
		})
	case "cancel vs the Pix payment":
		got = complete()
		both(func() { payPix(got) }, cancel)
		got = nil // paid or not, the race is over
	case "cancel after the Pix payment":
		got = complete()
		payPix(got)
		cancel()
		got = nil
	}
	// A Pix left waiting is paid, as a buyer would, so the run ends with
	// no completion in flight.
	if got != nil && got.Status == bcp.StatusCompleteInProgress {
		payPix(got)
	}
}
