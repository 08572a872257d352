package chaos

import (
	"context"
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

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/loadkit"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

// Status ranks: a checkout only moves forward, except that a payment in
// progress may fail back to ready_for_complete.
var rank = map[string]int{"incomplete": 1, "requires_escalation": 1, "ready_for_complete": 2, "complete_in_progress": 3, "completed": 4, "canceled": 4}

// seen is what the agents were told about one checkout (success answers
// only): what must be durable afterwards.
type seen struct {
	merchant int
	status   string // the most advanced status any success answer showed
	orderID  string // from a completed answer
	paid     string // a Pix attempt the PSP confirmed paid
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
	if c.Status == "completed" && c.Order != nil && c.Order.ID != "" {
		if s.orderID != "" && s.orderID != c.Order.ID {
			l.twoOrders = append(l.twoOrders, c.ID+" (orders "+s.orderID+" and "+c.Order.ID+")")
		}
		s.orderID = c.Order.ID
	}
	if c.Status == "canceled" {
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
	mu                                                sync.Mutex
	errs                                              map[string]int
	races                                             map[string]int // racing workloads run, by kind
	wire                                              map[string]int // failed answers by wire form (wireOf)
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
	if resp.Status == http.StatusServiceUnavailable || resp.Status == http.StatusTooManyRequests {
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
	return strings.Contains(w, " -32603") || strings.HasPrefix(w, "HTTP 500") || strings.HasPrefix(w, "HTTP 502") ||
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
	led     *ledger
	cnt     *counters
	pixRate float64
	// raceShare of the purchases race their completion against a cancel,
	// the buyer's Pix payment, the expiry or another completion (race);
	// su (the checker's superuser pool) moves a checkout's expiry.
	raceShare float64
	su        *pgxpool.Pool
}

func newAgents(publicAddrs []string, profile string, ms []*loadkit.Merchant, ops *platform.Clients, pixShare, raceShare float64, su *pgxpool.Pool) *agents {
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	a := &agents{ms: ms, ops: ops, pixRate: pixShare, raceShare: raceShare, su: su, led: &ledger{checkouts: map[string]*seen{}},
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
	case code == "transport", code == "cancelled", strings.HasPrefix(code, "http_5"), code == "rpc_-32000",
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
	for {
		a.cnt.calls.Add(1)
		resp, err := a.client(mi).CallTool(ctx, tool, args)
		c, code := loadkit.Decode(ctx, resp, err)
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
		if !transient(code) || time.Now().After(deadline) {
			return c, code
		}
		a.cnt.retries.Add(1)
		select {
		case <-ctx.Done():
			return nil, "stopped"
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
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
	if c, code = a.call(ctx, mi, "update_checkout", args); code != "" || c.Status != "ready_for_complete" {
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
		switch {
		case c.Status == "completed":
			a.done(pix)
			return
		case c.Status == "complete_in_progress":
			if a.follow(ctx, mi, id, c) {
				a.done(pix)
			} else {
				abandon()
			}
			return
		case c.Status != "ready_for_complete":
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

// follow sees a payment in progress through: a Pix is paid at the
// simulated PSP (the buyer), then the agent polls get_checkout until the
// checkout completes (or 20 s pass: the platform's jobs finish it later,
// which the final checks verify).
func (a *agents) follow(ctx context.Context, mi int, id string, c *loadkit.CheckoutView) bool {
	if att := c.PixAttemptID(); att != "" {
		deadline := time.Now().Add(20 * time.Second)
		tctx := tenancy.With(ctx, a.ms[mi].TenantID)
		for {
			_, err := a.ops.Payments.SimulatePixPayment(tctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: att}))
			if err == nil {
				a.led.paidPix(id, att)
				break
			}
			if ctx.Err() != nil {
				return false
			}
			a.cnt.err("psp_pay:" + connect.CodeOf(err).String())
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
		g, code := a.call(ctx, mi, "get_checkout", map[string]any{"id": id})
		if code != "" {
			continue
		}
		switch g.Status {
		case "completed":
			return true
		case "complete_in_progress":
		default:
			return false // the payment failed; this purchase ends here
		}
	}
	return false
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
		tctx := tenancy.With(ctx, m.TenantID)
		if _, err := a.ops.Payments.SimulatePixPayment(tctx, connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: c.PixAttemptID()})); err == nil {
			a.led.paidPix(id, c.PixAttemptID())
		}
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
	if got != nil && got.Status == "complete_in_progress" {
		payPix(got)
	}
}
