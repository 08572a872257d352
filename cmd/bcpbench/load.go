package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/platform/loadkit"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// recorder collects int-nanosecond latencies per operation and errors by
// code. Percentiles come from the sorted samples (exact; a few hundred
// thousand samples per phase at most).
type recorder struct {
	mu   sync.Mutex
	lat  map[string][]int64
	errs map[string]int
	done atomic.Int64 // whole operations that succeeded
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]int64{}, errs: map[string]int{}}
}

func (r *recorder) observe(op string, d time.Duration) {
	r.mu.Lock()
	r.lat[op] = append(r.lat[op], int64(d))
	r.mu.Unlock()
}

func (r *recorder) error(code string) {
	r.mu.Lock()
	r.errs[code]++
	r.mu.Unlock()
}

// OpStats are one operation's figures in a phase.
type OpStats struct {
	Count      int     `json:"count"`
	Throughput float64 `json:"throughput_per_s"`
	P50        int64   `json:"p50_ns"`
	P95        int64   `json:"p95_ns"`
	P99        int64   `json:"p99_ns"`
	Max        int64   `json:"max_ns"`
}

func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func (r *recorder) stats(elapsed time.Duration) map[string]OpStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]OpStats{}
	for op, l := range r.lat {
		s := slices.Clone(l)
		slices.Sort(s)
		out[op] = OpStats{Count: len(s), Throughput: float64(len(s)) / elapsed.Seconds(),
			P50: percentile(s, .50), P95: percentile(s, .95), P99: percentile(s, .99), Max: s[len(s)-1]}
	}
	return out
}

// callError is a failed step, with the code it is counted under.
type callError struct{ code string }

func (e *callError) Error() string { return e.code }

// agents calls tools at the merchants as one agent identity.
type agents struct {
	endpoint string
	base     http.RoundTripper
	clients  []*agentclient.Client // one per merchant
	rec      *recorder
	// The REST flow's (--protocol rest, rest.go): where it goes, and one
	// HTTP client per merchant (one in all for a peer).
	rest restTarget
	http []*http.Client
}

func newAgents(endpoint string, e *env, signed bool, base http.RoundTripper) *agents {
	a := &agents{endpoint: endpoint, base: base}
	for _, m := range e.merchants {
		t := &agentclient.Transport{Base: base, ProfileURL: e.profile, Host: m.Host}
		if signed {
			t.Key = e.key
		} else {
			t.APIKey = m.APIKey
		}
		a.clients = append(a.clients, &agentclient.Client{Endpoint: endpoint, Transport: t, Timeout: 30 * time.Second})
	}
	return a
}

// call runs one tool, records its latency under the tool's name and maps
// every failure to a code.
func (a *agents) call(ctx context.Context, merchant int, tool string, args map[string]any, op string) (*loadkit.CheckoutView, error) {
	if op == "" {
		op = tool
	}
	start := time.Now()
	resp, err := a.clients[merchant].CallTool(ctx, tool, args)
	d := time.Since(start)
	view, code := loadkit.Decode(ctx, resp, err)
	if code != "" {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the phase ended mid-call: not an error of the platform
		}
		a.rec.error(tool + ":" + code)
		if debug && resp != nil {
			logf("%s: %s: %s", tool, code, resp.Body)
		}
		return nil, &callError{code}
	}
	a.rec.observe(op, d)
	return view, nil
}

// workload is what a closed- or open-loop driver runs repeatedly.
type workload func(ctx context.Context, rng *rand.Rand) error

// purchase runs create → update (shipping address) → update (option and
// discount) → complete, with a card token or (share pix) Pix paid through
// the simulated PSP and polled until completed. Delegated tokens are
// single use, so each purchase has its own (…4242: approved).
func (b *bench) purchase(ctx context.Context, rng *rand.Rand) error {
	if b.cfg.protocol == "rest" {
		return b.restPurchase(ctx, rng)
	}
	a := b.platformAgents
	mi := rng.IntN(len(b.env.merchants))
	m := b.env.merchants[mi]
	start := time.Now()
	email := "bench@example.com"
	create := loadkit.CreateArgs(email)
	if b.cfg.updates == 1 {
		create = loadkit.CreateShippedArgs(email)
	}
	c, err := a.call(ctx, mi, "create_checkout", create, "")
	if err != nil {
		return err
	}
	if len(c.LineItems) != 1 {
		return b.unexpected("create_checkout", "no_line_item")
	}
	if b.cfg.updates != 1 {
		c, err = a.call(ctx, mi, "update_checkout", loadkit.AddressArgs(c.ID, c.LineItems[0].ID, email), "update_checkout")
		if err != nil {
			return err
		}
	}
	args, ok := loadkit.OptionArgs(c, m.PacRate, email, b.cfg.discount)
	if !ok {
		return b.unexpected("update_checkout", "no_shipping_options")
	}
	c, err = a.call(ctx, mi, "update_checkout", args, "update_checkout")
	if err != nil {
		return err
	}
	if c.Status != bcp.StatusReadyForComplete {
		return b.unexpected("update_checkout", "not_ready:"+c.Status)
	}
	id := c.ID
	pix := rng.Float64() < b.cfg.pixShare
	instrument := loadkit.CardInstrument(fmt.Sprintf("tok_bench_%016x_4242", rng.Uint64()))
	if pix {
		instrument = loadkit.PixInstrument(m.Pix)
	}
	c, err = a.call(ctx, mi, "complete_checkout", loadkit.CompleteArgs(id, agentclient.NewIdempotencyKey(), instrument), "")
	if err != nil {
		return err
	}
	if !pix {
		if c.Status != bcp.StatusCompleted {
			if debug {
				logf("card complete: %s %+v", c.Status, c.Messages)
			}
			return b.unexpected("complete_checkout", "card_not_completed:"+c.Status)
		}
		a.rec.observe("purchase_card", time.Since(start))
		a.rec.done.Add(1)
		return nil
	}
	if c.Status != bcp.StatusCompleteInProgress || len(c.Payment.Instruments) != 1 {
		return b.unexpected("complete_checkout", "pix_not_in_progress:"+c.Status)
	}
	attemptID := c.PixAttemptID()
	if attemptID == "" {
		return b.unexpected("complete_checkout", "pix_no_attempt")
	}
	// The buyer pays at the PSP simulator, which confirms and sends its
	// webhook to the edge's webhook listener.
	t0 := time.Now()
	asSimulator(ctx, func() {
		_, err = b.ops.Payments.SimulatePixPayment(tenancy.With(ctx, m.TenantID), connect.NewRequest(&paymentsv1.SimulatePixPaymentRequest{AttemptId: attemptID}))
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.rec.error("psp_simulate_pay:" + connect.CodeOf(err).String())
		return err
	}
	a.rec.observe("psp_simulate_pay", time.Since(t0))
	// The agent polls get_checkout until the webhook has completed it.
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.cfg.pixPoll):
		}
		c, err = a.call(ctx, mi, "get_checkout", map[string]any{"id": id}, "")
		if err != nil {
			return err
		}
		if c.Status == bcp.StatusCompleted {
			a.rec.observe("pix_settle", time.Since(t0))
			a.rec.observe("purchase_pix", time.Since(start))
			a.rec.done.Add(1)
			return nil
		}
		if i > int(10*time.Second/b.cfg.pixPoll) {
			return b.unexpected("get_checkout", "pix_not_settled:"+c.Status)
		}
	}
}

func (b *bench) unexpected(tool, what string) error {
	b.platformAgents.rec.error(tool + ":" + what)
	return &callError{what}
}

// createOnly is the create_checkout workload compared with the no-op.
func (b *bench) createOnly(ctx context.Context, rng *rand.Rand) error {
	if b.cfg.protocol == "rest" {
		return b.restCreateOnly(ctx, rng)
	}
	return b.oneCall(ctx, rng, b.platformAgents, "create_checkout")
}

// noop calls the baseline's no-op tool with create_checkout's arguments.
func (b *bench) noop(ctx context.Context, rng *rand.Rand) error {
	return b.oneCall(ctx, rng, b.noopAgents, "noop")
}

// noopDurable calls the baseline's noop_durable tool: the no-op plus one
// durable insert.
func (b *bench) noopDurable(ctx context.Context, rng *rand.Rand) error {
	return b.oneCall(ctx, rng, b.noopAgents, "noop_durable")
}

// oneCall is one call of tool with create_checkout's arguments at a random
// merchant, counted as an operation when it succeeds.
func (b *bench) oneCall(ctx context.Context, rng *rand.Rand, a *agents, tool string) error {
	mi := rng.IntN(len(b.env.merchants))
	_, err := a.call(ctx, mi, tool, loadkit.CreateArgs("bench@example.com"), "")
	if err == nil {
		a.rec.done.Add(1)
	}
	return err
}

// closedLoop runs w with n workers for d, each starting its next
// operation when the previous one ends.
func closedLoop(ctx context.Context, n int, d time.Duration, w workload) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agentLabels(ctx)
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			for ctx.Err() == nil {
				_ = w(ctx, rng)
			}
		}()
	}
	wg.Wait()
	return min(time.Since(start), d)
}

// openLoop starts operations at rate per second for d, whatever the
// answers' latency (Poisson arrivals; each operation in its own goroutine,
// at most maxInFlight at once — arrivals beyond that are counted as
// "dropped:overload"). Latencies are measured from the actual send, and
// queueing in the platform shows in them.
func openLoop(ctx context.Context, rate float64, d time.Duration, maxInFlight int, rec *recorder, w workload) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	rng := rand.New(rand.NewPCG(1, uint64(start.UnixNano())))
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	next := start
	for i := uint64(0); ; i++ {
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		if wait := time.Until(next); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		default:
			rec.error("dropped:overload")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			agentLabels(ctx)
			_ = w(ctx, rand.New(rand.NewPCG(i, uint64(start.UnixNano()))))
		}()
	}
	wg.Wait()
	return min(time.Since(start), d)
}

var debug = os.Getenv("BCPBENCH_DEBUG") != ""

func fmtMs(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e6) }

// agentLabels marks the calling goroutine, and the goroutines it starts
// (an HTTP client's connection loops, the MCP client's), as the simulated
// agents' in CPU profiles: the agents share the process with the platform,
// and go tool pprof -tagfocus=side=agents (or -tagignore) tells them apart.
func agentLabels(ctx context.Context) {
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("side", "agents")))
}

// asSimulator runs fn, an agent's in-process call that plays the buyer at
// the PSP (SimulatePixPayment: the buyer's bank is the outside world),
// labelled side=pspsim like the simulator's own goroutines, and then
// labels the goroutine as an agent's again.
func asSimulator(ctx context.Context, fn func()) {
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("side", "pspsim")))
	defer agentLabels(ctx)
	fn()
}
